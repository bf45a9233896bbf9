/**
 * One runtime per configured account: its own upstream client (its key, limits and pool), its own poll
 * jobs, schedule, graph store and attack-event ledger; its series are the registry's, each labelled `account`.
 * Nothing is shared between two runtimes but the registry and the logger, so a bad key, a 5xx or a
 * timeout of one account never touches another's polls or series.
 */
import { DesiredRows } from '../remediation/desired-rows.js';
import type { Logger } from 'pino';
import { AccountState } from '../collectors/account-state.js';
import type { JobName } from '../config/schema.js';
import type { AccountConfig, Config } from '../config/types.js';
import type { EventLedger } from '../store/store.js';
import { GraphStore, type GraphMirror } from '../graphs/store.js';
import { createApiObserver } from '../metrics/api-observer.js';
import { exposeAccountFromZero, type Metrics, type RunOutcome } from '../metrics/definitions.js';
import { PollJobs } from '../scheduler/jobs.js';
import { Scheduler } from '../scheduler/scheduler.js';
import type { UpstreamClient, UpstreamClientOptions } from '../upstream/client.js';
import { clientFromConfig } from '../upstream/from-config.js';

/** One account's running parts. */
export interface AccountRuntime {
  /** the account's name: the value of its `account` label */
  name: string;
  client: UpstreamClient;
  /** the registry's metrics (every account's): each call names the account (`{ account: name, … }`) */
  metrics: Metrics;
  /** what the account's polls know: its inventory, scope, firewall and attack state (the readers read it) */
  state: AccountState;
  /** the account's poll jobs (run one by hand: `polls.run(name)`) */
  polls: PollJobs;
  scheduler: Scheduler;
  graphStore: GraphStore;
  /** the desired firewall state rows its remediation engine reads back from the store (their series) */
  desired: DesiredRows;
  /** where the attack event ids outlive the process (read again when this replica becomes leader) */
  ledger: EventLedger;
  /** jobs that succeeded at least partly once (readiness); `firewall` by a run that began after a server list was read */
  workedOnce: Set<JobName>;
  /** why a job's last run failed outright, until it works (readiness) */
  lastProblem: Map<JobName, string>;
}

export interface AccountDeps {
  /** the registry's metrics: an account's parts name it in each call */
  metrics: Metrics;
  logger: Logger;
  config: Pick<Config, 'graphs' | 'firewall' | 'schedules' | 'stateDir' | 'collectors'>;
  now: () => number;
  /** what the caller adds to every account's client (a test dispatcher, retry delays) */
  clientOptions?: Partial<UpstreamClientOptions>;
  /** a metric changed (the exposition is marked dirty) */
  onChange: () => void;
  /** the attack-event ids of an account: the state store's (`StateStore.eventLedger`) */
  eventLedger: (account: string) => EventLedger;
  /** a poll run of an account ended */
  onPollFinished: (account: string, job: JobName, outcome: RunOutcome) => void;
  /** where an account's graph store copies its images (replicas sharing PostgreSQL) */
  graphMirror?: (account: string) => GraphMirror;
  /** whether this replica leads the account now: a scheduled tick of an account it does not lead starts nothing */
  leads?: (account: string) => boolean;
  /**
   * with the accounts shared among replicas (`database.share_accounts`): whether this replica still holds the
   * account's lease, asked before each request a poll sends (scheduler/lease-gate.ts)
   */
  holdsLease?: (account: string) => boolean;
}

