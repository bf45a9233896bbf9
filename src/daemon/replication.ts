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
import { startSharedRole, type AccountDuties, type ShareTimings } from '../ha/shared-role.js';
import { SHARES_DEFAULTS } from '../ha/shares.js';
import { Agreement } from '../ha/agreement.js';
import { termsOf } from '../ha/terms.js';
import { TermsWatch } from '../ha/terms-watch.js';
import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import { databaseScrubber, reasonOf } from '../config/database-url.js';
import type { Metrics } from '../metrics/definitions.js';
import type { RemediationEngine } from '../remediation/engine.js';
import type { OpenedStore } from '../store/open.js';

/**
 * When this replica's current term of each account began, ms since epoch (the collector clock): a firewall history
 * read before it is no evidence (another replica may have led between, remediation/targets.ts). A start counts
 * only under the lease epoch it began under (shared accounts; `epoch` undefined with one leader): an account lost
 * and claimed again before the old term's end ran has no start until its new term begins.
 */
export class TermStarts {
  readonly #starts = new Map<string, { at: number; epoch: string | undefined }>();

  readonly #leads: (account: string) => boolean;
  readonly #epoch: (account: string) => string | undefined;

  /** `leads`: whether this replica leads an account now; `epoch`: its lease epoch now (undefined: one leader) */
  constructor(leads: (account: string) => boolean, epoch: (account: string) => string | undefined) {
    this.#leads = leads;
    this.#epoch = epoch;
  }

  /** the term of `account` under its current lease epoch began at `at` */
  began(account: string, at: number): void {
    this.#starts.set(account, { at, epoch: this.#epoch(account) });
  }

  /** the term of `account` ended: its start is never reused */
  ended(account: string): void {
    this.#starts.delete(account);
  }

