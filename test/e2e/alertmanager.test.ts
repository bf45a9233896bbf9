import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Daemon } from '../../src/daemon/start.js';
import type { Simulator } from '../../src/simulator/server.js';
import { accountOf, startHarness, type Harness } from '../helpers/daemon.js';
import { requireBinary } from '../helpers/binaries.js';
import { startAlertmanager } from '../helpers/alertmanager.js';
import { eventually, type startProcess } from '../helpers/processes.js';
import { TOKEN } from '../helpers/remediation.js';
import { tempDir } from '../helpers/tmp.js';

const alertmanager = requireBinary('/usr/bin/prometheus-alertmanager', 'prometheus-alertmanager');

describe.skipIf(alertmanager.skip)('two unclustered Alertmanagers drive the webhook receiver', () => {
  let harness: Harness;
  let sim: Simulator;
  let daemon: Daemon;
  const managers: Array<ReturnType<typeof startProcess> & { url: string }> = [];
  // The daemon and the simulator share a clock that the test can move past the API's 2-minute window.
  let offset = 0;
  const now = () => Date.now() + offset;
  const attackedIp = '198.18.0.5';

  const post = async (url: string, alerts: object[]) => {
    const res = await request(`${url}/api/v2/alerts`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(alerts),
    });
    const text = await res.body.text();
    if (res.statusCode !== 200) throw new Error(`Alertmanager ${url} answered ${res.statusCode}: ${text}`);
  };
  const toBoth = (alerts: object[]) => Promise.all(managers.map((m) => post(m.url, alerts)));
  const stateCalls = (state: string) => sim.callsTo('/api/v1/dedicated/firewall/state', { ip: attackedIp, state });
  const journalFor = async (alertname: string) =>
    (await daemon.store.list({ limit: 1000 })).filter((e) => e.alertname === alertname);
  /** Webhook notifications each Alertmanager has started, from its own `alertmanager_notifications_total`. */
  const notifications = async () =>
    Promise.all(
      managers.map(async (m) => {
        const text = await (await request(`${m.url}/metrics`)).body.text();
        return text
          .split('\n')
          .filter(
            (line) => line.startsWith('alertmanager_notifications_total{') && line.includes('integration="webhook"'),
          )
          .reduce((sum, line) => sum + Number(line.split(' ').at(-1)), 0);
      }),
    );
  /**
   * Waits, without a fixed sleep, until each Alertmanager has started `atLeast` more webhook notifications
   * than `since`, and the receiver has journaled and finished every one of them (one row per delivery:
   * one alert, one rule): whatever these deliveries were going to cause upstream has happened by then.
   */
  const settle = async (alertname: string, since: number[], rowsBefore: number, atLeast: number) => {
    await eventually(`${atLeast} more notification(s) from each Alertmanager, all journaled`, async () => {
      const now = await notifications();
      const started = now.reduce((sum, n, i) => sum + n - since[i]!, 0);
      const rows = await journalFor(alertname);
      const done =
        now.every((n, i) => n - since[i]! >= atLeast) &&
        rows.length - rowsBefore >= started &&
        rows.every((e) => e.decision !== 'executing');
      return done ? true : undefined;
    });
    // A firewall change due now is applied by the next tick: run one to its end before asserting.
    await accountOf(daemon, 'default').engine.tick();
  };

  beforeAll(async () => {
    const dir = tempDir('bmx-am-', 'all');
    writeFileSync(join(dir, 'token'), `${TOKEN}\n`);
    harness = await startHarness({
      key: 'am-key',
      stateDir: join(dir, 'state'),
      simulator: { servers: 3, attackRate: 0, now },
      logLevel: 'warn',
      daemon: { now, remediationTickMs: 200, schedule: true, listen: true },
      config: {
        schedules: {
          servers: '*/10 * * * * *',
          firewall: '*/10 * * * * *',
          graphs: '0 0 * * * *',
          catalog: '0 0 * * * *',
        },
        remediation: {
          dry_run: false,
          auth: { bearer_token_files: [join(dir, 'token')] },
          rules: [
            {
              alertname: 'BaremetalIpUnderAttack',
              matchers: { severity: 'critical' },
              action: 'firewall_state',
              firing_state: 1,
              resolved_state: 0,
              hold: '5s',
            },
            { alertname: 'BaremetalServerUnreachable', action: 'powercycle', cooldown: '30m' },
          ],
        },
      },
    });
    ({ sim, daemon } = harness);
    await daemon.ready;
    for (const name of ['am1', 'am2']) {
      managers.push(
        await startAlertmanager(alertmanager.skip ? '' : alertmanager.path, {
          dir,
          name,
          webhookUrl: `${daemon.url}/api/v1/alertmanager`,
          tokenFile: join(dir, 'token'),
          route:
            '  receiver: baremetal\n  group_by: [alertname, server_id, ip]\n  group_wait: 1s\n  group_interval: 1s\n  repeat_interval: 2s',
        }),
      );
    }
  });

  afterAll(async () => {
    await Promise.all(managers.map((m) => m.stop()));
    await harness?.stop();
  });

  it('switches the attacked IP to Always On once, and back once after the hold and the window', async () => {
    const startsAt = new Date().toISOString();
    const labels = { alertname: 'BaremetalIpUnderAttack', severity: 'critical', server_id: '100003', ip: attackedIp };
    let since = await notifications();
    await toBoth([{ labels, annotations: { summary: 'attack' }, startsAt }]);
    // The first delivery and one repeat (repeat_interval 2s) of each Alertmanager.
    await settle('BaremetalIpUnderAttack', since, 0, 2);
    expect(stateCalls('1')).toHaveLength(1);
    expect((await journalFor('BaremetalIpUnderAttack')).filter((e) => e.decision === 'executed')).toHaveLength(1);

    since = await notifications();
    const rowsBefore = (await journalFor('BaremetalIpUnderAttack')).length;
    await toBoth([{ labels, annotations: { summary: 'attack' }, startsAt, endsAt: new Date().toISOString() }]);
    await eventually('the resolved notifications', async () =>
      (await journalFor('BaremetalIpUnderAttack')).some((e) => e.decision === 'deferred' && e.value === '0')
        ? true
        : undefined,
    );
    await settle('BaremetalIpUnderAttack', since, rowsBefore, 1);
    expect(stateCalls('0')).toHaveLength(0);
    offset += 2 * 60_000 + 10_000;
    await eventually('the resolved state to be applied', async () => (stateCalls('0').length > 0 ? true : undefined));
    // The ticker applied it; one more whole tick shows nothing else was pending.
    await accountOf(daemon, 'default').engine.tick();
    await accountOf(daemon, 'default').engine.tick();
    expect(stateCalls('0')).toHaveLength(1);
    expect(stateCalls('1')).toHaveLength(1);
    expect(sim.state.firewallSetting(attackedIp).state).toBe('0');
  });

  it('power-cycles once for an alert both Alertmanagers deliver', async () => {
    // The clock jumped ahead above: the attack state a power action needs must be read again (a poll of its own
    // here, or the next scheduled one: remediation.safety.deny_power_when_attacked denies a stale one).
    const { polls } = accountOf(harness.daemon, 'default');
    await eventually('a firewall poll after the jump', async () =>
      (await polls.run('firewall')) === 'success' ? true : undefined,
    );
    const startsAt = new Date().toISOString();
    const since = await notifications();
    await toBoth([
      { labels: { alertname: 'BaremetalServerUnreachable', server_id: '100002' }, annotations: {}, startsAt },
    ]);
    await settle('BaremetalServerUnreachable', since, 0, 1);
    expect(sim.callsTo('/api/v1/dedicated/powercycle', { server_id: '100002' })).toHaveLength(1);
    expect((await journalFor('BaremetalServerUnreachable')).map((e) => e.decision).sort()).toEqual(
      expect.arrayContaining(['duplicate', 'executed']),
    );
  });
});
