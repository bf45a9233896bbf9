import { describe, expect, it } from 'vitest';
import { IdempotencyMismatchError, UpstreamConnectionError } from '../../../src/errors.js';
import { RemediationEngine } from '../../../src/remediation/engine.js';
import type { ActionRequest } from '../../../src/remediation/types.js';
import { failureDecision } from '../../../src/remediation/outcome.js';
import type { Faults } from '../../../src/simulator/faults.js';
import { classifyTransportError } from '../../../src/upstream/transport-errors.js';
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

const ctx = { operation: 'powercycle', path: '/api/v1/dedicated/powercycle' };

const MIN = 60_000;
const POWERCYCLE = '/api/v1/dedicated/powercycle';
const STATE = '/api/v1/dedicated/firewall/state';
const power = (over: Partial<ActionRequest> = {}) => powerRequest({ source: 'alert', ...over });
const fw = firewallRequest;
type Harness = Awaited<ReturnType<typeof engineHarness>>;

/** Each reply shape of a power cycle, and the decision it must give. */
const SHAPES: Array<{
  name: string;
  faults?: Faults;
  closeSimulator?: boolean;
  decision: string;
  outcome: string;
  message: RegExp;
}> = [
  { name: '{success: true}', decision: 'executed', outcome: 'success', message: /^Power cycle initiated\.$/ },
  {
    name: '{success: false, message}',
    faults: { mode: 'success_false', paths: [POWERCYCLE] },
    decision: 'failed',
    outcome: 'BM_ERR_API',
    message: /API error: The request could not be completed\./,
  },
  {
    name: '{error: true, message} with 200',
    faults: { mode: 'error_true', paths: [POWERCYCLE] },
    decision: 'failed',
    outcome: 'BM_ERR_API',
    message: /API error: An unexpected error occurred\./,
  },
  {
    name: "an unknown shape (not the contract's): it does not say",
    faults: { malformedRate: 1, paths: [POWERCYCLE] },
    decision: 'unknown',
    outcome: 'BM_ERR_INVALID_REPLY',
    message: /invalid reply/,
  },
  {
    name: 'connection refused (never sent)',
    closeSimulator: true,
    decision: 'failed',
    outcome: 'BM_ERR_CONNECTION',
    message: /ECONNREFUSED/,
  },
  {
    name: 'acted, then the connection dropped',
    faults: { mode: 'act_then_drop', paths: [POWERCYCLE] },
    decision: 'unknown',
    outcome: 'BM_ERR_CONNECTION',
    message: /connection failed/,
  },
  {
    name: 'acted, then no reply within the timeout',
    faults: { mode: 'act_then_hang', hangMs: 10_000, paths: [POWERCYCLE] },
    decision: 'unknown',
    outcome: 'BM_ERR_TIMEOUT',
    message: /timed out/,
  },
];

/**
 * The client's timeout for a shape: for the timeout shape long enough that the request reaches the simulator
 * on a loaded machine (it acts, then hangs), and longer elsewhere so that a slow reply is not read as a timeout.
 */
const timeoutFor = (faults?: Faults) => (faults?.mode === 'act_then_hang' ? 2000 : 10_000);

describe('action outcomes: what the API said', () => {
  it.each(SHAPES)(
    'a power cycle answered with $name is $decision',
    async ({ faults, closeSimulator, decision, outcome, message }) => {
      const h = await engineHarness({}, ':memory:', timeoutFor(faults));
      if (faults) h.sim.setFaults(faults);
      if (closeSimulator) await h.sim.close();
      const result = await h.engine.request(power());
      expect(result.decision).toBe(decision);
      expect(result.message).toMatch(message);
      expect(await h.journal.get(result.id)).toMatchObject({
        decision,
        upstreamOutcome: outcome,
        completedAt: h.clock.now,
      });
      expect(await seriesValue(h.registry, 'baremetal_action_requests_total', { action: 'powercycle', decision })).toBe(
        1,
      );
      expect(h.sim.callsTo(POWERCYCLE)).toHaveLength(closeSimulator ? 0 : 1);
      if (decision !== 'executed')
        expect(
          await seriesValue(h.registry, 'baremetal_action_last_failure_timestamp_seconds', {
            action: 'powercycle',
            decision,
          }),
        ).toBe(h.clock.now / 1000);
    },
  );

  it.each([
    // Transport failures as the client classifies them (classifyTransportError), then the decision.
    {
      name: 'a timeout',
      error: classifyTransportError(Object.assign(new Error('t'), { code: 'UND_ERR_HEADERS_TIMEOUT' }), ctx),
      decision: 'unknown',
    },
    {
      name: 'the attempt deadline',
      error: classifyTransportError(new Error('aborted'), ctx, 'deadline'),
      decision: 'unknown',
    },
    {
      name: 'a connection reset after sending',
      error: classifyTransportError(Object.assign(new Error('reset'), { code: 'ECONNRESET' }), ctx),
      decision: 'unknown',
    },
    {
      name: 'a refused connection',
      error: classifyTransportError(Object.assign(new Error('refused'), { code: 'ECONNREFUSED' }), ctx),
      decision: 'failed',
    },
    {
      name: 'a connect timeout (nothing sent)',
      error: classifyTransportError(Object.assign(new Error('t'), { code: 'UND_ERR_CONNECT_TIMEOUT' }), ctx),
      decision: 'failed',
    },
    {
      name: 'the client flag outcomeUnknown',
      error: new UpstreamConnectionError(ctx, 'x', { outcomeUnknown: true }),
      decision: 'unknown',
    },
    { name: 'an unexpected exception', error: new TypeError('boom'), decision: 'unknown' },
  ])('$name is $decision', ({ error, decision }) => {
    expect(failureDecision(error)).toBe(decision);
  });
});

