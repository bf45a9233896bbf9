/**
 * Dry run and rule removal in the fault matrix (issue 19): a firewall change deferred by its hold is pending
 * in the SQLite journal when the operator switches remediation off — by a reload, or by a restart with
 * `dry_run: true` — or removes the rule that asked for it. Nothing may then be sent: the simulator's record
 * of calls is the evidence, the journal says why. The clock is injected; ticks are driven by hand.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Daemon } from '../../src/daemon/start.js';
import type { Simulator } from '../../src/simulator/server.js';
import { accountOf, startHarness } from '../helpers/daemon.js';
import { seriesValue } from '../helpers/metrics.js';
import { engineHarness, firewallRequest, rule, TOKEN } from '../helpers/remediation.js';
import { backends } from '../helpers/store-backends.js';

const STATE = '/api/v1/dedicated/firewall/state';
const MIN = 60_000;
const auth = { authorization: `Bearer ${TOKEN}` };

/** the simulator of the test (the harness's, or the engine rows' own) */
let sim: Simulator | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

const FIREWALL_RULE = {
  alertname: 'BaremetalFirewallAttack',
  action: 'firewall_state',
  server_id_label: 'server_id',
  ip_label: 'ip',
  firing_state: '1',
  resolved_state: '0',
  hold: '5m',
};

/** The remediation block with `overrides`; `rules` default to the firewall rule. */
const remediationOf = (overrides: Record<string, unknown>) => ({
  dry_run: false,
  rules: [FIREWALL_RULE],
  ...overrides,
});

interface World {
  d: Daemon;
  clock: { now: number };
  stateDir: string;
  ip: string;
  /** the config a reload reads: replace `next.remediation` to change it */
  next: { remediation: Record<string, unknown> };
  sim: Simulator;
}

/** A live daemon whose rule set the IP of 100001 to 1 and then deferred its resolve (hold 5m): one change pending. */
async function withPendingResolve(): Promise<World> {
  const clock = { now: Date.UTC(2026, 10, 23, 12) };
  const next = { remediation: {} as Record<string, unknown> };
  const h = await startHarness({
    key: 'k',
    simulator: { servers: 2, attackRate: 0 },
    remediationAuth: true,
    // Called again by a reload: the test changes `next.remediation` to change the file.
    config: () => ({ remediation: remediationOf(next.remediation) }),
    daemon: { initialPolls: false, now: () => clock.now },
  });
  const d = h.daemon;
  const stateDir = h.stateDir;
  await d.ready;
  await accountOf(d, 'default').polls.run('servers');
  const ip = h.sim.state.servers.get('100001')!.ips[0]!;
  for (const status of ['firing', 'resolved'] as const) {
    const res = await d.app.inject({
      method: 'POST',
      url: '/api/v1/alertmanager',
      headers: auth,
      payload: {
        version: '4',
        status,
        receiver: 'baremetal',
        alerts: [
          {
            status,
            labels: { alertname: FIREWALL_RULE.alertname, server_id: '100001', ip },
            annotations: {},
            startsAt: '2026-11-23T11:58:00Z',
            endsAt: status === 'firing' ? '0001-01-01T00:00:00Z' : '2026-11-23T12:00:00Z',
            fingerprint: 'f00dfeedbeef0001',
          },
        ],
      },
    });
    expect(res.json().results[0].decision).toBe(status === 'firing' ? 'executed' : 'deferred');
  }
  expect(h.sim.callsTo(STATE).map((c) => c.params.state)).toEqual(['1']);
  return { d, clock, stateDir, ip, next, sim: h.sim };
}

/** Past the hold and the 2-minute window, ticks twice; what was sent and journaled since `since` (row id). */
async function afterDue(w: World, since: number) {
  w.clock.now += 6 * MIN;
  await accountOf(w.d, 'default').engine.tick();
  await accountOf(w.d, 'default').engine.tick();
  const rows = (await w.d.store.list({ limit: 50 })).filter((r) => r.id > since);
  return {
    sent: w.sim.callsTo(STATE).map((c) => c.params.state),
    rows: rows.map((r) => ({ source: r.source, decision: r.decision, value: r.value })),
    messages: rows.map((r) => r.message),
    desired: await w.d.store.desired('default', '100001', w.ip),
  };
}

const lastId = async (d: Daemon) => (await d.store.list({ limit: 1 }))[0]!.id;

