/**
 * What leading means for this daemon, and what a leader shares (docs/high-availability.md). With SQLite there is
 * one replica and it leads from the start. With PostgreSQL only the elected replica polls and applies deferred
 * firewall changes; after each servers and firewall run it publishes each account's server list for the
 * followers, whose engines check targets against it.
 */
import type { Logger } from 'pino';
import { initialPolls, reloadEventIds, type AccountRuntime } from './accounts.js';
import { directoryServers } from '../collectors/ownership.js';
import type { JobName } from '../config/schema.js';
import type { Config } from '../config/types.js';
import { startRole, type Duties, type ElectionTimings, type Role } from '../ha/role.js';
import type { Metrics } from '../metrics/definitions.js';
import type { RemediationEngine } from '../remediation/engine.js';
import type { OpenedStore } from '../store/open.js';

/** This replica's role, readable before the election starts (HTTP and the accounts are built first). */
export class Replication {
  #role: Role | undefined;
  readonly #database: Config['database'];
  readonly #store: OpenedStore;
  readonly #logger: Logger;

  constructor(database: Config['database'], store: OpenedStore, logger: Logger) {
    this.#database = database;
    this.#store = store;
    this.#logger = logger;
  }

  /** what replicas share over the store's pool: the server directory and the graph images */
  get shared() {
    return this.#store.kind === 'postgres' ? this.#store.shared : undefined;
  }

  /** true while this replica leads; until the election starts, a SQLite daemon counts as leading */
  readonly leading = (): boolean => this.#role?.leading ?? this.#database.kind === 'sqlite';

  /** the election's problem: the shared database does not answer */
  readonly problem = (): string | undefined => this.#role?.problem;

  /** the leader publishes `account`'s server list after each servers and firewall run that did not fail */
  published(runtime: Pick<AccountRuntime, 'name' | 'state'>, job: JobName, outcome: string): void {
    const shared = this.shared;
    if (!shared || !this.leading() || job === 'graphs' || job === 'catalog' || outcome === 'failure') return;
    shared.directory
      .publish(runtime.name, () => directoryServers(runtime.state.inventory, runtime.state.firewallState))
      .catch((error: unknown) =>
        this.#logger.warn(
          { account: runtime.name, reason: (error as Error).message },
          'cannot publish the server list to the shared database: followers check targets against the previous one',
        ),
      );
  }

  /** Leads at once (SQLite) or takes part in the election (PostgreSQL), doing `duties` while leading. */
  elect(duties: Duties, deps: { metrics: Pick<Metrics, 'leader'>; onChange: () => void }, timings?: ElectionTimings) {
    this.#role = startRole(this.#database, { logger: this.#logger, ...deps, duties }, timings);
    return this.#role;
  }
}

export interface PollingDutiesDeps {
  accounts: ReadonlyMap<string, AccountRuntime>;
  engines: ReadonlyMap<string, RemediationEngine>;
  replication: Replication;
  store: OpenedStore;
  logger: Logger;
  /** run servers → firewall → graphs, catalog at the start of each term (default true) */
  initialPolls?: boolean;
  /** start the cron schedules and the remediation tickers (default true) */
  schedule?: boolean;
  /** how often pending firewall changes are checked, ms */
  remediationTickMs?: number;
  /** the daemon is stopping: the initial polls start nothing more */
  stopping: () => boolean;
}

/**
 * The leader's duties: at the start of each term its initial polls, schedules and remediation tickers; at its end
 * they stop (runs in flight cancelled). `firstPolls` resolves when the first term's initial polls have ended.
 */
export function pollingDuties(d: PollingDutiesDeps): { duties: Duties; firstPolls: Promise<void> } {
  const accounts = [...d.accounts.values()];
  const engines = [...d.engines.values()];
  /** the initial polls of the current term */
  let term: Promise<void> = Promise.resolve();
  let firstTerm: (() => void) | undefined;
  const firstPolls = new Promise<void>((resolve) => (firstTerm = resolve));
  const duties: Duties = {
    start: async () => {
      if (d.replication.shared) {
        // The schema first (a database that answers the election is normally migrated already); then the attack
        // event ids another replica may have counted since this one last polled.
        await d.store.opened;
        await Promise.all(accounts.map((account) => reloadEventIds(account, d.logger)));
      }
      // Each account polls on its own: one whose API is down delays no other's first polls.
      const gone = () => d.stopping() || !d.replication.leading();
      term =
        d.initialPolls === false
          ? Promise.resolve()
          : Promise.all(accounts.map((account) => initialPolls(account, gone))).then(() => undefined);
      void term.then(firstTerm);
      if (d.schedule !== false) {
        for (const account of accounts) account.scheduler.start();
        for (const e of engines) e.start(d.remediationTickMs);
      }
    },
    stop: async () => {
      // Cancels the poll runs in progress (their upstream requests are aborted) and waits for them to end.
      await Promise.all(accounts.map((account) => account.scheduler.stop()));
      await Promise.all(engines.map((e) => e.stop()));
      await term.catch(() => undefined);
    },
  };
  return { duties, firstPolls };
}
