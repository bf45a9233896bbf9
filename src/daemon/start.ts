/**
 * Builds the daemon's dependencies from a Config and starts it: registry and metrics, upstream client,
 * graph store, poll jobs and their schedule, the exposition cache and the HTTP app. The `run` and `demo` commands (cli/main.ts) call this;
 * integration tests call it too, with an injected logger and clock.
 */
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { Registry } from 'prom-client';
import type { Dispatcher } from 'undici';
import { buildApp } from '../http/app.js';
import { databaseSecrets } from '../config/database-url.js';
import { DEFAULT_ACCOUNT } from '../config/schema.js';
import type { Config } from '../config/types.js';
import { localGraphs } from '../graphs/source.js';
import { startAccount, type AccountDeps, type AccountRuntime } from './accounts.js';
import { leaderOrSnapshot } from '../remediation/targets.js';
import type { ElectionTimings, Role } from '../ha/role.js';
import { limitGraphDecoding } from '../graphs/image.js';
import { remediationPrincipals } from '../http/principals.js';
import { statusViewOf } from '../http/status-view.js';
import { discoverySource } from '../http/discovery-source.js';
import type { WebConfigFile } from '../http/web-config-reload.js';
import { openStore, type OpenedStore, type OpenStoreOptions } from '../store/open.js';
import type { PostgresStore } from '../store/postgres/store.js';
import type { StateStore } from '../store/store.js';
import { lockStateDir, type StateLock } from '../store/state-dir-lock.js';
import { createLogger } from '../logger.js';
import { RemediationEngine } from '../remediation/engine.js';
import { schedulePeriodMs } from '../polls/poll.js';
import type { ReloadResult } from '../config/reload.js';
import { readinessOf } from './readiness.js';
import { createReload } from './reload.js';
import { watchApiKeyFiles } from './api-key-files.js';
import { pollingDuties, Replication } from './replication.js';
import { listen, webDeps } from '../http/web-server.js';
import { createMetrics, createdNames, leaderOnlyNames, type Metrics } from '../metrics/definitions.js';
import { ExpositionCache } from '../metrics/exposition-cache.js';
import { VERSION } from '../version.js';

export interface DaemonOptions {
  logger?: Logger;
  /** ms since epoch; injectable for tests */
  now?: () => number;
  /** replaces the upstream Agent (tests: undici MockAgent) */
  dispatcher?: Dispatcher;
  /** start the cron schedule (default true; tests drive jobs by hand) */
  schedule?: boolean;
  /** run servers → firewall → graphs, catalog at start (default true) */
  initialPolls?: boolean;
  /** smallest delay before a read is retried, ms */
  retryMinDelayMs?: number;
  /** listen on config.web (default true) */
  listen?: boolean;
  /** how often pending firewall changes are checked, ms (default 1000) */
  remediationTickMs?: number;
  /** how often each `api_key_file` is checked for a change, ms (default 10 s) */
  keyFileIntervalMs?: number;
  /** `--web.config.file`: its TLS, headers and basic-auth users replace `web.tls` and `web.auth.basic_auth_users` */
  webConfig?: WebConfigFile;
  /** re-reads the config file through the same loader and flags (`reload()`); without it a reload fails */
  reloadConfig?: () => Promise<Config>;
  /** serve `POST /-/reload` (`--web.enable-lifecycle`) */
  lifecycle?: boolean;
  /** `--web.telemetry-path`, already validated (`validateTelemetryPath`); default `/metrics` */
  telemetryPath?: string;
  /** with PostgreSQL: the election's timings and how often the shared server directory is read, ms */
  ha?: ElectionTimings & { refreshMs?: number };
  /** PostgreSQL state store: retry and health-check intervals, pool limits (tests shorten them) */
  stateStore?: OpenStoreOptions['postgres'];
}