describe('failed and unknown power actions count for cooldown and budget', () => {
  it.each(SHAPES.filter((s) => s.decision !== 'executed'))(
    'after $name, a new alert 10 s later is held by the cooldown',
    async ({ faults, closeSimulator }) => {
      const h = await engineHarness({ budgetPerHour: 5 }, ':memory:', timeoutFor(faults));
      if (faults) h.sim.setFaults(faults);
      if (closeSimulator) await h.sim.close();
      await h.engine.request(power({ idempotencyKey: 'alert:a:1' }));
      h.sim.setFaults({});
      h.clock.now += 10_000;
      expect(await h.engine.request(power({ idempotencyKey: 'alert:a:2' }))).toMatchObject({ decision: 'cooldown' });
      expect(h.sim.callsTo(POWERCYCLE)).toHaveLength(closeSimulator ? 0 : 1);
      expect(await seriesValue(h.registry, 'baremetal_action_budget_remaining')).toBe(4);
    },
  );
});

describe('a failed firewall change stays pending and is retried with backoff', () => {
  const stateCalls = (h: Harness) => h.sim.callsTo(STATE).map((c) => c.params.state);

  it.each([
    {
      name: 'success:false',
      faults: { mode: 'success_false', modeCount: 1, paths: [STATE] } as Faults,
      decision: 'failed',
    },
    {
      name: 'acted, then dropped',
      faults: { mode: 'act_then_drop', modeCount: 1, paths: [STATE] } as Faults,
      decision: 'unknown',
    },
  ])('$name: $decision, pending, not re-sent inside the window, sent again after it', async ({ faults, decision }) => {
    const h = await engineHarness();
    h.sim.setFaults(faults);
    expect((await h.engine.request(fw('1'))).decision).toBe(decision);
    expect(await h.journal.desired('default', '100001', '198.18.0.1')).toMatchObject({
      pending: true,
      attempts: 1,
      desiredState: '1',
    });
    expect(await seriesValue(h.registry, 'baremetal_action_pending', { action: 'firewall_state' })).toBe(1);
    // A redelivery inside the backoff does not jump it.
    h.clock.now += 30_000;
    expect((await h.engine.request(fw('1', { idempotencyKey: 'again' }))).decision).toBe('deferred');
    h.clock.now += 60_000;
    await h.engine.tick();
    expect(stateCalls(h)).toEqual(['1']);
    h.clock.now += 30_000;
    await h.engine.tick();
    expect(stateCalls(h)).toEqual(['1', '1']);
    expect((await h.journal.list({ limit: 1 }))[0]).toMatchObject({ source: 'pending', decision: 'executed' });
    expect(await h.journal.desired('default', '100001', '198.18.0.1')).toMatchObject({
      pending: false,
      attempts: 0,
      appliedState: '1',
    });
    expect(h.sim.state.firewallSetting('198.18.0.1').state).toBe('1');
  });

  it('doubles the wait after each failure, up to 30 minutes, and never gives up', async () => {
    const h = await engineHarness({ budgetPerHour: 100 });
    h.sim.setFaults({ mode: 'success_false', paths: [STATE] });
    await h.engine.request(fw('1'));
    const waits: number[] = [];
    let last = h.clock.now;
    for (let i = 0; i < 6; i++) {
      const dueAt = (await h.journal.desired('default', '100001', '198.18.0.1'))!.dueAt;
      waits.push((dueAt - last) / MIN);
      h.clock.now = last = dueAt;
      await h.engine.tick();
    }
    expect(waits).toEqual([2, 4, 8, 16, 30, 30]);
    expect(h.sim.callsTo(STATE)).toHaveLength(7);
    expect(await h.journal.desired('default', '100001', '198.18.0.1')).toMatchObject({ pending: true, attempts: 7 });
  });
});