  /** the start of the current term; undefined while not leading `account` or before its current term began */
  ledSince(account: string): number | undefined {
    const start = this.#starts.get(account);
    return this.#leads(account) && start && start.epoch === this.#epoch(account) ? start.at : undefined;
  }
}

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

  /** true while this replica leads `account` (with one leader: while it leads) */
  readonly leads = (account: string): boolean => this.#role?.leads(account) ?? this.#database.kind === 'sqlite';

  /** `account`'s lease epoch now (shared accounts); undefined with one leader for all */
  #epoch: (account: string) => string | undefined = () => undefined;

  readonly #terms = new TermStarts(this.leads, (account) => this.#epoch(account));

  /** this replica's current term of `account` began at `at` (ms since epoch, the collector clock) */
  began(account: string, at: number): void {
    this.#terms.began(account, at);
  }

  /** this replica's term of `account` ended (its duties stop): a later claim has no start until `began` */
  ended(account: string): void {
    this.#terms.ended(account);
  }

  /** when this replica's current term of `account` began (TermStarts.ledSince) */
  readonly ledSince = (account: string): number | undefined => this.#terms.ledSince(account);

  /** with shared accounts, the accounts this replica leads now; undefined with one leader for all */
  readonly led = (): ReadonlySet<string> | undefined => this.#role?.led?.();

  /** the election's problem: the shared database does not answer */
  readonly problem = (): string | undefined => this.#role?.problem;

  /** why this replica disagrees with the live replicas (ha/terms.ts) and leads nothing, if it does */
  readonly disagreement = (): string | undefined => this.#role?.disagreement;

  /** the leader publishes `account`'s server list after each servers and firewall run that did not fail */
  published(runtime: Pick<AccountRuntime, 'name' | 'state'>, job: JobName, outcome: string): void {
    const shared = this.shared;
    if (!shared || !this.leads(runtime.name) || job === 'graphs' || job === 'catalog' || outcome === 'failure') return;
    shared.directory
      .publish(runtime.name, () => directoryServers(runtime.state.inventory, runtime.state.firewallState))
      .catch((error: unknown) =>
        this.#logger.warn(
          { account: runtime.name, reason: (error as Error).message },
          'cannot publish the server list to the shared database: followers check targets against the previous one',
        ),
      );
  }

  /**
   * Leads at once (SQLite), takes part in the election (PostgreSQL), doing `duties` while leading, or with
   * `database.share_accounts` leads the accounts of its share, doing each one's `accountDuties`.
   */
  elect(
    duties: { all: Duties; account: AccountDuties },
    deps: {
      metrics: Pick<Metrics, 'leader' | 'haConfigMismatch' | 'haAccountUnled'>;
      onChange: () => void;
      /** the configured accounts: their names and base URLs (the terms this replica publishes, ha/terms.ts) */
      upstreams: ReadonlyArray<{ name: string; baseUrl: string }>;
    },
    timings: ElectionTimings & { shares?: ShareTimings } = {},
  ): Role {
    const { shares: shareTimings, ...election } = timings;
    const database = this.#database;
    const shared = this.shared;
    const { upstreams, ...roleDeps } = deps;
    const accounts = upstreams.map((a) => a.name);
    // Heartbeat rows of both modes live as long: every replica judges the others' liveness with its own lease.
    const leaseMs = shareTimings?.leaseMs ?? SHARES_DEFAULTS.leaseMs;
    if (database.kind === 'postgres' && database.shares && shared) {
      const role = startSharedRole(
        {
          ...roleDeps,
          accounts,
          logger: this.#logger,
          duties: duties.account,
          coordination: shared.shares(database.shares.replica, leaseMs, termsOf('shared', upstreams)),
          reason: (error) => reasonOf(databaseScrubber(database.url), error),
        },
        shareTimings,
      );
      // Every write this replica makes as an account's leader carries the account's lease epoch.
      const replica = database.shares.replica;
      this.#epoch = (account) => role.shares.term(account)?.epoch;
      shared.fence((account) => {
        const term = role.shares.term(account);
        return term && { replica, epoch: term.epoch };
      });
      this.#role = role;
    } else if (database.kind === 'postgres' && shared) {
      // One leader for every account: its heartbeat row is named after the host and this boot (names need not
      // be unique in this mode), so that sharing replicas see it and it sees them (ha/terms.ts).
      const agreement = new Agreement({ logger: this.#logger, metrics: deps.metrics, onChange: deps.onChange });
      const membership = shared.membership(
        `${hostname()}/${randomUUID().slice(0, 8)}`,
        leaseMs,
        termsOf('single', upstreams),
      );
      let agreed: () => void = () => {};
      const terms = new TermsWatch({
        membership,
        agreement,
        onAgreed: () => agreed(),
        logger: this.#logger,
        tickMs: Math.min(election.heartbeatMs ?? SHARES_DEFAULTS.tickMs, SHARES_DEFAULTS.tickMs),
        reason: (error) => reasonOf(databaseScrubber(database.url), error),
      });
      this.#role = startRole(
        database,
        {
          logger: this.#logger,
          ...roleDeps,
          duties: duties.all,
          watch: { terms, disagreement: () => agreement.problem, onAgreed: (f) => (agreed = f) },
        },
        election,
      );
    } else this.#role = startRole(database, { logger: this.#logger, ...roleDeps, duties: duties.all }, election);
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
  /** ms since epoch, the collector clock (default Date.now) */
  now?: () => number;
}

/**
 * The leader's duties: at the start of each term its initial polls, schedules and remediation tickers; at its end
 * they stop (runs in flight cancelled). `all` are every account's (one leader); `account` one account's (the
 * accounts shared out among the replicas). `firstPolls` resolves when the first term's initial polls have ended.
 */
export function pollingDuties(d: PollingDutiesDeps): {
  duties: { all: Duties; account: AccountDuties };
  firstPolls: Promise<void>;
} {
  /** each account's initial polls of its current term */
  const terms = new Map<string, Promise<void>>();
  let firstTerm: (() => void) | undefined;
  const firstPolls = new Promise<void>((resolve) => (firstTerm = resolve));
  const runtime = (name: string) => d.accounts.get(name)!;
  /** the event ids another replica may have counted since this one last polled the account */
  const reload = async (account: AccountRuntime) => {
    if (!d.replication.shared) return;
    await d.store.opened;
    await reloadEventIds(account, d.logger);
  };
  /** starts an account's polls (its event ids reloaded first) and tickers; resolves to its initial polls */
  const begin = (account: AccountRuntime): Promise<void> => {
    // Before its first poll: a firewall history read in an earlier term is no evidence in this one.
    d.replication.began(account.name, (d.now ?? Date.now)());
    const gone = () => d.stopping() || !d.replication.leads(account.name);
    const term = d.initialPolls === false ? Promise.resolve() : initialPolls(account, gone);
    terms.set(account.name, term);
    if (d.schedule !== false) {
      account.scheduler.start();
      d.engines.get(account.name)?.start(d.remediationTickMs);
    }
    return term;
  };
  const end = async (account: AccountRuntime) => {
    // At once: until the next term begins, nothing this one read is evidence (leaderOrSnapshot waits).
    d.replication.ended(account.name);
    // The next term writes its server list even if unchanged (another leader may have written since).
    d.replication.shared?.directory.forget(account.name);
    // Cancels the poll runs in progress (their upstream requests are aborted) and waits for them to end; the
    // runs' log says why: the daemon stopping, or the account led elsewhere now.
    await account.scheduler.stop(d.stopping() ? 'stop' : 'lease');
    await d.engines.get(account.name)?.stop();
    await terms.get(account.name)?.catch(() => undefined);
  };
  const accounts = [...d.accounts.values()];
  const all: Duties = {
    start: async () => {
      // The schema first (a database that answers the election is normally migrated already).
      await Promise.all(accounts.map(reload));
      // Each account polls on its own: one whose API is down delays no other's first polls.
      void Promise.all(accounts.map(begin)).then(firstTerm);
    },
    stop: async () => {
      await Promise.all(accounts.map(end));
    },
  };
  const account: AccountDuties = {
    start: async (name) => {
      await reload(runtime(name));
      void begin(runtime(name));
    },
    stop: (name) => end(runtime(name)),
  };
  return { duties: { all, account }, firstPolls };
}
