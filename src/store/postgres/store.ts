/**
 * The PostgreSQL backend of the state store, shared by replicas: the process's one node-postgres pool (pool.ts
 * `openPool`; the leader's session connection, ha/leader.ts, is the only other connection), every component's
 * migrations (migrations.ts) applied at start under the migrations advisory lock, the queries of queries.ts,
 * and what the leader publishes for the other replicas over the same pool: the server directory
 * (directory.ts) and the graph images (graphs.ts).
 *
 * A decision is one transaction on one connection: BEGIN; `pg_advisory_xact_lock` on the account's key (every
 * decision of the account, on any replica, waits for the one in progress); the guards' reads; the row and the
 * delivery key's claim (`INSERT … ON CONFLICT DO NOTHING`: a key claimed concurrently conflicts); COMMIT.
 *
 * Faults: unreachable at start, the store is unavailable (remediation disabled, 503) and opening is retried in
 * the background until it works. A connection lost later fails the statements that touch it (JournalError,
 * 503) and marks the store unhealthy until a statement or the periodic `SELECT 1` succeeds again. The URL's
 * secrets are never in a message: log lines name the redacted URL and are scrubbed of them; a JournalError's
 * message (the 503 body) names the part only (`state database unreachable`), its cause the URL and pg's reason.
 */
import type { Logger } from 'pino';
import type pg from 'pg';
import { SharedDirectory } from './directory.js';
import { SharedGraphs } from './graphs.js';
import { AccountLeases, type AccountWrite, checkLease, type LeaseTerm } from './leases.js';
import { Membership } from './membership.js';
import type { Terms } from './membership.js';
import { migrateAll } from './migrations.js';
import { ACCOUNT_LOCK_KEY, type PoolLimits } from './bounds.js';
import { openPool } from './pool.js';
import { DATABASE_UNREACHABLE, databaseScrubber, reasonOf } from '../../config/database-url.js';
import { JournalError } from '../../errors.js';
import { PostgresEventLedger } from './event-ledger.js';
import { PgQueries, type Run } from './queries.js';
import type { Row } from '../rows.js';
import { forwardQueries, type StateQueries, type StateStore } from '../store.js';

export interface PostgresStoreOptions {
  url: string;
  /** the URL without its password: the only form logged */
  redactedUrl: string;
  logger: Logger;
  /** the configured accounts (the server directory keeps a snapshot of each) */
  accounts: readonly string[];
  /** how often the server directory is read again once `startDirectory()` was called, ms (default 3000) */
  refreshMs?: number;
  /** how often opening is retried while the database cannot be reached, ms */
  retryMs?: number;
  /** how often a `SELECT 1` refreshes the health while open, ms */
  pingMs?: number;
  limits?: Partial<PoolLimits>;
}

export interface PostgresStore extends StateStore {
  readonly kind: 'postgres';
  /** what replicas share besides the journal, over the same pool */
  readonly shared: {
    directory: SharedDirectory;
    graphs: SharedGraphs;
    /**
     * this replica's heartbeat, publishing `terms` (ha/terms.ts), and the accounts' leases
     * (`database.share_accounts`), over the same pool
     */
    shares(replica: string, leaseMs: number, terms: Terms): { membership: Membership; leases: AccountLeases };
    /** this replica's heartbeat alone, publishing `terms` (the single-leader mode), over the same pool */
    membership(replica: string, leaseMs: number, terms: Terms): Membership;
    /**
     * From now on every write a leader makes for an account (its attack-event ids, its server list, its graph
     * images) carries the lease `term(account)` returns and is refused (StaleLeaseError) unless it is the
     * account's current lease.
     */
    fence(term: (account: string) => LeaseTerm | undefined): void;
  };
}

/**
 * The pool and what it last said: why the store is not open (`openFailure`) and the last statement's failure,
 * cleared by the next success. Every statement goes through `run` or `transaction`, which turn a failure into a
 * JournalError and keep the health current.
 */
class Connection {
  readonly pool: pg.Pool;
  openFailure: string | undefined;
  failure: string | undefined;
  readonly #label: string;
  readonly #message: (error: unknown) => string;

