import { describe, expect, it } from 'vitest';
import { NotReadyError } from '../../../src/errors.js';
import { RemediationEngine } from '../../../src/remediation/engine.js';
import { captureLogger } from '../../helpers/logger.js';
import { freshMetrics, seriesValue } from '../../helpers/metrics.js';
import {
  engineHarness,
  firewallRequest,
  openTestStore,
  powerRequest,
  simulatorTargets,
  FIREWALL_PERIOD_MS,
} from '../../helpers/remediation.js';
import { tempDir } from '../../helpers/tmp.js';

const MIN = 60_000;
const power = powerRequest;
const fw = firewallRequest;
const stateCalls = (sim: Awaited<ReturnType<typeof engineHarness>>['sim']) =>
  sim.callsTo('/api/v1/dedicated/firewall/state').map((c) => c.params.state);

describe('guards', () => {
  it('refuses to decide before a server list is known (503, Alertmanager retries)', async () => {
    const h = await engineHarness();
    const engine = new RemediationEngine({
      firewallPeriodMs: FIREWALL_PERIOD_MS,
      account: 'default',
      store: h.journal,
      client: h.client,
      metrics: h.metrics,
      logger: h.log.logger,
      targets: simulatorTargets(h.sim, false),
      config: h.config,
    });
    await expect(engine.request(power())).rejects.toBeInstanceOf(NotReadyError);
    expect(await h.journal.list({ limit: 10 })).toEqual([]);
  });

  it.each([
    {
      name: 'an unknown server',
      req: power({ serverId: '999' }),
      message: 'server 999 is not in the latest server list',
    },
    {
      name: 'an IP of another server',
      req: fw('1', { ip: '198.18.0.3' }),
      message: 'IP 198.18.0.3 does not belong to server 100001',
    },
  ])('denies $name', async ({ req, message }) => {
    const h = await engineHarness();
    expect(await h.engine.request(req)).toMatchObject({ decision: 'denied_unknown_target', message });
    expect(h.sim.calls).toEqual([]);
    expect(
      await seriesValue(h.registry, 'baremetal_action_requests_total', {
        action: req.action,
        decision: 'denied_unknown_target',
      }),
    ).toBe(1);
  });

  it('accepts an IP the server does not list when the rule says so', async () => {
    const h = await engineHarness();
    expect(
      (
        await h.engine.request(
          power({ action: 'firewall_sensitivity', ip: '203.0.113.9', value: 'high', requireOwnedIp: false }),
        )
      ).decision,
    ).toBe('failed');
    expect(h.sim.callsTo('/api/v1/dedicated/firewall/sensitivity')).toHaveLength(1);
  });

  it('in dry run decides and journals, and sends nothing', async () => {
    const h = await engineHarness({ dryRun: true });
    expect(await h.engine.request(power())).toMatchObject({ decision: 'dry_run' });
    expect(await h.engine.request(fw('1'))).toMatchObject({ decision: 'dry_run' });
    expect(h.sim.calls).toEqual([]);
    expect((await h.journal.list({ limit: 10 })).map((e) => e.decision)).toEqual(['dry_run', 'dry_run']);
  });

  it('in dry run records no desired firewall state, so no series is left that no row backs', async () => {
    // The soak's miss (issue 32): dry run set the gauge but saved no row, so neither the housekeeping nor a
    // restart ever removed the series.
    const h = await engineHarness({ dryRun: true });
    expect(await h.engine.request(fw('1'))).toMatchObject({
      decision: 'dry_run',
      message: 'dry run: desired state 1 neither recorded nor sent upstream',
    });
    expect(await h.journal.desired('default', '100001', '198.18.0.1')).toBeUndefined();
    expect(
      await seriesValue(h.registry, 'baremetal_firewall_desired_state', { server_id: '100001', ip: '198.18.0.1' }),
    ).toBeUndefined();
    // With dry run off the same request is recorded, and the series with it.
    h.config.dryRun = false;
    expect((await h.engine.request(fw('1'))).decision).toBe('executed');
    expect((await h.journal.desired('default', '100001', '198.18.0.1'))?.desiredState).toBe('1');
    expect(
      await seriesValue(h.registry, 'baremetal_firewall_desired_state', { server_id: '100001', ip: '198.18.0.1' }),
    ).toBe(1);
  });

  it('executes once per idempotency key, also for a later delivery', async () => {
    const h = await engineHarness();
    expect(await h.engine.request(power({ idempotencyKey: 'k1' }))).toMatchObject({
      decision: 'executed',
      message: 'Power cycle initiated.',
    });
    h.clock.now += 60 * MIN;
    expect(await h.engine.request(power({ idempotencyKey: 'k1' }))).toMatchObject({ decision: 'duplicate' });
    expect(h.sim.callsTo('/api/v1/dedicated/powercycle')).toHaveLength(1);
  });

  it('holds a cooldown per action and target', async () => {
    const h = await engineHarness();
    expect((await h.engine.request(power())).decision).toBe('executed');
    h.clock.now += 29 * MIN;
    expect(await h.engine.request(power())).toMatchObject({
      decision: 'cooldown',
      message: 'powercycle on 100001 ran 1740s ago; cooldown 1800s',
    });
    expect((await h.engine.request(power({ serverId: '100002' }))).decision).toBe('executed');
    expect((await h.engine.request(power({ action: 'poweroff' }))).decision).toBe('executed');
    h.clock.now += 1 * MIN;
    expect((await h.engine.request(power())).decision).toBe('executed');
  });

  it('spends a budget per rolling hour across actions, then denies and logs at warn', async () => {
    const h = await engineHarness({ budgetPerHour: 2 });
    expect((await h.engine.request(power({ serverId: '100001' }))).decision).toBe('executed');
    expect((await h.engine.request(power({ serverId: '100002' }))).decision).toBe('executed');
    expect(await seriesValue(h.registry, 'baremetal_action_budget_remaining')).toBe(0);
    expect(await h.engine.request(power({ serverId: '100003' }))).toMatchObject({
      decision: 'denied_budget',
      message: 'budget of 2 actions per hour is used up',
    });
    expect(h.log.lines.some((l) => l.includes('"level":"warn"') && l.includes('budget exhausted'))).toBe(true);
    h.clock.now += 61 * MIN;
    expect((await h.engine.request(power({ serverId: '100003' }))).decision).toBe('executed');
  });

  it('journals a failed upstream call with its error code and message', async () => {
    const h = await engineHarness();
    h.sim.setFaults({ errorRate: 1 });
    const result = await h.engine.request(power());
    expect(result).toMatchObject({
      decision: 'failed',
      message: 'power_cycle [POST] "/api/v1/dedicated/powercycle": 500 API error: An unexpected error occurred.',
    });
    expect(await h.journal.get(result.id)).toMatchObject({
      decision: 'failed',
      upstreamOutcome: 'BM_ERR_API',
      completedAt: h.clock.now,
    });
  });
});

