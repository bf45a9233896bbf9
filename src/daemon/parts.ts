/**
 * The builders of the daemon's parts, which the composition root (start.ts) calls in order: each account's
 * runtime, the remediation engines, the exposition cache, what the HTTP app serves, and the secrets every
 * upstream reply is scrubbed of.
 */
import type { Logger } from 'pino';
import type { Registry } from 'prom-client';
import { databaseSecrets } from '../config/database-url.js';
import { DEFAULT_ACCOUNT } from '../config/schema.js';
import type { Config } from '../config/types.js';
import { localGraphs } from '../graphs/source.js';
import { discoverySource } from '../http/discovery-source.js';
import { remediationPrincipals } from '../http/principals.js';
import { statusViewOf } from '../http/status-view.js';
import { createdNames, leaderOnlyNames, type Metrics } from '../metrics/definitions.js';
import { ExpositionCache } from '../metrics/exposition-cache.js';
import { schedulePeriodMs } from '../polls/poll.js';
import { bindStateFamilies } from '../collectors/families.js';
import { RemediationEngine } from '../remediation/engine.js';
import type { StatusReader } from '../remediation/verify.js';
import type { SilenceWriter } from '../remediation/silences.js';
import { leaderOrSnapshot } from '../remediation/targets.js';
import type { OpenedStore } from '../store/open.js';
import type { StateStore } from '../store/store.js';
import { VERSION } from '../version.js';
import { startAccount, type AccountDeps, type AccountRuntime } from './accounts.js';
import { readinessOf } from './readiness.js';
import type { Replication } from './replication.js';

/**
 * What the HTTP app serves of the daemon's parts: the graph images (the database's with replicas, else each
 * account's store: `/graphs` and the status page show the same), readiness, the status page, attacks, discovery
 * and the remediation endpoints.
 */
export function servedParts(
  config: Config,
  p: {
    accounts: ReadonlyMap<string, AccountRuntime>;
    engines: Map<string, RemediationEngine>;
    store: OpenedStore;
    metrics: Metrics;
    replication: Replication;
    now: () => number;
  },
) {
  const { accounts, store, replication } = p;
  const { shared, leading, leads } = replication;
  const graphStores = new Map([...accounts].map(([name, account]) => [name, account.graphStore]));
  const graphSource = shared ? shared.graphs : localGraphs(graphStores);
  return {
    graphStores,
    graphMaxWidth: config.graphs.maxWidth,
    graphSource,
    readiness: readinessOf({
      accounts,
      leads,
      electionProblem: replication.problem,
      disagreement: replication.disagreement,
      store,
      firewallPolled: () => config.collectors.firewall,
    }),
    statusView: statusViewOf({
      version: VERSION,
      accounts,
      store,
      graphs: graphSource,
      ...(shared ? { replicas: { leading, directory: shared.directory } } : {}),
      approvalTimeoutMs: config.remediation.approvalTimeoutMs,
      now: p.now,
    }),
    attacks: new Map([...accounts].map(([name, runtime]) => [name, runtime.state.attacks])),
    discovery: discoverySource(
      new Map([...accounts].map(([name, runtime]) => [name, runtime.state])),
      shared ? { leads, directory: (account: string) => shared.directory.snapshot(account) } : undefined,
    ),
    remediation: { engines: p.engines, store, metrics: p.metrics, config: config.remediation },
    authLimits: config.web.authLimits,
    authRefusals: p.metrics.httpAuthRefusals,
  };
}

/**
 * The exposition cache; a follower's leaves out what only the polling replica knows (metrics/definitions.ts), and
 * with shared accounts a replica's leaves out those series of the accounts another replica leads.
 */
export function exposeMetrics(
  registry: Registry,
  metrics: Metrics,
  o: {
    now: () => number;
    leading: () => boolean;
    led: () => ReadonlySet<string> | undefined;
    store: StateStore;
    /** the configured account names (baremetal_leader{account} with the accounts shared) */
    accounts: readonly string[];
  },
): ExpositionCache {
  const leaderOnly = leaderOnlyNames(metrics);
  return new ExpositionCache({
    registry,
    now: o.now,
    include: (name) => o.leading() || !leaderOnly.has(name),
    accountSeries: { names: leaderOnly, led: o.led },
    created: createdNames(metrics),
    beforeRender: (ms) => {
      metrics.renderedAt.set(ms / 1000);
      metrics.journalUp.set(o.store.healthy() ? 1 : 0);
      // With the accounts shared, baremetal_leader{account} is what this replica leads as it renders (its
      // leases' trust, read synchronously), like the account series the rendering keeps: a process woken from
      // a freeze past its leases does not report the leadership it had.
      const led = o.led();
      if (led) for (const account of o.accounts) metrics.leader.set({ account }, led.has(account) ? 1 : 0);
    },
  });
}

/**
 * Binds the families rendered from state (collectors/families.ts) to each account's state, graph images and
 * desired firewall state rows: the polled families' series are the accounts' state, walked at each rendering.
 */
export function bindAccountFamilies(metrics: Metrics, accounts: ReadonlyMap<string, AccountRuntime>): void {
  bindStateFamilies(metrics, () =>
    [...accounts.values()].map(({ name, state, graphStore, desired }) => ({
      name,
      state,
      graphs: graphStore,
      desired,
    })),
  );
}