  constructor(o: PostgresStoreOptions, message: (error: unknown) => string) {
    this.#label = `PostgreSQL at ${o.redactedUrl}`;
    this.#message = message;
    this.openFailure = `not connected yet to ${o.redactedUrl}`;
    this.pool = openPool(
      o.url,
      (error) => o.logger.warn({ database: o.redactedUrl, reason: message(error) }, 'state database connection lost'),
      o.limits,
    );
    // A connection that drops while checked out (mid-transaction, during migrations) emits `error` on its
    // client; unhandled, that would end the process. The statement in flight fails on its own; note it here.
    this.pool.on('connect', (client) =>
      client.on('error', (error) => {
        this.failure = message(error);
      }),
    );
  }

  /** A statement runner over `target` that turns every failure into a JournalError and tracks health. */
  runner(target: pg.Pool | pg.PoolClient): Run {
    return async (sql, params) => {
      try {
        const result = await target.query(sql, params);
        this.failure = undefined;
        return { rows: result.rows as Row[], rowCount: result.rowCount };
      } catch (error) {
        this.failure = this.#message(error);
        // The reply names the part only; host, port, user and database go to the log (the error's cause).
        throw new JournalError(`state database statement failed (${DATABASE_UNREACHABLE} or refusing)`, {
          cause: new Error(`${this.#label}: ${this.failure}`),
        });
      }
    };
  }

  requireOpen(): void {
    if (this.openFailure !== undefined)
      throw new JournalError(`the journal is unavailable: state ${DATABASE_UNREACHABLE}`, {
        cause: new Error(this.openFailure),
      });
  }

  /** One statement on the pool, once the store is open. */
  readonly run: Run = (sql, params) => {
    this.requireOpen();
    return this.runner(this.pool)(sql, params);
  };

  /** Runs `fn` in one transaction on one connection; `lock` names the account whose decisions it serializes. */
  async transaction<T>(lock: string | undefined, fn: (run: Run) => Promise<T>): Promise<T> {
    this.requireOpen();
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      this.failure = this.#message(error);
      throw new JournalError(`state ${DATABASE_UNREACHABLE}`, { cause: new Error(`${this.#label}: ${this.failure}`) });
    }
    const txRun = this.runner(client);
    let broken = false;
    // A checked-out client has no pool listener: a session PostgreSQL ended under it must not throw uncaught.
    const ended = () => {
      broken = true;
    };
    client.on('error', ended);
    try {
      await txRun('BEGIN');
      if (lock !== undefined) await txRun(`SELECT pg_advisory_xact_lock(${ACCOUNT_LOCK_KEY})`, [lock]);
      const result = await fn(txRun);
      await txRun('COMMIT');
      return result;
    } catch (error) {
      try {
        await client.query('ROLLBACK');
      } catch {
        // The connection is gone or unusable: destroy it rather than return it to the pool.
        broken = true;
      }
      throw error;
    } finally {
      if (!broken) client.off('error', ended);
      client.release(broken);
    }
  }
}

/**
 * Opening, and the one retry loop: connects and migrates every component; on failure retries every `retryMs`,
 * logging the first failure and the recovery. Once open, a `SELECT 1` every `pingMs` keeps the health current.
 */
class Opener {
  readonly opened: Promise<boolean>;
  #resolve: (ok: boolean) => void = () => undefined;
  #closed = false;
  #retrying = false;
  #retry: NodeJS.Timeout | undefined;
  #ping: NodeJS.Timeout | undefined;