export interface Daemon {
  app: FastifyInstance;
  /** base URL the daemon listens on, when it listens */
  url: string;
  registry: Registry;
  metrics: Metrics;
  /** each account's runtime (client, poll jobs, graph store, metrics view), by name */
  accounts: Map<string, AccountRuntime>;
  /** each account's remediation engine (its client, server list and metrics), by name, over one journal */
  engines: Map<string, RemediationEngine>;
  /** the state store: SQLite, or PostgreSQL (`database.url`) */
  store: StateStore;
  exposition: ExpositionCache;
  /**
   * resolves when the initial polls have finished; with PostgreSQL at once (polls start on election:
   * see `role`)
   */
  ready: Promise<void>;
  /** whether this replica leads (polls and applies deferred firewall changes) */
  role: Role;
  /** with PostgreSQL: the state shared with the other replicas (server directory, graph images) */
  shared: PostgresStore['shared'] | undefined;
  /** re-reads the TLS files or the web-config file (SIGHUP); false without them or when reading failed */
  reloadTls(): Promise<boolean>;
  /**
   * SIGHUP and `POST /-/reload`: re-reads the config file and applies what can change safely
   * (config/reload.ts), and the web config (TLS files, `--web.config.file`); an invalid new file is refused
   * and the previous configuration stays in force. Reloads run one at a time.
   */
  reload(): Promise<ReloadResult>;
  /** stops the schedule, cancels poll runs in progress, closes HTTP and the upstream pool */
  stop(): Promise<void>;
}

export async function startDaemon(config: Config, options: DaemonOptions = {}): Promise<Daemon> {
  // One daemon per state_dir: two would act twice on one journal. Throws StateDirLockedError naming the holder.
  const lock = lockStateDir(config.stateDir);
  // libvips without its cache and thread pool, one image at a time (graphs/image.ts): process-wide.
  limitGraphDecoding();
  try {
    return await start(config, options, lock);
  } catch (error) {
    lock.release();
    throw error;
  }
}

/**
 * The configuration in force: a reload changes its reloadable parts in place, read by the poll jobs,
 * schedulers, engines and routes (a copy, so the caller's object is never changed).
 */
function configInForce(initial: Config): Config {
  const config = structuredClone(initial);
  // A compiled hostname pattern (re2js) does not survive the copy: each account keeps the caller's selectors
  // (never changed: a reload replaces the lists) in lists of its own.
  for (const [i, account] of config.accounts.entries()) {
    const { include, exclude } = initial.accounts[i]!.scope;
    account.scope = { include: [...include], exclude: [...exclude] };
  }
  return config;
}