/** Each configured account's runtime, by name, in config order; each loads what it left under state_dir. */
export async function startAccounts(config: Config, deps: AccountDeps): Promise<Map<string, AccountRuntime>> {
  const names = new Set(config.accounts.map((a) => a.name));
  const accounts = new Map<string, AccountRuntime>();
  for (const account of config.accounts) {
    const legacyGraphs = account.name === DEFAULT_ACCOUNT && !names.has('dedicated');
    accounts.set(account.name, await startAccount(account, deps, { legacyGraphs }));
  }
  return accounts;
}

/**
 * One remediation engine per account — targets are (account, server_id) — with that account's client, server
 * list and metrics, over the one journal (one transaction per decision; cooldown, budget and desired state per
 * account). Their counters are read back from the journal before the first exposition.
 */
export async function startEngines(
  config: Config,
  d: {
    accounts: ReadonlyMap<string, AccountRuntime>;
    store: OpenedStore;
    replication: Replication;
    logger: Logger;
    now: () => number;
    exposition: ExpositionCache;
    /** the one Alertmanager client (remediation.alertmanager), read by the outage gate */
    alertmanager?: (StatusReader & SilenceWriter) | undefined;
  },
): Promise<Map<string, RemediationEngine>> {
  const { accounts, store, replication, logger } = d;
  const shared = replication.shared;
  const engines = new Map(
    [...accounts].map(([name, runtime]) => [
      name,
      new RemediationEngine({
        account: name,
        store,
        client: runtime.client,
        metrics: runtime.metrics,
        logger: accounts.size > 1 ? logger.child({ account: name }) : logger,
        // A follower checks targets against the list the leader published.
        targets: shared
          ? leaderOrSnapshot(
              runtime.state,
              shared.directory.snapshot(name),
              () => replication.leads(name),
              () => replication.ledSince(name),
            )
          : runtime.state,
        config: config.remediation,
        desired: runtime.desired,
        alertmanager: d.alertmanager,
        // Read per decision: a reload may change the schedule.
        firewallPeriodMs: () => schedulePeriodMs(config.schedules.firewall),
        now: d.now,
        // A decision shows in /metrics within a second; a burst of alerts costs one rendering.
        onDecision: () => d.exposition.renderSoon(1000),
        // A write's call lasts at most two of the account's upstream.timeout (its budget token, then its one
        // attempt: upstream/client.ts); a minute more and a row still `executing` was left behind. Shared by
        // replicas, it may be another replica's call in flight until then; in one process, it is a row whose
        // completion could not be written.
        ...(store.kind === 'postgres'
          ? { interruptedAfterMs: writeBoundMs(config, name) }
          : { stuckAfterMs: writeBoundMs(config, name) }),
      }),
    ]),
  );
  // A store still opening (an unreachable PostgreSQL) reads them back when it opens.
  if (store.unavailable === undefined) await Promise.all([...engines.values()].map((e) => e.ready));
  const { bearerTokens, basicAuthUsers } = config.remediation;
  const deprecated = bearerTokens.length + Object.keys(basicAuthUsers).length;
  if (deprecated > 0)
    logger.warn(
      {
        principals: remediationPrincipals(config.remediation)
          .slice(-deprecated)
          .map((p) => p.name),
      },
      'remediation.auth.bearer_token_files and basic_auth_users are deprecated: each is a principal with every role (webhook, operator, reader); give each consumer its own entry in remediation.auth.principals',
    );
  if (remediationPrincipals(config.remediation).length === 0)
    logger.warn(
      'remediation is disabled: no credentials configured (remediation.auth); the action endpoints answer 403',
    );
  else
    logger.info(
      {
        dry_run: config.remediation.dryRun,
        rules: config.remediation.rules.length,
        budget_per_hour: config.remediation.budgetPerHour,
        accounts: accounts.size,
      },
      'remediation enabled',
    );
  return engines;
}

/**
 * Every secret the daemon knows besides an account's own key: the other accounts' keys, the bearer tokens,
 * the database password and settings. An upstream reply that echoes one of them is scrubbed of it too.
 */
export function knownSecrets(config: Config): string[] {
  return [
    ...config.accounts.map((a) => a.upstream.apiKey),
    ...config.remediation.bearerTokens,
    ...config.remediation.principals.flatMap((p) => (p.bearerToken === undefined ? [] : [p.bearerToken])),
    ...config.web.auth.bearerTokens,
    ...alertmanagerSecrets(config),
    ...(config.database.kind === 'postgres' ? databaseSecrets(config.database.url) : []),
  ];
}

/** The Alertmanager client's credentials (remediation.alertmanager.http_config), if any. */
const alertmanagerSecrets = (config: Config): string[] => {
  const am = config.remediation.alertmanager;
  return [am?.authorization?.credentials, am?.basicAuth?.password].filter((s): s is string => s !== undefined);
};

/** How long a row of `account` may stay `executing` while its call can still be in flight, ms (see startEngines). */
const writeBoundMs = (config: Config, account: string): number =>
  2 * config.accounts.find((a) => a.name === account)!.upstream.timeoutMs + 60_000;