  constructor(
    readonly connection: Connection,
    readonly o: PostgresStoreOptions,
    readonly message: (error: unknown) => string,
  ) {
    this.opened = new Promise<boolean>((resolve) => (this.#resolve = resolve));
  }

  async attempt(): Promise<void> {
    const { connection: c, o } = this;
    try {
      await migrateAll(c.pool);
    } catch (error) {
      if (this.#closed) return;
      const first = !this.#retrying;
      this.#retrying = true;
      c.openFailure = `cannot open the state database at ${o.redactedUrl}: ${this.message(error)}`;
      if (first)
        o.logger.error(
          { database: o.redactedUrl, reason: c.openFailure },
          'cannot open the state database (PostgreSQL): remediation is disabled (the action endpoints answer 503) and no replica can lead (nothing polls) until it answers; /metrics goes on; retrying',
        );
      this.#retry = setTimeout(() => void this.attempt(), o.retryMs ?? 5_000).unref();
      return;
    }
    if (this.#closed) return;
    c.openFailure = undefined;
    c.failure = undefined;
    if (this.#retrying) o.logger.info({ database: o.redactedUrl }, 'state database reachable: remediation enabled');
    const ping = c.runner(c.pool);
    this.#ping = setInterval(() => void ping('SELECT 1').catch(() => undefined), o.pingMs ?? 5_000).unref();
    this.#resolve(true);
  }

  /** Stops retrying and pinging; `opened` resolves false if it had not resolved. */
  close(): void {
    this.#closed = true;
    clearTimeout(this.#retry);
    clearInterval(this.#ping);
    this.#resolve(false);
  }
}

/**
 * Opens the store: tries once to connect and migrate (bounded by the pool's connect and statement timeouts) and
 * resolves either way; when that failed the store is unavailable and retried every `retryMs`.
 */
export async function openPostgresStore(o: PostgresStoreOptions): Promise<PostgresStore> {
  // pg's messages do not carry the URL or its password; scrubbed anyway, belt and braces.
  const scrub = databaseScrubber(o.url);
  const message = (error: unknown) => reasonOf(scrub, error);
  const c = new Connection(o, message);
  const opener = new Opener(c, o, message);
  /** with shared accounts: the lease each leader write for an account must still hold */
  let fence: ((account: string) => LeaseTerm | undefined) | undefined;
  /** the lease of `shares` (what a session idle in a fenced transaction is allowed), ms */
  let leaseMs = 10_000;
  /** runs `fn` in a transaction that first checks the account's lease, once fenced */
  const fenced = <T>(account: string, fn: (run: Run) => Promise<T>, lock?: string) =>
    c.transaction(lock, async (run) => {
      if (fence) await checkLease(run, account, fence(account), leaseMs);
      return fn(run);
    });
  /** a leader's statement for an account (its server list, its graph images): fenced once shared */
  const write: AccountWrite = async (account, sql, params) => {
    if (fence) await fenced(account, (run) => run(sql, params));
    else await c.pool.query(sql, params);
  };
  const directory = new SharedDirectory({
    write,
    // The epoch the writes are fenced with: an unchanged server list is written once per term.
    epoch: (account) => fence?.(account)?.epoch,
    pool: c.pool,
    accounts: o.accounts,
    logger: o.logger,
    reason: message,
    ...(o.refreshMs !== undefined ? { refreshMs: o.refreshMs } : {}),
  });
  await opener.attempt();
  let closed = false;
  return {
    ...forwardQueries(new PgQueries(c.run), async (call) => call()),
    kind: 'postgres',
    shared: {
      directory,
      graphs: new SharedGraphs(c.pool, o.accounts, o.logger, message, write),
      shares: (replica, lease, terms) => {
        leaseMs = lease;
        return {
          membership: new Membership({ pool: c.pool, replica, leaseMs: lease, terms }),
          leases: new AccountLeases({ pool: c.pool, replica, leaseMs: lease }),
        };
      },
      membership: (replica, lease, terms) => new Membership({ pool: c.pool, replica, leaseMs: lease, terms }),
      fence: (term) => {
        fence = term;
      },
    },
    get unavailable() {
      return c.openFailure;
    },
    get problem() {
      return c.openFailure ?? (c.failure === undefined ? undefined : `its last statement failed: ${c.failure}`);
    },
    healthy: () => c.openFailure === undefined && c.failure === undefined,
    opened: opener.opened,
    transaction: <T>(account: string, fn: (tx: StateQueries) => Promise<T>, options?: { leader?: boolean }) =>
      options?.leader
        ? fenced(account, (txRun) => fn(new PgQueries(txRun)), account)
        : c.transaction(account, (txRun) => fn(new PgQueries(txRun))),
    eventLedger: (account: string) =>
      new PostgresEventLedger(account, {
        run: c.run,
        transaction: (fn) => fenced(account, fn),
        unavailable: () => c.openFailure,
      }),
    close: async () => {
      if (closed) return;
      closed = true;
      opener.close();
      await directory.stop();
      await c.pool.end();
    },
  };
}
