/**
 * Builds the daemon's dependencies from a Config and starts it: registry and metrics, upstream client,
 * graph store, poll jobs and their schedule, the exposition cache and the HTTP app. `main.ts` calls this;
 * integration tests call it too, with an injected logger and clock.
 */
import type { Server as HttpsServer } from 'node:https';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { Registry } from 'prom-client';
import type { Dispatcher } from 'undici';
import { buildApp } from './app.js';
import { DEFAULT_ACCOUNT, type Config, type JobName } from './config/schema.js';
import { localGraphs } from './graphs/source.js';
import { initialPolls, reloadEventIds, startAccount, type AccountDeps, type AccountRuntime } from './accounts.js';
import { leaderOrSnapshot } from './remediation/targets.js';
import { startRole, type ElectionTimings, type Role } from './ha/role.js';
import { authEnabled } from './http/auth.js';
import { statusViewOf } from './http/status-view.js';
import { discoverySource } from './http/discovery-source.js';
import { directoryServers } from './collectors/ownership.js';
import { readTls, watchTls } from './http/tls.js';
import { closeServer, extraServer, listenOn } from './http/listeners.js';
import { httpsOptions, type WebConfigFile } from './http/web-config-reload.js';
import { openStore, type OpenStoreOptions } from './store/open.js';
import type { PostgresStore } from './store/postgres/store.js';
import type { StateStore } from './store/store.js';
import { lockStateDir, type StateLock } from './store/state-dir-lock.js';
import { createLogger } from './logger.js';
import { RemediationEngine } from './remediation/engine.js';
import { restartKeys, type ReloadResult } from './config/reload.js';
import { ConfigError } from './errors.js';
import { createMetrics, leaderOnlyNames, type Metrics } from './metrics/definitions.js';
import { ExpositionCache } from './metrics/exposition.js';
import { VERSION } from './version.js';

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
  /** `--web.config.file`: its TLS, headers and basic-auth users replace `web.tls` and `web.auth.basic_auth_users` */
  webConfig?: WebConfigFile;
  /** re-reads the config file through the same loader and flags (`reload()`); without it a reload fails */
  reloadConfig?: () => Config;
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
  journal: StateStore;
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
  reloadTls(): boolean;
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
  try {
    return await start(config, options, lock);
  } catch (error) {
    lock.release();
    throw error;
  }
}