describe('firewall state as desired state', () => {
  it('applies firing at once, and resolved after the hold and the window: two calls', async () => {
    const h = await engineHarness();
    expect((await h.engine.request(fw('1'))).decision).toBe('executed');
    h.clock.now += 30_000;
    expect(await h.engine.request(fw('0', { holdMs: 5 * MIN }))).toMatchObject({ decision: 'deferred' });
    expect(await seriesValue(h.registry, 'baremetal_action_pending', { action: 'firewall_state' })).toBe(1);
    h.clock.now += 4 * MIN;
    await h.engine.tick();
    expect(stateCalls(h.sim)).toEqual(['1']);
    h.clock.now += 1 * MIN;
    await h.engine.tick();
    expect(stateCalls(h.sim)).toEqual(['1', '0']);
    expect(h.sim.state.firewallSetting('198.18.0.1').state).toBe('0');
    expect(await seriesValue(h.registry, 'baremetal_action_pending', { action: 'firewall_state' })).toBe(0);
  });

  it('keeps a change inside the 2-minute window pending and applies it when the window opens', async () => {
    const h = await engineHarness();
    await h.engine.request(fw('1'));
    h.clock.now += 10_000;
    expect((await h.engine.request(fw('0'))).decision).toBe('deferred');
    h.clock.now += 100_000;
    await h.engine.tick();
    expect(stateCalls(h.sim)).toEqual(['1']);
    h.clock.now += 10_000;
    await h.engine.tick();
    expect(stateCalls(h.sim)).toEqual(['1', '0']);
  });

  it('collapses firing then resolved inside one window into no call at all', async () => {
    const h = await engineHarness();
    await h.engine.request(fw('0'));
    expect(stateCalls(h.sim)).toEqual(['0']);
    h.clock.now += 10_000;
    expect((await h.engine.request(fw('1'))).decision).toBe('deferred');
    h.clock.now += 10_000;
    expect((await h.engine.request(fw('0'))).decision).toBe('duplicate');
    h.clock.now += 5 * MIN;
    await h.engine.tick();
    expect(stateCalls(h.sim)).toEqual(['0']);
    expect(
      await seriesValue(h.registry, 'baremetal_firewall_desired_state', { server_id: '100001', ip: '198.18.0.1' }),
    ).toBe(0);
  });

  it('a flapping attack does not bounce the state: firing again cancels a held resolution', async () => {
    const h = await engineHarness();
    await h.engine.request(fw('1'));
    h.clock.now += 3 * MIN;
    expect((await h.engine.request(fw('0', { holdMs: 5 * MIN }))).decision).toBe('deferred');
    h.clock.now += 1 * MIN;
    expect((await h.engine.request(fw('1'))).decision).toBe('duplicate');
    h.clock.now += 10 * MIN;
    await h.engine.tick();
    expect(stateCalls(h.sim)).toEqual(['1']);
  });

  it('defers when the API refuses inside its window, and retries when it opens', async () => {
    const h = await engineHarness();
    h.sim.state.setFirewallState('198.18.0.1', '0');
    const result = await h.engine.request(fw('1'));
    expect(result.decision).toBe('deferred');
    expect((await h.journal.get(result.id))?.message).toContain('already updated in the last 2 minutes');
    h.clock.now += 2 * MIN;
    await h.engine.tick();
    expect(stateCalls(h.sim)).toEqual(['1', '1']);
    expect(h.sim.state.firewallSetting('198.18.0.1').state).toBe('1');
  });

  it('a change cancelled before any state was applied to the IP leaves no desired state series', async () => {
    const h = await engineHarness();
    const series = () =>
      seriesValue(h.registry, 'baremetal_firewall_desired_state', { server_id: '100001', ip: '198.18.0.1' });
    // The API refuses the first change inside its window: pending, nothing applied to the IP yet.
    h.sim.state.setFirewallState('198.18.0.1', '0');
    const asked = await h.engine.request(
      fw('1', {
        alert: {
          alertname: 'BaremetalFirewallAttack',
          fingerprint: 'f00dfeedbeef0001',
          startsAt: '2026-11-23T11:58:00Z',
        },
      }),
    );
    expect(asked.decision).toBe('deferred');
    expect(await series()).toBe(1);
    // A reload removed the rule (the harness has none): the change is cancelled, its row kept with nothing applied.
    expect(await h.engine.rulesChanged()).toBe(1);
    expect(await h.journal.desired('default', '100001', '198.18.0.1')).toMatchObject({
      pending: false,
      desiredState: '1',
      appliedState: null,
    });
    // Nothing is wanted of that IP any more: no series (the row stays for the journal's sake).
    expect(await series()).toBeUndefined();
  });

  it("reads again, every 10 s of ticks, the desired firewall state another replica's decision changed", async () => {
    const h = await engineHarness();
    const series = () =>
      seriesValue(h.registry, 'baremetal_firewall_desired_state', { server_id: '100001', ip: '198.18.0.1' });
    await h.engine.tick();
    expect(await series()).toBeUndefined();
    // Another replica decides and writes the shared store; this engine decides nothing itself.
    await h.journal.transaction('default', (tx) =>
      tx.saveDesired({
        account: 'default',
        serverId: '100001',
        ip: '198.18.0.1',
        desiredState: '1',
        dueAt: h.clock.now,
        pending: false,
        attempts: 0,
        appliedState: '1',
        appliedAt: h.clock.now,
        cooldownMs: 2 * MIN,
        principal: 'alertmanager',
      }),
    );
    h.clock.now += 10_000;
    await h.engine.tick();
    expect(await series()).toBe(1);
  });

  it('keeps pending changes across a restart', async () => {
    const path = `${tempDir()}/journal.db`;
    const h = await engineHarness({}, path);
    await h.engine.request(fw('1'));
    h.clock.now += 10_000;
    expect((await h.engine.request(fw('0'))).decision).toBe('deferred');
    await h.journal.close();
    const journal = openTestStore(path);
    const { metrics, registry } = freshMetrics();
    const engine = new RemediationEngine({
      firewallPeriodMs: FIREWALL_PERIOD_MS,
      account: 'default',
      store: journal,
      client: h.client,
      metrics,
      logger: captureLogger().logger,
      targets: simulatorTargets(h.sim),
      config: h.config,
      now: () => h.clock.now,
    });
    await engine.ready;
    expect(await seriesValue(registry, 'baremetal_action_pending', { action: 'firewall_state' })).toBe(1);
    h.clock.now += 2 * MIN;
    await engine.tick();
    expect(stateCalls(h.sim)).toEqual(['1', '0']);
    await journal.close();
  });
});
