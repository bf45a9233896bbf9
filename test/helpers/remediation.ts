import { afterEach } from 'vitest';
import { JournalError } from '../../src/errors.js';
import { buildApp } from '../../src/http/app.js';
import { GraphStore } from '../../src/graphs/store.js';
import { ExpositionCache } from '../../src/metrics/exposition-cache.js';
import { type Config, DEFAULT_SAFETY, type RemediationRule } from '../../src/config/types.js';
import { Journal } from '../../src/store/sqlite/journal.js';
import { sqliteStore, type SqliteStore } from '../../src/store/sqlite/store.js';
import type { StateStore } from '../../src/store/store.js';
import { type EngineDeps, RemediationEngine } from '../../src/remediation/engine.js';
import type { ActionRequest, TargetDirectory } from '../../src/remediation/types.js';
import { startSimulator, type Simulator } from '../../src/simulator/server.js';
import { UpstreamClient } from '../../src/upstream/client.js';
import { captureLogger } from './logger.js';
import type { Logger } from 'pino';
import { bindStateFamilies } from '../../src/collectors/families.js';
import { DesiredRows } from '../../src/remediation/desired-rows.js';
import { freshMetrics, stateAccount } from './metrics.js';
import { tempDir } from './tmp.js';

export const TOKEN = 'test-bearer-token-0123456789';

const MIN = 60_000;

/** A power-cycle request on server 100001 of the default account (an operator's unless `over` says). */
export const powerRequest = (over: Partial<ActionRequest> = {}): ActionRequest => ({
  account: 'default',
  source: 'operator',
  principal: 'ops',
  action: 'powercycle',
  serverId: '100001',
  cooldownMs: 30 * MIN,
  requireOwnedIp: true,
  ...over,
});

/** An alert's firewall-state request for 198.18.0.1 of server 100001. */
export const firewallRequest = (value: '0' | '1', over: Partial<ActionRequest> = {}): ActionRequest => ({
  account: 'default',
  source: 'alert',
  principal: 'alertmanager',
  action: 'firewall_state',
  serverId: '100001',
  ip: '198.18.0.1',
  value,
  cooldownMs: 2 * MIN,
  requireOwnedIp: true,
  ...over,
});

/**
 * The remediation block of a live (not dry-run) daemon, for the harness (with `remediationAuth`): one rule,
 * BaremetalServerUnreachable → powercycle with a 30m cooldown.
 */
export const POWERCYCLE_REMEDIATION = {
  dry_run: false,
  rules: [
    { alertname: 'BaremetalServerUnreachable', action: 'powercycle', server_id_label: 'server_id', cooldown: '30m' },
  ],
};

/**
 * `remediation.safety` for engine tests about something else: the defaults, without the attack guard (these
 * engines check targets against the simulator's list, which has no attack state: every power action would
 * be denied as unknown). The attack guard's own tests run the real poller (remediation-guards.test.ts).
 */
export const SAFETY_WITHOUT_ATTACK_GUARD: Config['remediation']['safety'] = {
  ...DEFAULT_SAFETY,
  denyPowerWhenAttacked: false,
};

/** The period of the default `schedules.firewall` (every minute), ms: what test engines are given. */
export const FIREWALL_PERIOD_MS = () => 60_000;

/** A rule with the defaults the config loader fills in. */
export function rule(
  overrides: Partial<RemediationRule> & Pick<RemediationRule, 'alertname' | 'action'>,
): RemediationRule {
  return {
    matchers: {},
    accountLabel: 'account',
    serverIdLabel: 'server_id',
    ipLabel: 'ip',
    firingState: '1',
    resolvedState: '0',
    holdMs: 0,
    cooldownMs: overrides.action === 'firewall_state' ? 120_000 : 1_800_000,
    requireOwnedIp: true,
    requireApproval: false,
    ...overrides,
  };
}

/** The inventory as the simulator has it (what the account state would hold after a servers poll). */
export function simulatorTargets(sim: Simulator, known = true): TargetDirectory {
  return {
    serversKnown: known,
    hasServer: (id) => sim.state.servers.has(id),
    ownsIp: (id, ip) => sim.state.servers.get(id)?.ips.includes(ip) ?? false,
  };
}

/** The SQLite state store on the journal at `path` (created; `:memory:` by default). Throws JournalError. */
export function openTestStore(path = ':memory:'): SqliteStore {
  return sqliteStore(Journal.open(path), path, tempDir());
}