async function start(initial: Config, options: DaemonOptions, lock: StateLock): Promise<Daemon> {
  const config = configInForce(initial);
  const logger = options.logger ?? createLogger(config.logLevel);
  const now = options.now ?? Date.now;
  const registry = new Registry();
  const metrics = createMetrics(registry, { defaultMetrics: true, version: VERSION });
  metrics.configReloadSuccessful.set(1);
  metrics.configReloadSuccessAt.set(now() / 1000);
  // Opened first: a journal that cannot be opened (corrupt, zero-length, unwritable; PostgreSQL unreachable)
  // disables remediation only; a SQLite file is left as it is for the operator to inspect. With PostgreSQL the
  // store's one pool also carries what the replicas share (server directory, graph images).
  const store = await openStore(config, {
    logger,
    postgres: {
      ...options.stateStore,
      ...(options.ha?.refreshMs !== undefined ? { refreshMs: options.ha.refreshMs } : {}),
    },
    ...(lock.problem
      ? { refuse: `state_dir is not writable, so it cannot be locked against a second daemon: ${lock.problem}` }
      : {}),
  });
  const replication = new Replication(config.database, store, logger);
  const { shared, leading } = replication;
  // Followers read the leader's server list once the schema is there.
  if (shared) void store.opened.then((open) => open && shared.directory.start());
  const exposition = exposeMetrics(registry, metrics, { now, leading, store });
  const accounts = await startAccounts(config, {
    metrics,
    logger,
    config,
    now,
    clientOptions: {
      secrets: knownSecrets(config),
      ...(options.retryMinDelayMs !== undefined ? { retryMinDelayMs: options.retryMinDelayMs } : {}),
      ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}),
    },
    onChange: () => exposition.markDirty(),
    onPollFinished: (account, job, outcome) => {
      exposition.renderSoon();
      const runtime = accounts.get(account);
      if (runtime) replication.published(runtime, job, outcome);
    },
    ...(shared ? { graphMirror: (account: string) => shared.graphs.mirror(account) } : {}),
    eventLedger: (account: string) => store.eventLedger(account),
  });
  const engines = await startEngines(config, { accounts, store, replication, logger, now, exposition });
  const web = await webDeps(config, options.webConfig);
  /**
   * Re-reads the TLS or web-config files: the listeners' once they listen. The one cycle of the construction:
   * the app serves `POST /-/reload`, whose reload re-reads the files held by the listeners around the app.
   * Before they listen there is nothing newer to read than what `webDeps` just read.
   */
  let reloadWeb: () => Promise<boolean> = async () => true;
  /** set by stop(): the initial polls start nothing more, a reload changes nothing */
  let stopping = false;
  const reload = createReload({
    config,
    reloadConfig: options.reloadConfig,
    reloadWeb: () => reloadWeb(),
    accounts,
    engines,
    metrics,
    markDirty: () => exposition.markDirty(),
    scopeApplied: (runtime) => {
      exposition.renderSoon();
      replication.published(runtime, 'servers', 'success');
    },
    logger,
    now,
    stopping: () => stopping,
  });
  const app = buildApp({
    ...servedParts(config, { accounts, engines, store, metrics, replication, now }),
    logger,
    exposition,
    ...web,
    ...(options.lifecycle ? { reload } : {}),
    ...(options.telemetryPath === undefined ? {} : { telemetryPath: options.telemetryPath }),
  });
  await exposition.render();
  exposition.start();
  const listeners = await listen(app, config, {
    logger,
    webConfig: options.webConfig,
    https: web.https,
    listen: options.listen !== false,
  });
  reloadWeb = listeners.reloadWeb;
  const keyFiles = watchApiKeyFiles({
    config,
    clients: accounts,
    metrics,
    markDirty: () => exposition.markDirty(),
    logger,
    now,
    ...(options.keyFileIntervalMs !== undefined ? { intervalMs: options.keyFileIntervalMs } : {}),
  });
  const { duties, firstPolls } = pollingDuties({
    accounts,
    engines,
    replication,
    store,
    logger,
    ...pick(options, ['initialPolls', 'schedule', 'remediationTickMs']),
    stopping: () => stopping,
  });
  // A role change shows in /metrics at once (baremetal_leader).
  const role = replication.elect(duties, { metrics, onChange: () => exposition.renderSoon() }, options.ha);
  return {
    app,
    url: listeners.url,
    registry,
    metrics,
    accounts,
    engines,
    store,
    exposition,
    // With replicas at once: polls start on election (see `role`).
    ready: shared ? Promise.resolve() : firstPolls,
    role,
    shared,
    reloadTls: listeners.reloadTls,
    reload,
    stop: async () => {
      stopping = true;
      keyFiles.stop();
      // Stops polling and the remediation tickers (cancelling runs in flight), then, with PostgreSQL, frees the
      // leader lock so that a follower takes over at once.
      await role.stop();
      exposition.stop();
      // Closing HTTP waits for requests in flight, webhooks with their upstream calls and journal writes.
      await listeners.close();
      await store.close();
      await Promise.all([...accounts.values()].map((account) => account.client.close()));
      lock.release();
    },
  };
}

/**
 * What the HTTP app serves of the daemon's parts: the graph images (the database's with replicas, else each
 * account's store: `/graphs` and the status page show the same), readiness, the status page, attacks, discovery
 * and the remediation endpoints.
 */