/** Builds (but does not start) the runtime of `account`, and loads what it left under state_dir. */
export async function startAccount(
  account: AccountConfig,
  deps: AccountDeps,
  options: { legacyGraphs: boolean },
): Promise<AccountRuntime> {
  const logger = deps.logger.child({ account: account.name });
  const { metrics } = deps;
  exposeAccountFromZero(metrics, account.name);
  const apiObserver = createApiObserver({ account: account.name, metrics }, deps.onChange);
  const client = clientFromConfig(account.upstream, {
    ...deps.clientOptions,
    onRequest: apiObserver.onRequest,
    onTransportStuck: ({ operation, renewed }) =>
      logger.warn(
        { operation, renewed },
        renewed
          ? 'the HTTP transport held an aborted request past its deadline: its connection pool was replaced'
          : 'the HTTP transport held an aborted request past its deadline',
      ),
  });
  const mirror = deps.graphMirror?.(account.name);
  const graphStore = new GraphStore(deps.config.stateDir, account.name, {
    ...options,
    logger,
    ...(mirror ? { mirror } : {}),
  });
  const loaded = await graphStore.load();
  if (loaded > 0) logger.info({ images: loaded }, 'graph images loaded from the state directory');
  metrics.graphImages.set({ account: account.name }, graphStore.size);
  const ledger = deps.eventLedger(account.name);
  const remembered = await loadEventIds(ledger, logger);
  const workedOnce = new Set<JobName>();
  const lastProblem = new Map<JobName, string>();
  const config = { ...deps.config, services: account.services, scope: account.scope };
  const state = new AccountState(config, deps.now);
  state.restoreEventIds(remembered.services);
  const polls = new PollJobs({
    account: account.name,
    client,
    metrics,
    logger,
    graphStore,
    ledger,
    config,
    state,
    now: deps.now,
    ...(deps.holdsLease ? { leads: () => deps.holdsLease!(account.name) } : {}),
    onFinished: (job, outcome, problem, run) => {
      apiObserver.onPollFinished(job, outcome);
      if (outcome === 'success' || outcome === 'partial') {
        // A firewall run that began before the first server list (a cron tick during the first servers poll)
        // read no server's history: readiness waits for one that could (a power action is decided on it).
        if (job !== 'firewall' || run.afterServerList) workedOnce.add(job);
        lastProblem.delete(job);
      } else if (outcome === 'failure') lastProblem.set(job, problem ?? 'it failed');
      deps.onPollFinished(account.name, job, outcome);
    },
  });
  const scheduler = new Scheduler(
    polls.jobs,
    deps.config.schedules,
    (poll, seconds) => metrics.pollInterval.set({ account: account.name, poll }, seconds),
    logger,
    deps.leads && (() => deps.leads!(account.name)),
  );
  if (account.upstream.apiKeySource === 'yaml')
    logger.warn('the API key sits in the config file itself: prefer api_key_file or BAREMETAL_API_KEY');
  const desired = new DesiredRows();
  return {
    name: account.name,
    client,
    metrics,
    state,
    polls,
    scheduler,
    graphStore,
    desired,
    ledger,
    workedOnce,
    lastProblem,
  };
}

async function loadEventIds(ledger: EventLedger, logger: Logger) {
  const remembered = await ledger.load();
  if (remembered.problem !== undefined)
    logger.warn(
      { reason: remembered.problem },
      'attack event ids of the last run could not be read: events still reported by the API count again',
    );
  return remembered;
}

/**
 * Reads the attack event ids again (a replica that becomes leader: another one may have counted events since
 * this one last polled), so that the first histories it reads do not count them again.
 */
export async function reloadEventIds(runtime: AccountRuntime, logger: Logger): Promise<void> {
  const remembered = await loadEventIds(runtime.ledger, logger.child({ account: runtime.name }));
  runtime.state.restoreEventIds(remembered.services);
}

/**
 * Runs servers, then every other poll of the account (firewall, graphs, catalog, any poll POLLS adds) at once,
 * then the under-attack poll (its services are known once the first firewall run has ended); `stopping()`
 * true ends it after the server list.
 */
export async function initialPolls(runtime: AccountRuntime, stopping: () => boolean): Promise<void> {
  await runtime.polls.run('servers');
  if (stopping()) return;
  const rest = [...runtime.polls.jobs.keys()].filter((job) => job !== 'servers' && job !== 'firewall_under_attack');
  await Promise.all(rest.map((job) => runtime.polls.run(job)));
  if (!stopping()) await runtime.polls.run('firewall_under_attack');
}

/**
 * What an account name (from a URL, a body, an alert label) names in a map by account (runtimes, engines):
 * with one account, it may be left out.
 */
export function findAccount<T>(runtimes: ReadonlyMap<string, T>, name: string | undefined): T | undefined {
  if (name === undefined) return runtimes.size === 1 ? [...runtimes.values()][0] : undefined;
  return runtimes.get(name);
}
