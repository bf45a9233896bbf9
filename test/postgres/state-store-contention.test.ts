/**
 * Exactly once under contention (issue 10), on both backends: two state stores on one database (two SQLite
 * connections on one file, two PostgreSQL pools) with a remediation engine each, one simulator as the upstream
 * both call. Whatever the interleaving, one alert makes one call, one IP's firewall change one call, and a budget
 * of N shared by both engines allows at most N.
 */
import { afterEach, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config/types.js';
import { RemediationEngine } from '../../src/remediation/engine.js';
import { startSimulator, type Simulator } from '../../src/simulator/server.js';
import { UpstreamClient } from '../../src/upstream/client.js';
import { captureLogger } from '../helpers/logger.js';
import { freshMetrics } from '../helpers/metrics.js';
import {
  firewallRequest,
  powerRequest,
  simulatorTargets,
  TOKEN,
  FIREWALL_PERIOD_MS,
  SAFETY_WITHOUT_ATTACK_GUARD,
} from '../helpers/remediation.js';
import { backends, type TestDatabase } from '../helpers/store-backends.js';

const closing: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

/** Two engines ("replicas") on two stores of one fresh database, one simulator with `servers` servers. */
async function twoReplicas(db: TestDatabase, remediation: Partial<Config['remediation']>, servers = 3) {
  const clock = { now: Date.UTC(2026, 10, 21, 12) };
  const sim: Simulator = await startSimulator({ apiKey: 'k', servers, attackRate: 0, now: () => clock.now });
  closing.push(() => sim.close());
  const config: Config['remediation'] = {
    dryRun: false,
    journalRetentionMs: 30 * 86_400_000,
    retireAfterMs: 86_400_000,
    budgetPerHour: 100,
    approvalTimeoutMs: 15 * 60_000,
    maxAlerts: 1000,
    bearerTokens: [TOKEN],
    basicAuthUsers: {},
    principals: [],
    rules: [],
    safety: SAFETY_WITHOUT_ATTACK_GUARD,
    ...remediation,
  };
  const engines: RemediationEngine[] = [];
  for (let i = 0; i < 2; i++) {
    const store = await db.open();
    const client = new UpstreamClient({ baseUrl: sim.url, apiKey: 'k', timeoutMs: 5000, concurrency: 8, retries: 0 });
    closing.push(() => client.close());
    const engine = new RemediationEngine({
      firewallPeriodMs: FIREWALL_PERIOD_MS,
      account: 'default',
      store: store,
      client,
      metrics: freshMetrics().metrics,
      logger: captureLogger().logger,
      targets: simulatorTargets(sim),
      config,
      now: () => clock.now,
    });
    closing.push(() => engine.stop());
    await engine.ready;
    engines.push(engine);
  }
  return { sim, engines, clock };
}

describe.each(backends())('exactly once across two replicas on $name', (backend) => {
  it.skipIf(backend.skip !== undefined)(
    '50 parallel deliveries of one alert split across both: one upstream call',
    async () => {
      const { sim, engines } = await twoReplicas(await backend.fresh(), {});
      const key = 'alert:a1b2c3d4e5f60718:2026-11-21T12:00:00Z:firing:powercycle';
      const results = await Promise.all(
        Array.from({ length: 50 }, (_, i) =>
          engines[i % 2]!.request(powerRequest({ source: 'alert', idempotencyKey: key })),
        ),
      );
      expect(sim.callsTo('/api/v1/dedicated/powercycle')).toHaveLength(1);
      const decisions = results.map((r) => r.decision);
      expect(decisions.filter((d) => d === 'executed')).toHaveLength(1);
      expect(decisions.filter((d) => d === 'duplicate')).toHaveLength(49);
    },
  );

  it.skipIf(backend.skip !== undefined)(
    '20 parallel firewall changes of one IP with different keys: one call, the rest deferred or duplicate',
    async () => {
      const { sim, engines } = await twoReplicas(await backend.fresh(), {});
      const results = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          engines[i % 2]!.request(firewallRequest('1', { idempotencyKey: `k${i}` })),
        ),
      );
      expect(sim.callsTo('/api/v1/dedicated/firewall/state')).toHaveLength(1);
      expect(results.filter((r) => r.decision === 'executed')).toHaveLength(1);
      expect(results.every((r) => ['executed', 'deferred', 'duplicate'].includes(r.decision))).toBe(true);
    },
  );

  it.skipIf(backend.skip !== undefined)(
    'a budget of 3 shared by both under a burst of 10 power cycles on 10 servers: 3 calls',
    async () => {
      // The budget is the subject: a breaker wide enough for the burst.
      const safety = {
        ...SAFETY_WITHOUT_ATTACK_GUARD,
        circuitBreaker: { windowMs: 900_000, maxServers: 10, maxFraction: 0 },
      };
      const { sim, engines } = await twoReplicas(await backend.fresh(), { budgetPerHour: 3, safety }, 10);
      const ids = [...sim.state.servers.keys()];
      expect(ids).toHaveLength(10);
      const results = await Promise.all(
        ids.map((serverId, i) => engines[i % 2]!.request(powerRequest({ serverId, source: 'alert' }))),
      );
      expect(sim.callsTo('/api/v1/dedicated/powercycle')).toHaveLength(3);
      expect(results.filter((r) => r.decision === 'executed')).toHaveLength(3);
      expect(results.filter((r) => r.decision === 'denied_budget')).toHaveLength(7);
    },
  );
});