/**
 * `inner` with its methods `keys` failing with a JournalError while `fail(call)` says so (`call`: how many calls
 * of those methods were made so far, 1 for the first) — the journal failing at one step of a tick, as a stop
 * between two writes would leave it. Every other method is `inner`'s own.
 */
export function failingStore<S extends object>(
  inner: S,
  keys: readonly (keyof S & string)[],
  fail: (call: number) => boolean,
): S {
  let calls = 0;
  return new Proxy(inner, {
    get(target, key, receiver) {
      const value = Reflect.get(target, key, receiver);
      if (typeof value !== 'function') return value;
      if (!(keys as readonly PropertyKey[]).includes(key)) return value.bind(target);
      return async (...args: unknown[]) => {
        if (fail(++calls)) throw new JournalError('journal write or read failed: blip');
        return (value as (...a: unknown[]) => unknown).apply(target, args);
      };
    },
  });
}

/**
 * An engine on a fresh journal (a SQLite path, or a state store of either backend), talking to a simulator, with
 * one clock for both. Everything is closed after the test.
 */
export async function engineHarness(
  remediation: Partial<Config['remediation']> = {},
  journalPath: string | StateStore = ':memory:',
  clientTimeoutMs = 2000,
  /** more of the engine's dependencies (e.g. planted `guards`) */
  engineDeps: Partial<EngineDeps> = {},
) {
  const clock = { now: Date.UTC(2026, 10, 21, 12) };
  const sim = await startSimulator({ apiKey: 'k', servers: 3, attackRate: 0, now: () => clock.now });
  const client = new UpstreamClient({
    baseUrl: sim.url,
    apiKey: 'k',
    timeoutMs: clientTimeoutMs,
    concurrency: 4,
    retries: 0,
  });
  const journal = typeof journalPath === 'string' ? openTestStore(journalPath) : journalPath;
  const { registry, metrics } = freshMetrics();
  // The desired firewall state series are the engine's rows, as the daemon binds them (daemon/start.ts).
  const desired = new DesiredRows();
  const account = { ...stateAccount('default', []), desired };
  bindStateFamilies(metrics, () => [account]);
  const log = captureLogger();
  const config: Config['remediation'] = {
    dryRun: false,
    journalRetentionMs: 30 * 86_400_000,
    retireAfterMs: 86_400_000,
    budgetPerHour: 10,
    approvalTimeoutMs: 15 * MIN,
    maxAlerts: 1000,
    bearerTokens: [TOKEN],
    basicAuthUsers: {},
    principals: [],
    rules: [],
    safety: SAFETY_WITHOUT_ATTACK_GUARD,
    ...remediation,
  };
  const engine = new RemediationEngine({
    firewallPeriodMs: FIREWALL_PERIOD_MS,
    account: 'default',
    store: journal,
    client,
    metrics,
    logger: log.logger,
    targets: simulatorTargets(sim),
    config,
    desired,
    now: () => clock.now,
    ...engineDeps,
  });
  afterEach(async () => {
    await engine.stop();
    await journal.close();
    await client.close();
    await sim.close();
  });
  await engine.ready;
  return { clock, sim, client, journal, registry, metrics, engine, config, log };
}

/** The daemon's app over an engine harness: the remediation routes of its one account, `default`; `logger` its requests'. */
export function remediationApp(h: Awaited<ReturnType<typeof engineHarness>>, logger: Logger = captureLogger().logger) {
  return buildApp({
    logger,
    exposition: new ExpositionCache({ registry: h.registry }),
    graphStores: new Map([['default', new GraphStore(tempDir(), 'default')]]),
    graphMaxWidth: 2000,
    remediation: {
      engines: new Map([['default', h.engine]]),
      store: h.journal,
      metrics: h.metrics,
      config: h.config,
    },
  });
}

/**
 * An Alertmanager webhook payload (version 4) with one firing BaremetalServerUnreachable alert for server
 * `serverId` (default 100002), started at `startsAt` (RFC 3339), with `fingerprint`.
 */
export const unreachableAlert = (startsAt: string, fingerprint = 'a1b2c3d4e5f60718', serverId = '100002') => ({
  version: '4',
  status: 'firing',
  receiver: 'baremetal',
  alerts: [
    {
      status: 'firing',
      labels: { alertname: 'BaremetalServerUnreachable', server_id: serverId },
      annotations: {},
      startsAt,
      endsAt: '0001-01-01T00:00:00Z',
      fingerprint,
    },
  ],
});
