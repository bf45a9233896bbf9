/**
 * The fault matrix for remediation (issue 8): the daemon against the simulator with its fault knobs, one
 * row per fault, each with its expected journal decision, upstream calls and replies.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it, vi } from 'vitest';
import type { Daemon } from '../../src/daemon/start.js';
import { RemediationEngine } from '../../src/remediation/engine.js';
import type { ActionRequest } from '../../src/remediation/types.js';
import { accountOf, startHarness } from '../helpers/daemon.js';
import { freshMetrics, seriesValue } from '../helpers/metrics.js';
import {
  engineHarness,
  POWERCYCLE_REMEDIATION,
  powerRequest,
  simulatorTargets,
  TOKEN,
  unreachableAlert,
  FIREWALL_PERIOD_MS,
} from '../helpers/remediation.js';

const MIN = 60_000;
const auth = { authorization: `Bearer ${TOKEN}` };
const POWERCYCLE = '/api/v1/dedicated/powercycle';
const STATE = '/api/v1/dedicated/firewall/state';

/** A daemon on a fresh state_dir (prepared by `prepare`), with a clock the test moves. */
async function start(prepare: (stateDir: string) => void = () => undefined) {
  const clock = { now: Date.UTC(2026, 10, 21, 12) };
  const h = await startHarness({
    key: 'k',
    start: false,
    simulator: { servers: 3, attackRate: 0 },
    remediationAuth: true,
    config: { upstream: { timeout: '500ms' }, remediation: POWERCYCLE_REMEDIATION },
    daemon: { now: () => clock.now },
  });
  prepare(h.stateDir);
  const daemon = await h.start();
  await daemon.ready;
  return { daemon, sim: h.sim, clock, stateDir: h.stateDir, log: h.log };
}

const alert = (startsAt: string) => unreachableAlert(startsAt);
const post = (d: Daemon, url: string, payload: object, headers: Record<string, string> = {}) =>
  d.app.inject({ method: 'POST', url, headers: { ...auth, ...headers }, payload });

describe('remediation under upstream faults', () => {
  it.each([
    {
      name: 'firewall/state answers success:false → journaled failed, desired state pending, retried later',
      run: async () => {
        const { daemon: d, sim: s, clock } = await start();
        s.setFaults({ mode: 'success_false', modeCount: 1, paths: [STATE] });
        const res = await post(d, '/api/v1/actions/firewall-state', {
          server_id: '100001',
          ip: '198.18.0.1',
          state: '1',
        });
        expect(res.json()).toMatchObject({
          decision: 'failed',
          message: expect.stringContaining('The request could not be completed.'),
        });
        expect(await d.store.desired('default', '100001', '198.18.0.1')).toMatchObject({
          pending: true,
          desiredState: '1',
          appliedState: null,
        });
        expect(await seriesValue(d.registry, 'baremetal_action_pending', { action: 'firewall_state' })).toBe(1);
        clock.now += 2 * MIN;
        await accountOf(d, 'default').engine.tick();
        expect(s.callsTo(STATE).map((c) => c.params.state)).toEqual(['1', '1']);
        expect((await d.store.list({ limit: 2 })).map((e) => e.decision)).toEqual(['executed', 'failed']);
        expect(s.state.firewallSetting('198.18.0.1').state).toBe('1');
        expect(await seriesValue(d.registry, 'baremetal_action_pending', { action: 'firewall_state' })).toBe(0);
      },
    },
    {
      name: 'powercycle act_then_hang past the timeout → unknown, a new alert 10 s later → cooldown, simulator recorded exactly one powercycle',
      run: async () => {
        const { daemon: d, sim: s, clock } = await start();
        s.setFaults({ mode: 'act_then_hang', hangMs: 30_000, paths: [POWERCYCLE] });
        const first = await post(d, '/api/v1/alertmanager', alert('2026-11-21T11:59:00Z'));
        expect(first.json().results[0]).toMatchObject({
          decision: 'unknown',
          message: expect.stringContaining('timed out'),
        });
        clock.now += 10_000;
        const second = await post(d, '/api/v1/alertmanager', alert('2026-11-21T12:00:05Z'));
        expect(second.json().results[0]).toMatchObject({ decision: 'cooldown' });
        expect(s.callsTo(POWERCYCLE)).toHaveLength(1);
        expect(
          await seriesValue(d.registry, 'baremetal_action_requests_total', {
            action: 'powercycle',
            decision: 'unknown',
          }),
        ).toBe(1);
      },
    },
    {
      name: 'Idempotency-Key reused for another target → 422',
      run: async () => {
        const { daemon: d, sim: s } = await start();
        const key = { 'idempotency-key': 'retry-7' };
        expect((await post(d, '/api/v1/actions/poweroff', { server_id: '100001' }, key)).json()).toMatchObject({
          decision: 'executed',
        });
        const again = await post(d, '/api/v1/actions/poweroff', { server_id: '100001' }, key);
        expect([again.statusCode, again.json().decision]).toEqual([200, 'duplicate']);
        const other = await post(d, '/api/v1/actions/poweroff', { server_id: '100002' }, key);
        expect(other.statusCode).toBe(422);
        expect(other.json()).toMatchObject({
          code: 'BM_ERR_IDEMPOTENCY_MISMATCH',
          error: 'Unprocessable Entity',
          message: expect.stringContaining('already used for a different request'),
        });
        const otherAction = await post(d, '/api/v1/actions/poweron', { server_id: '100001' }, key);
        expect(otherAction.statusCode).toBe(422);
        expect(s.callsTo('/api/v1/dedicated/poweroff')).toHaveLength(1);
        expect(s.callsTo('/api/v1/dedicated/poweron')).toHaveLength(0);
      },
    },
  ])('$name', async ({ run }) => {
    await run();
  });
});