function servedParts(
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
  const { shared, leading } = replication;
  const graphStores = new Map([...accounts].map(([name, account]) => [name, account.graphStore]));
  const graphSource = shared ? shared.graphs : localGraphs(graphStores);
  return {
    graphStores,
    graphMaxWidth: config.graphs.maxWidth,
    graphSource,
    readiness: readinessOf({
      accounts,
      leading,
      electionProblem: replication.problem,
      store,
      firewallPolled: () => config.collectors.firewall,
    }),
    statusView: statusViewOf({
      version: VERSION,
      accounts,
      store,
      graphs: graphSource,
      ...(shared ? { replicas: { leading, directory: shared.directory } } : {}),
      now: p.now,
    }),
    attacks: new Map([...accounts].map(([name, runtime]) => [name, runtime.state.attacks])),
    discovery: discoverySource(
      new Map([...accounts].map(([name, runtime]) => [name, runtime.state])),
      shared ? { leading, directory: (account: string) => shared.directory.snapshot(account) } : undefined,
    ),
    remediation: { engines: p.engines, store, metrics: p.metrics, config: config.remediation },
  };
}

/** The options among `keys` that are set (exactOptionalPropertyTypes: an absent key stays absent). */
function pick<T extends object, K extends keyof T>(o: T, keys: K[]): Partial<Pick<T, K>> {
  return Object.fromEntries(keys.filter((k) => o[k] !== undefined).map((k) => [k, o[k]])) as Partial<Pick<T, K>>;
}

/** The exposition cache; a follower's leaves out what only the polling replica knows (metrics/definitions.ts). */
function exposeMetrics(
  registry: Registry,
  metrics: Metrics,
  o: { now: () => number; leading: () => boolean; store: StateStore },
): ExpositionCache {
  const leaderOnly = leaderOnlyNames(metrics);
  return new ExpositionCache({
    registry,
    now: o.now,
    include: (name) => o.leading() || !leaderOnly.has(name),
    created: createdNames(metrics),
    beforeRender: (ms) => {
      metrics.renderedAt.set(ms / 1000);
      metrics.journalUp.set(o.store.healthy() ? 1 : 0);
    },
  });
}

/** Each configured account's runtime, by name, in config order; each loads what it left under state_dir. */
async function startAccounts(config: Config, deps: AccountDeps): Promise<Map<string, AccountRuntime>> {
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
async function startEngines(
  config: Config,
  d: {
    accounts: ReadonlyMap<string, AccountRuntime>;
    store: OpenedStore;
    replication: Replication;
    logger: Logger;
    now: () => number;
    exposition: ExpositionCache;
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
          ? leaderOrSnapshot(runtime.state, shared.directory.snapshot(name), replication.leading)
          : runtime.state,
        config: config.remediation,
        // Read per decision: a reload may change the schedule.
        firewallPeriodMs: () => schedulePeriodMs(config.schedules.firewall),
        now: d.now,
        // A decision shows in /metrics within a second; a burst of alerts costs one rendering.
        onDecision: () => d.exposition.renderSoon(1000),
        // Shared by replicas: a row `executing` may be another replica's call in flight, for at most one
        // attempt's deadline (writes are not retried); a minute more and it was left by a replica that died.
        ...(store.kind === 'postgres'
          ? { interruptedAfterMs: config.accounts.find((a) => a.name === name)!.upstream.timeoutMs + 60_000 }
          : {}),
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
function knownSecrets(config: Config): string[] {
  return [
    ...config.accounts.map((a) => a.upstream.apiKey),
    ...config.remediation.bearerTokens,
    ...config.remediation.principals.flatMap((p) => (p.bearerToken === undefined ? [] : [p.bearerToken])),
    ...config.web.auth.bearerTokens,
    ...(config.database.kind === 'postgres' ? databaseSecrets(config.database.url) : []),
  ];
}
