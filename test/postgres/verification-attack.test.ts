/**
 * A firewall action's verification (issue 41 item 1) through a daemon against the simulator, on SQLite and on a
 * real PostgreSQL: the attack data is its second signal. The simulator's attack on the IP stops with the call —
 * `verified` at the deadline though the alert still fires; it goes on — `ineffective`; the alert's resolution
 * verifies it as for power, and the switch back on resolved is not verified.
 */
import { describe, expect, it } from 'vitest';
import { historyReadAt } from '../../src/collectors/firewall.js';
import { startHarness } from '../helpers/daemon.js';
import { seriesValue } from '../helpers/metrics.js';
import { postgresDatabases } from '../helpers/postgres.js';
import { eventually } from '../helpers/processes.js';
import { TOKEN } from '../helpers/remediation.js';

const MIN = 60_000;
const T0 = Date.UTC(2026, 10, 21, 12);
const postgres = postgresDatabases('verify_attack');

describe.each([
  { backend: 'sqlite' as const, skip: undefined },
  { backend: 'postgres' as const, skip: postgres.skip },
])('firewall verification by the attack data on $backend', ({ backend, skip }) => {
  /** A daemon on a fixed clock with one firewall_state rule verified within 10m, its first histories read. */
  async function daemon() {
    const clock = { now: T0 };
    const databaseUrl = backend === 'postgres' ? postgres.database() : undefined;
    const h = await startHarness({
      key: 'k',
      simulator: { servers: 2, colocations: 0, transits: 0, attackRate: 0, seed: 7, now: () => clock.now },
      remediationAuth: true,
      ...(databaseUrl ? { databaseUrl } : {}),
      config: {
        remediation: {
          dry_run: false,
          rules: [{ alertname: 'BaremetalIpUnderAttack', action: 'firewall_state', verify_within: '10m' }],
        },
      },
      daemon: { now: () => clock.now, ha: { retryMs: 100, heartbeatMs: 200, timeoutMs: 2_000, refreshMs: 100 } },
    });
    await h.daemon.ready;
    await eventually('the first server list and firewall histories', async () => {
      const { state } = h.account('default');
      const read = [...state.inventory.keys()].every(
        (serviceId) => historyReadAt(state.firewallState, { serviceType: 'dedicated', serviceId }) !== undefined,
      );
      return state.serversKnown && state.inventory.size > 0 && read ? true : undefined;
    });
    const ip = h.sim.state.servers.get('100001')!.ips[0]!;
    /** Reads the firewall histories by hand (a run in progress makes it `skipped`: asked again). */
    const firewallRun = () =>
      eventually('a firewall run by hand', async () =>
        (await h.account('default').polls.run('firewall')) === 'skipped' ? undefined : true,
      );
    const deliver = async (status: 'firing' | 'resolved') => {
      const alert = { status, labels: { alertname: 'BaremetalIpUnderAttack', server_id: '100001', ip } };
      const res = await h.daemon.app.inject({
        method: 'POST',
        url: '/api/v1/alertmanager',
        headers: { authorization: `Bearer ${TOKEN}` },
        payload: {
          version: '4',
          status,
          alerts: [{ ...alert, startsAt: '2026-11-21T11:55:00Z', fingerprint: 'fp-a' }],
        },
      });
      expect(res.statusCode).toBe(200);
      return res.json().results[0] as { id: number; decision: string };
    };
    const { engine } = h.account('default');
    const journal = h.daemon.store!;
    /** Ticks until row `id` has ended its verification (the ticker may be running one: ask again). */
    const ended = (id: number) =>
      eventually(`row ${id} verified or ineffective`, async () => {
        await engine.tick();
        const row = await journal.get(id);
        return row?.verification === 'verifying' ? undefined : row;
      });
    const verifications = (outcome: string) =>
      seriesValue(h.daemon.registry, 'baremetal_remediation_verifications_total', {
        action: 'firewall_state',
        rule: 'BaremetalIpUnderAttack',
        outcome,
      });
    return { h, clock, ip, firewallRun, deliver, engine, journal, ended, verifications };
  }

  it.skipIf(skip)('the attack stopped with the call: verified at the deadline, the alert still firing', async () => {
    const d = await daemon();
    d.h.sim.state.startAttack(d.ip);
    await d.firewallRun();
    const executed = await d.deliver('firing');
    expect(executed.decision).toBe('executed');
    const calledAt = d.clock.now;
    d.h.sim.state.stopAttack(d.ip);
    // Inside the window, with the history read again: still verifying (the window is not whole yet).
    d.clock.now += 5 * MIN;
    await d.firewallRun();
    d.clock.now += 10_000;
    await d.engine.tick();
    expect((await d.journal.get(executed.id))?.verification).toBe('verifying');
    // Past the deadline but the history not read since: it waits for a read covering the window.
    d.clock.now = calledAt + 10 * MIN + 20_000;
    await d.engine.tick();
    expect((await d.journal.get(executed.id))?.verification).toBe('verifying');
    await d.firewallRun();
    d.clock.now += 10_000;
    expect(await d.ended(executed.id)).toMatchObject({ verification: 'verified', verifiedAt: calledAt + 10 * MIN });
    expect(await d.verifications('verified')).toBe(1);
    // The alert has not resolved: no recovery time is observed for it (its histogram was created empty).
    const recovery = await d.h.daemon.registry.getSingleMetricAsString('baremetal_remediation_recovery_seconds');
    expect(recovery).toContain(
      'baremetal_remediation_recovery_seconds_count{account="default",action="firewall_state"} 0',
    );
    // Restarted on the same journal: the outcome is counted again from it, still without a recovery time.
    await d.h.start();
    await d.h.daemon.ready;
    await d.h.account('default').engine.ready;
    expect(await d.verifications('verified')).toBe(1);
    const restored = await d.h.daemon.registry.getSingleMetricAsString('baremetal_remediation_recovery_seconds');
    expect(restored).toContain(
      'baremetal_remediation_recovery_seconds_count{account="default",action="firewall_state"} 0',
    );
  });

  it.skipIf(skip)('the attack went on past the call: ineffective as of the deadline', async () => {
    const d = await daemon();
    d.h.sim.state.startAttack(d.ip);
    await d.firewallRun();
    const executed = await d.deliver('firing');
    const calledAt = d.clock.now;
    d.clock.now += 11 * MIN;
    await d.firewallRun();
    d.clock.now += 10_000;
    expect(await d.ended(executed.id)).toMatchObject({ verification: 'ineffective', verifiedAt: calledAt + 10 * MIN });
    expect(await d.verifications('ineffective')).toBe(1);
    // Created at 0 for a rule that verifies, and still 0.
    expect(await d.verifications('verified')).toBe(0);
  });

  it.skipIf(skip)('the alert resolving verifies it as for power; the switch back is not verified', async () => {
    const d = await daemon();
    d.h.sim.state.startAttack(d.ip);
    await d.firewallRun();
    const executed = await d.deliver('firing');
    d.clock.now += 3 * MIN;
    const back = await d.deliver('resolved');
    expect(await d.journal.get(executed.id)).toMatchObject({ verification: 'verified', verifiedAt: d.clock.now });
    expect(await d.journal.get(back.id)).toMatchObject({ verifyWithinMs: null, verification: null });
  });
});
