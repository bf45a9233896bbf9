/**
 * The power guards of remediation.safety through the webhook of a daemon against the simulator, on SQLite
 * and on a real PostgreSQL: attack corroboration (an attacked server, a stale or absent attack state), the
 * circuit breaker per account (opens on the (N+1)th server, survives a restart, is seen by a second replica,
 * closes through the endpoint) and the cap per server (`escalated`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { historyReadAt } from '../../src/collectors/firewall.js';
import type { Daemon } from '../../src/daemon/start.js';
import { startHarness } from '../helpers/daemon.js';
import { seriesValue } from '../helpers/metrics.js';
import { requirePostgres, startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { eventually } from '../helpers/processes.js';
import { TOKEN } from '../helpers/remediation.js';
import { tempDir } from '../helpers/tmp.js';

const MIN = 60_000;
const POWERCYCLE = '/api/v1/dedicated/powercycle';
const found = requirePostgres();
let postgres: TestPostgres | undefined;
let databases = 0;
beforeAll(async () => {
  if (!found.skip) postgres = await startPostgres(found.bin);
}, 120_000);
afterAll(() => postgres?.stop());

/** One firing BaremetalServerUnreachable alert for `serverId`, its episode starting at `startsAt`. */
const unreachable = (serverId: string, startsAt = '2026-11-21T11:00:00Z') => ({
  version: '4',
  status: 'firing',
  alerts: [
    {
      status: 'firing',
      labels: { alertname: 'BaremetalServerUnreachable', server_id: serverId },
      startsAt,
      fingerprint: `fp-${serverId}`,
    },
  ],
});

/**
 * Reads the firewall histories again by hand; a run still in progress (the scheduled one, slow under load)
 * makes the call `skipped` without reading, so it is asked again until a run of its own ends.
 */
async function firewallRun(h: Awaited<ReturnType<typeof startHarness>>): Promise<void> {
  const { polls } = h.account('default');
  await eventually('a firewall run by hand', async () =>
    (await polls.run('firewall')) === 'skipped' ? undefined : true,
  );
}

/** Posts `payload` to the webhook; returns the first result (decision and message). */
async function deliver(d: Daemon, payload: object): Promise<{ decision: string; message: string }> {
  const res = await d.app.inject({
    method: 'POST',
    url: '/api/v1/alertmanager',
    headers: { authorization: `Bearer ${TOKEN}` },
    payload,
  });
  expect(res.statusCode).toBe(200);
  return res.json().results[0];
}