describe('a broken journal degrades, it does not kill', () => {
  it.each([
    {
      name: 'journal garbage',
      prepare: (p: string) => writeFileSync(p, 'garbage, not SQLite\n'.repeat(64)),
      reason: /not a SQLite database/,
    },
    { name: 'zero-length journal', prepare: (p: string) => writeFileSync(p, ''), reason: /empty \(zero length\)/ },
    {
      name: 'unwritable journal path (a directory in its place)',
      prepare: (p: string) => mkdirSync(p),
      reason: /cannot open the journal/,
    },
  ])(
    '$name → daemon runs, /metrics 200, /readyz 503 naming the journal, actions 503, file unchanged',
    async ({ prepare, reason }) => {
      let before: Buffer | string = 'directory';
      const {
        daemon: d,
        sim: s,
        log,
        stateDir,
      } = await start((dir) => {
        const path = join(dir, 'journal.db');
        prepare(path);
        try {
          before = readFileSync(path);
        } catch {
          before = 'directory';
        }
      });
      expect(
        log.lines.some(
          (l) => l.includes('"level":"error"') && l.includes('remediation disabled: the journal is unavailable'),
        ),
      ).toBe(true);
      const metrics = await d.app.inject({ method: 'GET', url: '/metrics' });
      expect(metrics.statusCode).toBe(200);
      expect(metrics.body).toContain('baremetal_journal_up 0');
      expect(metrics.body).toMatch(/baremetal_servers\{account="default"\} \d/);
      const ready = await d.app.inject({ method: 'GET', url: '/readyz' });
      expect(ready.statusCode).toBe(503);
      expect(ready.json().reasons.join('\n')).toMatch(/the journal is unavailable \(remediation disabled\)/);
      expect(ready.json().reasons.join('\n')).toMatch(reason);
      for (const res of [
        await post(d, '/api/v1/actions/powercycle', { server_id: '100001' }),
        await post(d, '/api/v1/alertmanager', alert('2026-11-21T11:59:00Z')),
        await d.app.inject({ method: 'GET', url: '/api/v1/actions', headers: auth }),
        await d.app.inject({ method: 'GET', url: '/api/v1/servers/100001/console.jnlp', headers: auth }),
      ]) {
        expect(res.statusCode).toBe(503);
        expect(res.json().message).toMatch(reason);
      }
      expect((await d.app.inject({ method: 'GET', url: '/' })).statusCode).toBe(200);
      expect(s.callsTo(POWERCYCLE)).toHaveLength(0);
      const after = (() => {
        try {
          return readFileSync(join(stateDir, 'journal.db'));
        } catch {
          return 'directory';
        }
      })();
      expect(after).toEqual(before);
    },
  );
});

describe('the console download', () => {
  it.each([
    { name: 'a listed server: the XML, journaled executed', serverId: '100001', status: 200, decision: 'executed' },
    {
      name: 'an unknown server: 404, journaled denied',
      serverId: '999999',
      status: 404,
      decision: 'denied_unknown_target',
    },
  ])('$name', async ({ serverId, status, decision }) => {
    const { daemon: d, sim: s } = await start();
    const res = await d.app.inject({ method: 'GET', url: `/api/v1/servers/${serverId}/console.jnlp`, headers: auth });
    expect(res.statusCode).toBe(status);
    if (status === 200) expect(res.body).toContain('<jnlp');
    expect((await d.store.list({ limit: 1 }))[0]).toMatchObject({
      source: 'operator',
      action: 'console',
      serverId,
      decision,
    });
    expect(s.callsTo('/api/v1/dedicated/console')).toHaveLength(status === 200 ? 1 : 0);
  });

  it('a failing upstream: 502, journaled failed', async () => {
    const { daemon: d, sim: s } = await start();
    s.setFaults({ errorRate: 1, paths: ['/api/v1/dedicated/console'] });
    const res = await d.app.inject({ method: 'GET', url: '/api/v1/servers/100001/console.jnlp', headers: auth });
    expect(res.statusCode).toBe(502);
    expect((await d.store.list({ limit: 1 }))[0]).toMatchObject({
      action: 'console',
      decision: 'failed',
      upstreamOutcome: 'BM_ERR_API',
    });
  });
});

