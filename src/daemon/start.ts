/**
 * Builds the daemon's dependencies from a Config and starts it: registry and metrics, upstream client,
 * graph store, poll jobs and their schedule, the exposition cache and the HTTP app (the builders of each part
 * in parts.ts). The `run` and `demo` commands (cli/program.ts) call this; integration tests call it too, with an
 * injected logger and clock.
 */
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { Registry } from 'prom-client';
import type { Dispatcher } from 'undici';
import { buildApp } from '../http/app.js';
import type { Config } from '../config/types.js';
import type { AccountRuntime } from './accounts.js';
import { alertmanagerClient } from './alertmanager.js';
import { bindAccountFamilies, exposeMetrics, knownSecrets, servedParts, startAccounts, startEngines } from './parts.js';
import type { ElectionTimings, Role } from '../ha/role.js';
import type { ShareTimings } from '../ha/shared-role.js';
import { limitGraphDecoding } from '../graphs/image.js';
import type { WebConfigFile } from '../http/web-config-reload.js';
import { openStore, type OpenStoreOptions } from '../store/open.js';
import type { PostgresStore } from '../store/postgres/store.js';
import type { StateStore } from '../store/store.js';
import { lockStateDir, type StateLock } from '../store/state-dir-lock.js';
import { createLogger } from '../logger.js';
import type { RemediationEngine } from '../remediation/engine.js';
import type { ReloadResult } from '../config/reload.js';
import { createReload } from './reload.js';
import { watchApiKeyFiles } from './api-key-files.js';
import { pollingDuties, Replication } from './replication.js';
import { listen, webDeps } from '../http/web-server.js';
import { createMetrics, type Metrics } from '../metrics/definitions.js';
import type { ExpositionCache } from '../metrics/exposition-cache.js';
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
  /**
   * with PostgreSQL: the election's timings (or with `database.share_accounts` the shares'), and how often the
   * shared server directory is read, ms
   */
  ha?: ElectionTimings & { refreshMs?: number; shares?: ShareTimings };
  /** PostgreSQL state store: retry and health-check intervals, pool limits (tests shorten them) */
  stateStore?: OpenStoreOptions['postgres'];
}

export interface Daemon {
  app: FastifyInstance;
  /** base URL the daemon listens on, when it listens */
  url: string;
  registry: Registry;
  metrics: Metrics;
  /** each account's runtime (client, poll jobs, graph store, state), by name */
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
  const { registry, metrics } = daemonMetrics(now);
  const store = await openDaemonStore(config, options, lock, logger);
  const replication = new Replication(config.database, store, logger);
  const { shared, leading, led } = replication;
  // Followers read the leader's server list once the schema is there.
  if (shared) void store.opened.then((open) => open && shared.directory.start());
  const exposition = exposeMetrics(registry, metrics, {
    now,
    leading,
    led,
    store,
    accounts: config.accounts.map((a) => a.name),
  });
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
    leads: replication.leads,
    ...(config.database.kind === 'postgres' && config.database.shares ? { holdsLease: replication.leads } : {}),
  });
  bindAccountFamilies(metrics, accounts);
  const alertmanager = alertmanagerClient(config, metrics, logger);
  const engines = await startEngines(config, { accounts, store, replication, logger, now, exposition, alertmanager });
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
    now,
    ...pick(options, ['initialPolls', 'schedule', 'remediationTickMs']),
    stopping: () => stopping,
  });
  // A role change shows in /metrics at once (baremetal_leader).
  const role = replication.elect(
    duties,
    {
      metrics,
      onChange: () => exposition.renderSoon(),
      upstreams: config.accounts.map((a) => ({ name: a.name, baseUrl: a.upstream.baseUrl })),
    },
    options.ha,
  );
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
      await stopParts({ keyFiles, role, exposition, listeners, store, accounts, lock });
      await alertmanager?.close();
    },
  };
}

/** The daemon's registry and metrics, the configuration counted as loaded at `now()`. */
function daemonMetrics(now: () => number) {
  const registry = new Registry();
  const metrics = createMetrics(registry, { defaultMetrics: true, version: VERSION });
  metrics.configReloadSuccessful.set(1);
  metrics.configReloadSuccessAt.set(now() / 1000);
  return { registry, metrics };
}

/**
 * The state store, opened first: a journal that cannot be opened (corrupt, zero-length, unwritable;
 * PostgreSQL unreachable) disables remediation only; a SQLite file is left as it is for the operator to
 * inspect. With PostgreSQL the store's one pool also carries what the replicas share (server directory, graph
 * images).
 */
function openDaemonStore(config: Config, options: DaemonOptions, lock: StateLock, logger: Logger) {
  return openStore(config, {
    logger,
    postgres: {
      ...options.stateStore,
      ...(options.ha?.refreshMs !== undefined ? { refreshMs: options.ha.refreshMs } : {}),
    },
    ...(lock.problem
      ? { refuse: `state_dir is not writable, so it cannot be locked against a second daemon: ${lock.problem}` }
      : {}),
  });
}

/** What stopping stops, in its order. */
interface RunningParts {
  keyFiles: { stop(): void };
  role: { stop(): Promise<void> };
  exposition: { stop(): void };
  listeners: { close(): Promise<void> };
  store: { close(): Promise<void> };
  accounts: ReadonlyMap<string, { client: { close(): Promise<void> } }>;
  lock: StateLock;
}

/**
 * Stops polling and the remediation tickers (cancelling runs in flight), then, with PostgreSQL, frees the
 * leader lock so that a follower takes over at once; closing HTTP waits for requests in flight, webhooks with
 * their upstream calls and journal writes; then the store, the clients and the state_dir lock.
 */
async function stopParts(p: RunningParts): Promise<void> {
  p.keyFiles.stop();
  await p.role.stop();
  p.exposition.stop();
  await p.listeners.close();
  await p.store.close();
  await Promise.all([...p.accounts.values()].map((account) => account.client.close()));
  p.lock.release();
}

/** The options among `keys` that are set (exactOptionalPropertyTypes: an absent key stays absent). */
function pick<T extends object, K extends keyof T>(o: T, keys: K[]): Partial<Pick<T, K>> {
  return Object.fromEntries(keys.filter((k) => o[k] !== undefined).map((k) => [k, o[k]])) as Partial<Pick<T, K>>;
}
