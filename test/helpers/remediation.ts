import { join } from 'node:path';
import { afterEach } from 'vitest';
import { buildConfig } from '../../src/config/load.js';
import type { Config, RemediationRule } from '../../src/config/schema.js';
import { Journal } from '../../src/store/sqlite/journal.js';
import { sqliteStore, type SqliteStore } from '../../src/store/sqlite/store.js';
import { RemediationEngine } from '../../src/remediation/engine.js';
import type { ActionRequest, TargetDirectory } from '../../src/remediation/types.js';
import { startSimulator, type Simulator } from '../../src/simulator/server.js';
import { UpstreamClient } from '../../src/upstream/client.js';
import { captureLogger } from './logger.js';
import { freshMetrics } from './metrics.js';
import { tempDir } from './tmp.js';

export const TOKEN = 'test-bearer-token-0123456789';

const MIN = 60_000;

/** A power-cycle request on server 100001 of the default account (an operator's unless `over` says). */
export const powerRequest = (over: Partial<ActionRequest> = {}): ActionRequest => ({
  account: 'default',
  source: 'operator',
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
  action: 'firewall_state',
  serverId: '100001',
  ip: '198.18.0.1',
  value,
  cooldownMs: 2 * MIN,
  requireOwnedIp: true,
  ...over,
});

/**
 * A live (not dry-run) daemon config against `simUrl` with key `k`, the token file `<stateDir>/token`, and one
 * rule: BaremetalServerUnreachable → powercycle with a 30m cooldown. `upstream` adds upstream keys.
 */
export function powercycleDaemonConfig(simUrl: string, stateDir: string, upstream: Record<string, unknown> = {}) {
  return buildConfig(
    {
      upstream: { base_url: simUrl, ...upstream },
      web: { listen_address: '127.0.0.1:0' },
      state_dir: stateDir,
      remediation: {
        dry_run: false,
        auth: { bearer_token_files: [join(stateDir, 'token')] },
        rules: [
          {
            alertname: 'BaremetalServerUnreachable',
            action: 'powercycle',
            server_id_label: 'server_id',
            cooldown: '30m',
          },
        ],
      },
    },
    { BAREMETAL_API_KEY: 'k' },
  );
}

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
    ...overrides,
  };
}

/** The inventory as the simulator has it (what the poller would report after a servers poll). */
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
 * An engine on a fresh journal, talking to a simulator, with one clock for both. Everything is closed
 * after the test.
 */
export async function engineHarness(
  remediation: Partial<Config['remediation']> = {},
  journalPath = ':memory:',
  clientTimeoutMs = 2000,
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
  const journal = openTestStore(journalPath);
  const { registry, metrics } = freshMetrics();
  const log = captureLogger();
  const config: Config['remediation'] = {
    dryRun: false,
    journalRetentionMs: 30 * 86_400_000,
    budgetPerHour: 10,
    bearerTokens: [TOKEN],
    basicAuthUsers: {},
    rules: [],
    ...remediation,
  };
  const engine = new RemediationEngine({
    account: 'default',
    journal,
    client,
    metrics,
    logger: log.logger,
    targets: simulatorTargets(sim),
    config,
    now: () => clock.now,
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