describe('exactly once', () => {
  it('two concurrent requests with one key make one call', async () => {
    const h = await engineHarness();
    const results = await Promise.all([
      h.engine.request(power({ idempotencyKey: 'k' })),
      h.engine.request(power({ idempotencyKey: 'k' })),
    ]);
    expect(results.map((r) => r.decision).sort()).toEqual(['duplicate', 'executed']);
    expect(h.sim.callsTo(POWERCYCLE)).toHaveLength(1);
  });

  it('two engines on one journal file (two processes) make one call for one key', async () => {
    const path = `${tempDir()}/journal.db`;
    const h = await engineHarness({}, path);
    const other = openTestStore(path);
    const engine = new RemediationEngine({
      firewallPeriodMs: FIREWALL_PERIOD_MS,
      account: 'default',
      store: other,
      client: h.client,
      metrics: freshMetrics().metrics,
      logger: captureLogger().logger,
      targets: simulatorTargets(h.sim),
      config: h.config,
      now: () => h.clock.now,
    });
    const results = await Promise.all([
      h.engine.request(power({ idempotencyKey: 'k' })),
      engine.request(power({ idempotencyKey: 'k' })),
    ]);
    await other.close();
    expect(results.map((r) => r.decision).sort()).toEqual(['duplicate', 'executed']);
    expect(h.sim.callsTo(POWERCYCLE)).toHaveLength(1);
  });

  it.each([
    { name: 'another target', second: { serverId: '100002' }, error: true },
    { name: 'another action', second: { action: 'poweroff' as const }, error: true },
    { name: 'another value', first: fw('1', { source: 'operator' }), second: { value: '0' }, error: true },
    { name: 'the same body', second: {}, error: false },
  ])('an operator key reused for $name: 422 unless the body is the same', async ({ first, second, error }) => {
    const h = await engineHarness();
    const base = first ?? power({ source: 'operator' });
    await h.engine.request({ ...base, idempotencyKey: 'operator:x' });
    const again = h.engine.request({ ...base, ...second, idempotencyKey: 'operator:x' });
    if (error) await expect(again).rejects.toBeInstanceOf(IdempotencyMismatchError);
    else expect((await again).decision).toBe('duplicate');
    expect(await h.journal.list({ limit: 10 })).toHaveLength(error ? 1 : 2);
  });

  it('rebuilds decision metrics from the journal when it is reopened; executing rows become unknown', async () => {
    const path = `${tempDir()}/journal.db`;
    const h = await engineHarness({}, path, 300);
    await h.engine.request(power());
    h.sim.setFaults({ mode: 'success_false', paths: [POWERCYCLE] });
    await h.engine.request(power({ serverId: '100002' }));
    // A crash mid-call: the row is left executing.
    await h.journal.insert({
      account: 'default',
      createdAt: h.clock.now,
      source: 'alert',
      action: 'poweroff',
      serverId: '100003',
      ip: null,
      value: null,
      alertname: null,
      fingerprint: null,
      startsAt: null,
      decision: 'executing',
      principal: 'alertmanager',
    });
    await h.journal.close();
    const journal = openTestStore(path);
    const { metrics, registry } = freshMetrics();
    const log = captureLogger();
    await new RemediationEngine({
      firewallPeriodMs: FIREWALL_PERIOD_MS,
      account: 'default',
      store: journal,
      client: h.client,
      metrics,
      logger: log.logger,
      targets: simulatorTargets(h.sim),
      config: h.config,
      now: () => h.clock.now + 1000,
    }).ready;
    expect((await journal.list({ limit: 1 }))[0]).toMatchObject({
      action: 'poweroff',
      decision: 'unknown',
      upstreamOutcome: 'interrupted',
    });
    expect(log.lines.some((l) => l.includes('outcome unknown'))).toBe(true);
    for (const [action, decision] of [
      ['powercycle', 'executed'],
      ['powercycle', 'failed'],
      ['poweroff', 'unknown'],
    ]) {
      expect(
        await seriesValue(registry, 'baremetal_action_requests_total', { action: action!, decision: decision! }),
        `${action} ${decision}`,
      ).toBe(1);
    }
    expect(
      await seriesValue(registry, 'baremetal_action_last_failure_timestamp_seconds', {
        action: 'poweroff',
        decision: 'unknown',
      }),
    ).toBe((h.clock.now + 1000) / 1000);
    expect(await seriesValue(registry, 'baremetal_action_budget_remaining')).toBe(7);
    await journal.close();
  });
});

describe('the console descriptor', () => {
  it.each([
    { name: 'before the first server list: 503', known: false, serverId: '100001', error: 'NotReadyError', rows: 0 },
    { name: 'an unknown server: 404, journaled', known: true, serverId: '999', error: 'NotFoundError', rows: 1 },
  ])('$name', async ({ known, serverId, error, rows }) => {
    const h = await engineHarness();
    const engine = new RemediationEngine({
      firewallPeriodMs: FIREWALL_PERIOD_MS,
      account: 'default',
      store: h.journal,
      client: h.client,
      metrics: h.metrics,
      logger: h.log.logger,
      targets: simulatorTargets(h.sim, known),
      config: h.config,
      now: () => h.clock.now,
    });
    await expect(engine.console(serverId, 'ops')).rejects.toMatchObject({ name: error });
    expect(await h.journal.list({ limit: 5 })).toHaveLength(rows);
    expect(h.sim.calls).toEqual([]);
  });
});