async function start(initial: Config, options: DaemonOptions, lock: StateLock): Promise<Daemon> {
  // The configuration in force: a reload changes its reloadable parts in place, read by the poll jobs,
  // schedulers, engines and routes (a copy, so the caller's object is never changed).
  const config = structuredClone(initial);
  const logger = options.logger ?? createLogger(config.logLevel);
  const now = options.now ?? Date.now;
  const registry = new Registry();
  const metrics = createMetrics(registry, { defaultMetrics: true, version: VERSION });
  metrics.configReloadSuccessful.set(1);
  metrics.configReloadSuccessAt.set(now() / 1000);
  // ---- High availability (src/ha): with PostgreSQL the replicas share a server directory and the graph
  // images, and only the elected leader polls. With SQLite there is one replica and it leads. A database that
  // cannot be reached at start is retried in the background (shared.ts): nothing polls until it answers. ----
  /** set once HTTP is up, below; until then a SQLite daemon counts as leading (its readiness waits for its polls) */
  let role: Role | undefined;
  const leading = () => role?.leading ?? config.database.kind === 'sqlite';
  /** the leader publishes an account's server list after each servers and firewall run, for the followers */
  const publish = (account: string, job: JobName, outcome: string) => {
    const runtime = accounts.get(account);
    if (!shared || !runtime || !leading() || job === 'graphs' || job === 'catalog' || outcome === 'failure') return;
    shared.directory
      .publish(account, () => directoryServers(runtime.poller.inventory, runtime.poller.firewallState))
      .catch((error: unknown) =>
        logger.warn(
          { account, reason: (error as Error).message },
          'cannot publish the server list to the shared database: followers check targets against the previous one',
        ),
      );
  };
  // ---- end of high availability ----
  // Opened first: a journal that cannot be opened (corrupt, zero-length, unwritable; PostgreSQL unreachable)
  // disables remediation only; a SQLite file is left as it is for the operator to inspect. With PostgreSQL the
  // store's one pool also carries what the replicas share (server directory, graph images).
  const journal = await openStore(config, {
    logger,
    postgres: {
      ...options.stateStore,
      ...(options.ha?.refreshMs !== undefined ? { refreshMs: options.ha.refreshMs } : {}),
    },
    ...(lock.problem
      ? { refuse: `state_dir is not writable, so it cannot be locked against a second daemon: ${lock.problem}` }
      : {}),
  });
  const shared = journal.kind === 'postgres' ? journal.shared : undefined;
  // Followers read the leader's server list once the schema is there.
  if (shared) void journal.opened.then((open) => open && shared.directory.start());
  // A follower's exposition leaves out what only the polling replica knows (definitions.ts).
  const leaderOnly = leaderOnlyNames(metrics);
  const exposition = new ExpositionCache({
    registry,
    now,
    include: (name) => leading() || !leaderOnly.has(name),
    beforeRender: (ms) => {
      metrics.renderedAt.set(ms / 1000);
      metrics.journalUp.set(journal.healthy() ? 1 : 0);
    },
  });
  const accountDeps: AccountDeps = {
    metrics,
    logger,
    config,
    now,
    clientOptions: {
      ...(options.retryMinDelayMs !== undefined ? { retryMinDelayMs: options.retryMinDelayMs } : {}),
      ...(options.dispatcher ? { dispatcher: options.dispatcher } : {}),
    },
    onChange: () => exposition.markDirty(),
    onPollFinished: (account, job, outcome) => {
      exposition.renderSoon();
      publish(account, job, outcome);
    },
    ...(shared ? { graphMirror: (account: string) => shared.graphs.mirror(account) } : {}),
    eventLedger: (account: string) => journal.eventLedger(account),
  };
  const names = new Set(config.accounts.map((a) => a.name));
  const accounts = new Map<string, AccountRuntime>();
  for (const account of config.accounts) {
    const legacyGraphs = account.name === DEFAULT_ACCOUNT && !names.has('dedicated');
    accounts.set(account.name, await startAccount(account, accountDeps, { legacyGraphs }));
  }
  // A decision shows in /metrics within a second; a burst of alerts costs one rendering.
  const onDecision = () => exposition.renderSoon(1000);
  // Targets are (account, server_id): one engine per account, with that account's client, server list and
  // metrics, over the one journal (one transaction per decision; cooldown, budget and desired state per account).
  const engines = new Map(
    [...accounts].map(([name, runtime]) => [
      name,
      new RemediationEngine({
        account: name,
        journal,
        client: runtime.client,
        metrics: runtime.metrics,
        logger: accounts.size > 1 ? logger.child({ account: name }) : logger,
        // A follower checks targets against the list the leader published.
        targets: shared ? leaderOrSnapshot(runtime.poller, shared.directory.snapshot(name), leading) : runtime.poller,
        config: config.remediation,
        now,
        onDecision,
        // Shared by replicas: a row `executing` may be another replica's call in flight, for at most one
        // attempt's deadline (writes are not retried); a minute more and it was left by a replica that died.
        ...(journal.kind === 'postgres'
          ? { interruptedAfterMs: config.accounts.find((a) => a.name === name)!.upstream.timeoutMs + 60_000 }
          : {}),
      }),
    ]),
  );
  // Counters and gauges read back from the journal before the first exposition (a store still opening, such as
  // an unreachable PostgreSQL, reads them back when it opens).
  if (journal.unavailable === undefined) await Promise.all([...engines.values()].map((e) => e.ready));
  if (!authEnabled(config.remediation))
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
  const readiness = () => {
    // Ready once each account's first servers and firewall polls worked at least partly: a poll that fails
    // outright (a wrong key, the API down) keeps the daemon unready, naming the poll and the error.
    // A follower does not poll: it is ready while the database answers (and the journal).
    const polls = leading() ? [...accounts.values()] : [];
    const reasons = polls.flatMap((account) =>
      (['servers', 'firewall'] as JobName[])
        // A switched-off collector (`collectors.firewall: false`) is not waited for.
        .filter((job) => job !== 'firewall' || config.collectors.firewall)
        .filter((job) => !account.workedOnce.has(job))
        .map((job) => {
          const poll = `${job} poll${accounts.size > 1 ? ` of account ${account.name}` : ''}`;
          const problem = account.lastProblem.get(job);
          return problem !== undefined
            ? `the ${poll} has not succeeded yet: ${problem}`
            : `the first ${poll} has not finished`;
        }),
    );
    if (role?.problem !== undefined) reasons.push(`the shared database does not answer: ${role.problem}`);
    const problem = journal.problem ?? (journal.healthy() ? undefined : 'it does not answer');
    if (problem !== undefined) reasons.push(`the journal is unavailable (remediation disabled): ${problem}`);
    return reasons;
  };
  const web = webDeps(config, options.webConfig);
  const graphStores = new Map([...accounts].map(([name, account]) => [name, account.graphStore]));
  // `/graphs` and the status page show the same images: the database's with replicas, else each account's store.
  const graphSource = shared ? shared.graphs : localGraphs(graphStores);
  const app = buildApp({
    logger,
    exposition,
    graphStores,
    graphMaxWidth: config.graphs.maxWidth,
    graphSource,
    ...web,
    readiness,
    statusView: statusViewOf({
      version: VERSION,
      accounts,
      journal,
      graphs: graphSource,
      ...(shared ? { replicas: { leading, directory: shared.directory } } : {}),
      now,
    }),
    attacks: new Map([...accounts].map(([name, runtime]) => [name, runtime.poller.attacks])),
    discovery: discoverySource(
      new Map([...accounts].map(([name, runtime]) => [name, runtime.poller])),
      shared ? { leading, directory: (account) => shared.directory.snapshot(account) } : undefined,
    ),
    remediation: { engines, journal, metrics, config: config.remediation },
    ...(options.lifecycle ? { reload: () => reload() } : {}),
    ...(options.telemetryPath === undefined ? {} : { telemetryPath: options.telemetryPath }),
  });
  const additional = (config.web.additional ?? []).map((address) => ({ address, server: extraServer(app, web.https) }));
  const servers = [app.server, ...additional.map((a) => a.server)] as HttpsServer[];
  const tls = config.web.tls ? watchTls(servers, config.web.tls, logger) : undefined;
  const webConfig = options.webConfig;
  if (webConfig?.current.tls) for (const server of servers) webConfig.attach(server);

  await exposition.render();
  exposition.start();
  let url = '';
  if (options.listen !== false) {
    url = await app.listen({ host: config.web.host, port: config.web.port });
    logger.info({ url }, 'listening');
    for (const { address, server } of additional)
      logger.info({ url: await listenOn(server, address, web.https !== undefined) }, 'listening');
  } else await app.ready();

  /** set by stop(): the initial polls start nothing more */
  let stopping = false;

  const reloadWeb = () => (webConfig ?? tls) === undefined || (webConfig?.reload() ?? tls?.reload() ?? false);
  const failed = (invalid: boolean, problems: string[]): ReloadResult => {
    metrics.configReloadSuccessful.set(0);
    exposition.markDirty();
    return { ok: false, invalid, problems };
  };
  const applyConfig = async (): Promise<ReloadResult> => {
    if (stopping) return failed(false, ['the daemon is stopping']);
    const webOk = reloadWeb();
    if (!options.reloadConfig) return failed(false, ['no configuration file to reload']);
    let next: Config;
    try {
      next = options.reloadConfig();
    } catch (error) {
      const invalid = error instanceof ConfigError;
      const problems = invalid ? error.problems : [(error as Error).message];
      logger.error({ problems }, 'configuration reload failed; the previous configuration stays in force');
      return failed(invalid, problems);
    }
    const needsRestart = restartKeys(config, next);
    if (needsRestart.length > 0)
      logger.warn(
        { keys: needsRestart },
        'configuration reload: these keys changed and need a restart; they keep their previous values, the rest is applied',
      );
    for (const account of config.accounts) {
      const services = next.accounts.find((a) => a.name === account.name)?.services;
      // Read by the next firewall run of the account.
      if (services) Object.assign(account.services, services);
    }
    const schedulesChanged = JSON.stringify(config.schedules) !== JSON.stringify(next.schedules);
    if (schedulesChanged && !needsRestart.includes('schedules.firewall_under_attack')) {
      Object.assign(config.schedules, next.schedules);
      await Promise.all([...accounts.values()].map((account) => account.scheduler.restart()));
    }
    const { rules, dryRun, budgetPerHour } = next.remediation;
    Object.assign(config.remediation, { rules, dryRun, budgetPerHour });
    // Scope and collector switches: read by each account's next runs (the next servers run applies the scope).
    Object.assign(config.collectors, next.collectors);
    for (const account of config.accounts)
      Object.assign(account.scope, next.accounts.find((a) => a.name === account.name)?.scope ?? {});
    if (!webOk)
      return failed(false, [
        'the web config could not be reloaded; the previous one stays in force (see its log line)',
      ]);
    metrics.configReloadSuccessful.set(1);
    metrics.configReloadSuccessAt.set(now() / 1000);
    exposition.markDirty();
    logger.info(
      { rules: rules.length, dry_run: dryRun, budget_per_hour: budgetPerHour, needs_restart: needsRestart.length },
      'configuration reloaded',
    );
    return { ok: true, needsRestart };
  };
  /** the reload in progress: one at a time */
  let reloading: Promise<unknown> = Promise.resolve();
  const reload = (): Promise<ReloadResult> => {
    const result = reloading.then(applyConfig);
    reloading = result.catch(() => undefined);
    return result;
  };
  // ---- High availability: what leading means (all of it with SQLite; from election to demotion with PostgreSQL) ----
  /** the initial polls of the current term */
  let term: Promise<void> = Promise.resolve();
  let firstTerm: (() => void) | undefined;
  const firstPolls = new Promise<void>((resolve) => (firstTerm = resolve));
  role = startRole(
    config.database,
    {
      logger,
      metrics,
      // A role change shows in /metrics at once (baremetal_leader).
      onChange: () => exposition.renderSoon(),
      duties: {
        start: async () => {
          // The schema first (a database that answers the election is normally migrated already).
          if (shared) await journal.opened;
          // Another replica may have counted attack events since this one last polled.
          if (shared) await Promise.all([...accounts.values()].map((account) => reloadEventIds(account, logger)));
          // Each account polls on its own: one whose API is down delays no other's first polls.
          term =
            options.initialPolls === false
              ? Promise.resolve()
              : Promise.all(
                  [...accounts.values()].map((account) => initialPolls(account, () => stopping || !leading())),
                ).then(() => undefined);
          void term.then(firstTerm);
          if (options.schedule !== false) {
            for (const account of accounts.values()) account.scheduler.start();
            for (const e of engines.values()) e.start(options.remediationTickMs);
          }
        },
        stop: async () => {
          // Cancels the poll runs in progress (their upstream requests are aborted) and waits for them to end.
          await Promise.all([...accounts.values()].map((account) => account.scheduler.stop()));
          await Promise.all([...engines.values()].map((e) => e.stop()));
          await term.catch(() => undefined);
        },
      },
    },
    options.ha,
  );
  const ready = shared ? Promise.resolve() : firstPolls;
  // ---- end of high availability ----

  return {
    app,
    url,
    registry,
    metrics,
    accounts,
    engines,
    journal,
    exposition,
    ready,
    role,
    shared,
    reloadTls: () => webConfig?.reload() ?? tls?.reload() ?? false,
    reload,
    stop: async () => {
      stopping = true;
      tls?.stop();
      webConfig?.stop();
      // Stops polling and the remediation tickers (cancelling runs in flight), then, with PostgreSQL, frees the
      // leader lock so that a follower takes over at once.
      await role.stop();
      exposition.stop();
      // Closing HTTP waits for requests in flight, webhooks with their upstream calls and journal writes.
      // Node closes only the connections idle when close() starts; a keep-alive connection whose request
      // finishes later would hold the server open until its timeout, so close those as they go idle.
      const sweep = setInterval(
        () => (app.server as { closeIdleConnections?: () => void }).closeIdleConnections?.(),
        100,
      );
      await Promise.all([app.close(), ...additional.map((a) => closeServer(a.server))]).finally(() =>
        clearInterval(sweep),
      );
      await journal.close();
      await Promise.all([...accounts.values()].map((account) => account.client.close()));
      lock.release();
    },
  };
}

/** The app's web options: from the main config, or with `--web.config.file` from it (bearer tokens stay). */
function webDeps(config: Config, webConfig: WebConfigFile | undefined) {
  if (!webConfig) return { webAuth: config.web.auth, ...(config.web.tls ? { https: readTls(config.web.tls) } : {}) };
  const { tls } = webConfig.current;
  let auth = { bearerTokens: config.web.auth.bearerTokens, basicAuthUsers: webConfig.current.basicAuthUsers };
  return {
    // The same object while the file's users are unchanged, so the auth check keeps its cache.
    webAuth: () => {
      const users = webConfig.current.basicAuthUsers;
      if (users !== auth.basicAuthUsers) auth = { bearerTokens: config.web.auth.bearerTokens, basicAuthUsers: users };
      return auth;
    },
    headers: () => webConfig.current.headers,
    ...(tls ? { https: httpsOptions(tls) } : {}),
  };
}