describe('dry run and removed rules hold every pending change', () => {
  it('dry_run set by a reload: the due change is held, journaled once as dry_run, sent after dry_run is off', async () => {
    const w = await withPendingResolve();
    const since = await lastId(w.d);
    w.next.remediation = { dry_run: true };
    expect((await w.d.reload()).ok).toBe(true);
    const held = await afterDue(w, since);
    expect(held).toMatchObject({
      sent: ['1'],
      rows: [{ source: 'pending', decision: 'dry_run', value: '0' }],
      desired: { pending: true, desiredState: '0', appliedState: '1' },
    });
    expect(held.messages[0]).toMatch(/^dry run: pending state 0 held, nothing sent upstream/);
    expect(
      await seriesValue(w.d.registry, 'baremetal_action_requests_total', {
        action: 'firewall_state',
        decision: 'dry_run',
      }),
    ).toBe(1);
    // Dry run off again: the held change goes out on the next tick.
    w.next.remediation = { dry_run: false };
    expect((await w.d.reload()).ok).toBe(true);
    await accountOf(w.d, 'default').engine.tick();
    expect(w.sim.callsTo(STATE).map((c) => c.params.state)).toEqual(['1', '0']);
  });

  it('dry_run set at start: a change left pending by the previous run is held, nothing sent', async () => {
    const w = await withPendingResolve();
    const since = await lastId(w.d);
    await w.d.stop();
    // Restarted on the same state_dir and upstream, with dry_run on.
    const { daemon: d } = await startHarness({
      key: 'k',
      upstream: w.sim,
      stateDir: w.stateDir,
      remediationAuth: true,
      config: { remediation: remediationOf({ dry_run: true }) },
      daemon: { initialPolls: false, now: () => w.clock.now },
    });
    await d.ready;
    const held = await afterDue({ ...w, d }, since);
    expect(held).toMatchObject({
      sent: ['1'],
      rows: [{ source: 'pending', decision: 'dry_run', value: '0' }],
      desired: { pending: true, desiredState: '0', appliedState: '1' },
    });
  });

  it('a reload that removes the rule cancels its pending change: journaled, counted, never sent', async () => {
    const w = await withPendingResolve();
    const since = await lastId(w.d);
    w.next.remediation = { rules: [] };
    expect((await w.d.reload()).ok).toBe(true);
    const { d } = w;
    expect(await seriesValue(d.registry, 'baremetal_action_pending', { action: 'firewall_state' })).toBe(0);
    expect(await seriesValue(d.registry, 'baremetal_firewall_desired_state', { server_id: '100001', ip: w.ip })).toBe(
      1,
    );
    const after = await afterDue(w, since);
    expect(after).toMatchObject({
      sent: ['1'],
      rows: [{ source: 'pending', decision: 'cancelled', value: '0' }],
      desired: { pending: false, desiredState: '1', appliedState: '1' },
    });
    expect(after.messages[0]).toBe(
      'cancelled: no remediation rule for alert BaremetalFirewallAttack any more (configuration reload); state 0 not sent, the IP stays in state 1',
    );
    expect(
      await seriesValue(d.registry, 'baremetal_action_requests_total', {
        action: 'firewall_state',
        decision: 'cancelled',
      }),
    ).toBe(1);
  });

  it('a reload that removes the rule leaves a change an operator asked for pending, and sends it', async () => {
    const w = await withPendingResolve();
    const ip = w.sim.state.servers.get('100002')!.ips[0]!;
    for (const [state, decision] of [
      ['1', 'executed'],
      ['0', 'deferred'],
    ] as const) {
      const res = await w.d.app.inject({
        method: 'POST',
        url: '/api/v1/actions/firewall-state',
        headers: auth,
        payload: { server_id: '100002', ip, state },
      });
      expect(res.json().decision).toBe(decision);
    }
    w.next.remediation = { rules: [] };
    expect((await w.d.reload()).ok).toBe(true);
    await afterDue(w, 0);
    const sent = (at: string) =>
      w.sim
        .callsTo(STATE)
        .filter((c) => c.params.ip === at)
        .map((c) => c.params.state);
    expect({ operator: sent(ip), rule: sent(w.ip) }).toEqual({ operator: ['1', '0'], rule: ['1'] });
  });
});

describe.each(backends())('on the $name store: dry run holds, a removed rule cancels', ({ name, skip, fresh }) => {
  it.skipIf(skip !== undefined)(`the engine over ${name}`, async () => {
    const h = await engineHarness(
      { rules: [rule({ alertname: 'BaremetalFirewallAttack', action: 'firewall_state' })] },
      await (await fresh()).open(),
    );
    const { clock, client, journal, engine, config } = h;
    sim = h.sim;
    try {
      const alert = { alertname: 'BaremetalFirewallAttack', fingerprint: 'f00d', startsAt: '2026-11-23T11:58:00Z' };
      const ask = (value: '0' | '1', ip: string, holdMs = 0) =>
        engine.request(firewallRequest(value, { ip, alert, holdMs, requireOwnedIp: false }));
      // Two IPs, each set to 1 and its resolve deferred by a 5-minute hold.
      for (const ip of ['198.18.0.1', '198.18.0.2']) {
        expect((await ask('1', ip)).decision).toBe('executed');
        expect((await ask('0', ip, 5 * MIN)).decision).toBe('deferred');
      }
      config.dryRun = true;
      clock.now += 6 * MIN;
      await engine.tick();
      await engine.tick();
      const held = (await journal.list({ limit: 2 })).map((r) => [r.ip, r.decision]);
      const sentWhileDry = sim.callsTo(STATE).length;
      config.dryRun = false;
      config.rules = [];
      const cancelled = await engine.rulesChanged();
      await engine.tick();
      expect({ held, sentWhileDry, cancelled, sent: sim.callsTo(STATE).length }).toEqual({
        held: [
          ['198.18.0.2', 'dry_run'],
          ['198.18.0.1', 'dry_run'],
        ],
        sentWhileDry: 2,
        cancelled: 2,
        sent: 2,
      });
    } finally {
      await engine.stop();
      await client.close();
    }
  });
});