describe.each([
  { backend: 'sqlite' as const, skip: undefined },
  { backend: 'postgres' as const, skip: found.skip ? found.reason : undefined },
])('power guards on $backend', ({ backend, skip }) => {
  /** A daemon on a fixed clock (`clock.now`, the simulator's too), live power-cycle rule, safety over the defaults. */
  async function daemonWith(
    o: { servers?: number; safety?: Record<string, unknown>; collectors?: Record<string, unknown> } = {},
  ) {
    const clock = { now: Date.UTC(2026, 10, 21, 12) };
    const databaseUrl =
      backend === 'postgres' ? postgres!.createDatabase(`guards_${process.pid}_${++databases}`) : undefined;
    const h = await startHarness({
      key: 'k',
      simulator: { servers: o.servers ?? 3, colocations: 0, transits: 0, attackRate: 0, seed: 7, now: () => clock.now },
      remediationAuth: true,
      ...(databaseUrl ? { databaseUrl } : {}),
      config: {
        ...(o.collectors ? { collectors: o.collectors } : {}),
        remediation: {
          dry_run: false,
          budget_per_hour: 100,
          safety: o.safety ?? {},
          rules: [{ alertname: 'BaremetalServerUnreachable', action: 'powercycle', cooldown: '1m' }],
        },
      },
      daemon: { now: () => clock.now, ha: { retryMs: 100, heartbeatMs: 200, timeoutMs: 2_000, refreshMs: 100 } },
    });
    await h.daemon.ready;
    // With PostgreSQL the daemon first wins the election, then polls.
    await eventually('the first server list and firewall histories', async () => {
      const { state } = h.account('default');
      // Every server's history read: the leader's initial firewall run has ended (a run by hand is not skipped).
      const firewallRead =
        o.collectors?.firewall === false ||
        [...state.inventory.keys()].every(
          (serviceId) => historyReadAt(state.firewallState, { serviceType: 'dedicated', serviceId }) !== undefined,
        );
      return state.serversKnown && firewallRead ? true : undefined;
    });
    return { h, clock, databaseUrl };
  }

  it.skipIf(skip)('an attacked server is denied_under_attack and the simulator records no power call', async () => {
    const { h } = await daemonWith();
    const ip = h.sim.state.servers.get('100002')!.ips[0]!;
    h.sim.state.startAttack(ip);
    await firewallRun(h);
    const result = await deliver(h.daemon, unreachable('100002'));
    expect(result.decision).toBe('denied_under_attack');
    expect(result.message).toContain(`IP ${ip} had its last attack event at 2026-11-21T12:00:00.000Z`);
    // A server without attack events next to it is power-cycled: the guard reads the data, it does not deny all.
    expect(await deliver(h.daemon, unreachable('100003'))).toMatchObject({ decision: 'executed' });
    expect(h.sim.callsTo(POWERCYCLE, { server_id: '100002' })).toHaveLength(0);
    expect(h.sim.callsTo(POWERCYCLE, { server_id: '100003' })).toHaveLength(1);
  });

  it.skipIf(skip)('stale attack data (older than three firewall periods) is unknown: denied', async () => {
    const { h, clock } = await daemonWith();
    // schedules.firewall is every minute: three periods are 180 s.
    clock.now += 181_000;
    const result = await deliver(h.daemon, unreachable('100002'));
    expect(result).toMatchObject({ decision: 'denied_under_attack' });
    expect(result.message).toContain('attack state of server 100002 unknown');
    expect(result.message).toContain('more than 3 firewall periods (180s) ago');
    // Read again, it corroborates: no event, so it acts.
    await firewallRun(h);
    expect((await deliver(h.daemon, unreachable('100002', '2026-11-21T11:30:00Z'))).decision).toBe('executed');
    expect(h.sim.callsTo(POWERCYCLE)).toHaveLength(1);
  });

  it.skipIf(skip)('the firewall collector off leaves the attack state unknown: denied, and force passes', async () => {
    const { h } = await daemonWith({ collectors: { firewall: false } });
    const result = await deliver(h.daemon, unreachable('100002'));
    expect(result.decision).toBe('denied_under_attack');
    expect(result.message).toContain('the firewall collector is off');
    const forced = await h.daemon.app.inject({
      method: 'POST',
      url: '/api/v1/actions/powercycle',
      headers: { authorization: `Bearer ${TOKEN}` },
      payload: { server_id: '100002', force: true },
    });
    expect(forced.json()).toMatchObject({ decision: 'executed' });
    const [row] = await h.daemon.store.list({ limit: 1 });
    expect(row!.message).toMatch(/^forced by the operator past the attack guard; /);
    expect(h.sim.callsTo(POWERCYCLE)).toHaveLength(1);
  });

  it.skipIf(skip)(
    'the circuit breaker opens on the 4th server, survives a restart, is seen by a second replica and closes through the endpoint',
    async () => {
      // The breaker is the subject: without the attack guard a follower decides on its own too.
      const { h, clock, databaseUrl } = await daemonWith({ servers: 6, safety: { deny_power_when_attacked: false } });
      const decisions = [];
      for (const id of ['100001', '100002', '100003', '100004'])
        decisions.push((await deliver(h.daemon, unreachable(id))).decision);
      expect(decisions).toEqual(['executed', 'executed', 'executed', 'denied_circuit_open']);
      const open = await deliver(h.daemon, unreachable('100001', '2026-11-21T11:45:00Z'));
      expect(open.decision).toBe('denied_circuit_open');
      expect(open.message).toContain('the circuit breaker of account default is open since 2026-11-21T12:00:00.000Z');
      expect(await seriesValue(h.daemon.registry, 'baremetal_remediation_circuit_open', { account: 'default' })).toBe(
        1,
      );

      const restarted = await h.start();
      await restarted.ready;
      expect((await deliver(restarted, unreachable('100005'))).decision).toBe('denied_circuit_open');
      expect(await seriesValue(restarted.registry, 'baremetal_remediation_circuit_open', { account: 'default' })).toBe(
        1,
      );

      if (databaseUrl) {
        const replica = await startHarness({
          key: 'k',
          upstream: h.sim,
          stateDir: tempDir(),
          databaseUrl,
          remediationAuth: true,
          config: {
            remediation: {
              dry_run: false,
              safety: { deny_power_when_attacked: false },
              rules: [{ alertname: 'BaremetalServerUnreachable', action: 'powercycle', cooldown: '1m' }],
            },
          },
          daemon: { ha: { retryMs: 100, heartbeatMs: 200, timeoutMs: 2_000, refreshMs: 100 } },
        });
        await replica.daemon.ready;
        expect(replica.daemon.role.leading).toBe(false);
        await eventually('the follower reads the published server list', async () =>
          replica.daemon.shared!.directory.snapshot('default').hasServer('100006') ? true : undefined,
        );
        const seen = await deliver(replica.daemon, unreachable('100006', '2026-11-21T11:50:00Z'));
        expect(seen.decision).toBe('denied_circuit_open');
      }

      clock.now += 1000;
      const close = await restarted.app.inject({
        method: 'POST',
        url: '/api/v1/remediation/circuit/close',
        headers: { authorization: `Bearer ${TOKEN}` },
        payload: { account: 'default' },
      });
      expect(close.statusCode).toBe(200);
      expect(close.json()).toMatchObject({ account: 'default', decision: 'circuit_closed', was_open: true });
      expect(await seriesValue(restarted.registry, 'baremetal_remediation_circuit_open', { account: 'default' })).toBe(
        0,
      );
      // Closing starts a new window: the servers counted before no longer count.
      expect((await deliver(restarted, unreachable('100005', '2026-11-21T11:55:00Z'))).decision).toBe('executed');
      expect(h.sim.callsTo(POWERCYCLE)).toHaveLength(4);
      const [row] = (await restarted.store.list({ action: 'circuit_close', limit: 1 })) as Array<{
        source: string;
        principal: string | null;
      }>;
      // Journaled under the closing operator's principal (the deprecated bearer token's: token-1).
      expect(row).toMatchObject({ source: 'operator', decision: 'circuit_closed', principal: 'token-1' });
    },
  );

  it.skipIf(skip)('the 4th power action on one server within the cap window is escalated: nothing sent', async () => {
    const { h, clock } = await daemonWith();
    const decisions = [];
    for (let episode = 0; episode < 4; episode++) {
      // Past the rule's 1m cooldown, with the firewall history read again (fresh attack state).
      clock.now += 2 * MIN;
      await firewallRun(h);
      const startsAt = new Date(clock.now - MIN).toISOString();
      decisions.push((await deliver(h.daemon, unreachable('100002', startsAt))).decision);
    }
    expect(decisions).toEqual(['executed', 'executed', 'executed', 'escalated']);
    expect(h.sim.callsTo(POWERCYCLE, { server_id: '100002' })).toHaveLength(3);
    const [row] = await h.daemon.store.list({ limit: 1 });
    expect(row!.message).toContain('already had 3 power actions within 86400s');
    // One warning for the escalation, naming the server, the count and the window.
    const escalations = h.log.lines
      .map((line) => JSON.parse(line) as Record<string, unknown>)
      .filter((line) => line.level === 'warn' && String(line.msg).startsWith('remediation escalated'));
    expect(escalations).toMatchObject([{ server_id: '100002', count: 3, window: '86400s', id: row!.id }]);
    expect(
      await seriesValue(h.daemon.registry, 'baremetal_action_requests_total', {
        account: 'default',
        action: 'powercycle',
        decision: 'escalated',
      }),
    ).toBe(1);
  });
});