describe('an unknown account in a query (issue 19)', () => {
  it.each([
    { name: 'GET /api/v1/actions', url: '/api/v1/actions?account=nobody', headers: auth },
    { name: 'GET /api/v1/attacks', url: '/api/v1/attacks?account=nobody', headers: {} },
  ])('$name → 400 like the POST endpoints, naming the account', async ({ url, headers }) => {
    const { daemon: d } = await start();
    await post(d, '/api/v1/actions/poweroff', { server_id: '100001' });
    const post400 = await post(d, '/api/v1/actions/poweroff', { account: 'nobody', server_id: '100001' });
    const res = await d.app.inject({ method: 'GET', url, headers });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({
      code: post400.json().code,
      error: post400.json().error,
      message: 'querystring/account: unknown account "nobody" (configured: default)',
    });
    // The configured account is still served.
    const known = await d.app.inject({ method: 'GET', url: url.replace('nobody', 'default'), headers });
    expect(known.statusCode).toBe(200);
  });
});

describe('a demoted leader (issue 19)', () => {
  it('stopping the engine (what demotion does) aborts its tick: the change in flight finishes, no further one is sent', async () => {
    const { daemon: d, sim: s, clock } = await start();
    const targets = [
      ['100001', '198.18.0.1'],
      ['100001', '198.18.0.2'],
      ['100002', '198.18.0.3'],
    ] as const;
    // Each IP: state 1 is sent, state 0 inside the 2-minute window waits as a pending change.
    for (const [server_id, ip] of targets)
      for (const state of ['1', '0']) await post(d, '/api/v1/actions/firewall-state', { server_id, ip, state });
    expect(s.callsTo(STATE)).toHaveLength(3);
    clock.now += 2 * MIN;
    s.setFaults({ latencyMs: 200 });
    const tick = accountOf(d, 'default').engine.tick();
    await vi.waitFor(() => expect(s.callsTo(STATE)).toHaveLength(4), { timeout: 5000, interval: 5 });
    await accountOf(d, 'default').engine.stop();
    await tick;
    expect(s.callsTo(STATE)).toHaveLength(4);
    // One pending change was decided and sent; the other two were never decided on this replica.
    const rows = (await d.store.list({ limit: 50 })).filter((e) => e.source === 'pending');
    expect(rows).toHaveLength(1);
    expect(rows[0]!.decision).not.toBe('executing');
  });
});

describe('one alert delivered to two replicas inside a cooldown (issue 19)', () => {
  /** The request an alert instance (its startsAt) makes, as the webhook route builds it (rules.ts). */
  const alertRequest = (startsAt: string): ActionRequest =>
    powerRequest({
      source: 'alert',
      alert: { alertname: 'BaremetalServerUnreachable', fingerprint: 'a1b2c3d4e5f60718', startsAt },
      idempotencyKey: `alert:a1b2c3d4e5f60718:${startsAt}:firing:powercycle`,
    });

  it('is journaled once as the decision and once as duplicate; after the cooldown it acts', async () => {
    const h = await engineHarness();
    // A second replica: its own engine and metrics over the same state store, client and server list.
    const replica = new RemediationEngine({
      firewallPeriodMs: FIREWALL_PERIOD_MS,
      account: 'default',
      store: h.journal,
      client: h.client,
      metrics: freshMetrics().metrics,
      logger: h.log.logger,
      targets: simulatorTargets(h.sim),
      config: h.config,
      now: () => h.clock.now,
    });
    await replica.ready;
    expect((await h.engine.request(alertRequest('2026-11-21T11:50:00Z'))).decision).toBe('executed');
    h.clock.now += MIN;
    // A new instance of the alert inside the 30-minute cooldown, delivered to both replicas.
    const later = alertRequest('2026-11-21T12:00:30Z');
    expect((await h.engine.request(later)).decision).toBe('cooldown');
    expect(await replica.request(later)).toMatchObject({
      decision: 'duplicate',
      message: expect.stringContaining('in this cooldown'),
    });
    // The first instance again, on the other replica: a duplicate as before.
    expect((await replica.request(alertRequest('2026-11-21T11:50:00Z'))).decision).toBe('duplicate');
    expect((await h.journal.list({ limit: 10 })).map((e) => e.decision)).toEqual([
      'duplicate',
      'duplicate',
      'cooldown',
      'executed',
    ]);
    // Once the cooldown is over the same alert, still firing and delivered again, acts.
    h.clock.now += 30 * MIN;
    expect((await replica.request(later)).decision).toBe('executed');
    expect(h.sim.callsTo(POWERCYCLE)).toHaveLength(2);
    await replica.stop();
  });
});
