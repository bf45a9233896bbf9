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
 * password is never in a message: errors and log lines name the redacted URL and are scrubbed of it.
 */
import type { Logger } from 'pino';
import type pg from 'pg';
import { SharedDirectory } from './directory.js';
import { SharedGraphs } from './graphs.js';
import { migrateAll } from './migrations.js';
import { ACCOUNT_LOCK_KEY, openPool, type PoolLimits } from './pool.js';
import { databaseScrubber, reasonOf } from '../../config/database-url.js';
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
  readonly shared: { directory: SharedDirectory; graphs: SharedGraphs };
}

/**
 * Opens the store: tries once to connect and migrate (bounded by the pool's connect and statement timeouts) and
 * resolves either way; when that failed the store is unavailable and retried every `retryMs`.
 */
export async function openPostgresStore(o: PostgresStoreOptions): Promise<PostgresStore> {
  // pg's messages do not carry the URL or its password; scrubbed anyway, belt and braces.
  const scrub = databaseScrubber(o.url);
  const message = (error: unknown) => reasonOf(scrub, error);
  const { logger, redactedUrl } = o;
  const pool = openPool(
    o.url,
    (error) => logger.warn({ database: redactedUrl, reason: message(error) }, 'state database connection lost'),
    o.limits,
  );
  let openFailure: string | undefined = `not connected yet to ${redactedUrl}`;
  /** the last statement's failure, cleared by the next success */
  let failure: string | undefined;
  // A connection that drops while checked out (mid-transaction, during migrations) emits `error` on its client;
  // unhandled, that would end the process. The statement in flight fails on its own; note it here.
  pool.on('connect', (client) =>
    client.on('error', (error) => {
      failure = message(error);
    }),
  );
  let closed = false;
  /** set once opening failed: the next success is logged */
  let retrying = false;
  let retry: NodeJS.Timeout | undefined;
  let ping: NodeJS.Timeout | undefined;
  let resolveOpened: (ok: boolean) => void = () => undefined;
  const opened = new Promise<boolean>((resolve) => (resolveOpened = resolve));

  /** A statement runner over `target` that turns every failure into a JournalError and tracks health. */
  const runnerOf =
    (target: pg.Pool | pg.PoolClient): Run =>
    async (sql, params) => {
      try {
        const result = await target.query(sql, params);
        failure = undefined;
        return { rows: result.rows as Row[], rowCount: result.rowCount };
      } catch (error) {
        failure = message(error);
        throw new JournalError(`state database (PostgreSQL at ${redactedUrl}) statement failed: ${failure}`);
      }
    };
  const requireOpen = () => {
    if (openFailure !== undefined) throw new JournalError(`the journal is unavailable: ${openFailure}`);
  };
  const poolRun = runnerOf(pool);
  const run: Run = (sql, params) => {
    requireOpen();
    return poolRun(sql, params);
  };
  const queries = new PgQueries(run);
  const directory = new SharedDirectory({
    pool,
    accounts: o.accounts,
    logger,
    ...(o.refreshMs !== undefined ? { refreshMs: o.refreshMs } : {}),
  });
  const shared = { directory, graphs: new SharedGraphs(pool, o.accounts, logger) };

  /** Runs `fn` in one transaction on one connection; `lock` names the account whose decisions it serializes. */
  async function inTransaction<T>(lock: string | undefined, fn: (run: Run) => Promise<T>): Promise<T> {
    requireOpen();
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (error) {
      failure = message(error);
      throw new JournalError(`state database (PostgreSQL at ${redactedUrl}) cannot be reached: ${failure}`);
    }
    const txRun = runnerOf(client);
    let broken = false;
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
      client.release(broken);
    }
  }

  /** Connects and migrates; on failure retries in `retryMs`, logging the first failure and the recovery. */
  const attempt = async (): Promise<void> => {
    try {
      await migrateAll(pool);
    } catch (error) {
      if (closed) return;
      const first = !retrying;
      retrying = true;
      openFailure = `cannot open the state database at ${redactedUrl}: ${message(error)}`;
      if (first)
        logger.error(
          { database: redactedUrl, reason: openFailure },
          'cannot open the state database (PostgreSQL): remediation is disabled (the action endpoints answer 503) and no replica can lead (nothing polls) until it answers; /metrics goes on; retrying',
        );
      retry = setTimeout(() => void attempt(), o.retryMs ?? 5_000).unref();
      return;
    }
    if (closed) return;
    openFailure = undefined;
    failure = undefined;
    if (retrying) logger.info({ database: redactedUrl }, 'state database reachable: remediation enabled');
    ping = setInterval(() => void poolRun('SELECT 1').catch(() => undefined), o.pingMs ?? 5_000).unref();
    resolveOpened(true);
  };
  await attempt();

  return {
    ...forwardQueries(queries, async (call) => call()),
    kind: 'postgres',
    shared,
    get unavailable() {
      return openFailure;
    },
    get problem() {
      return openFailure ?? (failure === undefined ? undefined : `its last statement failed: ${failure}`);
    },
    healthy: () => openFailure === undefined && failure === undefined,
    opened,
    transaction: <T>(account: string, fn: (tx: StateQueries) => Promise<T>) =>
      inTransaction(account, (txRun) => fn(new PgQueries(txRun))),
    eventLedger: (account: string) =>
      new PostgresEventLedger(account, {
        run,
        transaction: (fn) => inTransaction(undefined, fn),
        unavailable: () => openFailure,
      }),
    close: async () => {
      if (closed) return;
      closed = true;
      clearTimeout(retry);
      clearInterval(ping);
      resolveOpened(false);
      await directory.stop();
      await pool.end();
    },
  };
}
