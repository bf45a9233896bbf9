/**
 * The PostgreSQL backend of the state store, shared by replicas: a node-postgres pool (database/postgres.ts
 * `openPool`), the `journal` migrations applied at start under the migrations advisory lock, and the queries
 * of postgres-queries.ts.
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
import { ACCOUNT_LOCK_KEY, migrate, openPool, type PoolLimits } from '../database/postgres.js';
import { DATABASE_UNREACHABLE, databaseScrubber, reasonOf } from '../database/redact.js';
import { JournalError } from '../errors.js';
import { PostgresEventLedger } from '../state/postgres-event-ledger.js';
import { JOURNAL_MIGRATIONS, PgQueries, type Run } from './postgres-queries.js';
import type { Row } from './rows.js';
import { forwardQueries, type StateQueries, type StateStore } from './store.js';

export interface PostgresStoreOptions {
  url: string;
  /** the URL without its password: the only form logged */
  redactedUrl: string;
  logger: Logger;
  /** how often opening is retried while the database cannot be reached, ms */
  retryMs?: number;
  /** how often a `SELECT 1` refreshes the health while open, ms */
  pingMs?: number;
  limits?: Partial<PoolLimits>;
}

export type PostgresStore = StateStore;

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
        // The reply names the part only; host, port, user and database go to the log (the error's cause).
        throw new JournalError(`state database statement failed (${DATABASE_UNREACHABLE} or refusing)`, {
          cause: new Error(`PostgreSQL at ${redactedUrl}: ${failure}`),
        });
      }
    };
  const requireOpen = () => {
    if (openFailure !== undefined)
      throw new JournalError(`the journal is unavailable: state ${DATABASE_UNREACHABLE}`, {
        cause: new Error(openFailure),
      });
  };
  const poolRun = runnerOf(pool);
  const run: Run = (sql, params) => {
    requireOpen();
    return poolRun(sql, params);
  };
  const queries = new PgQueries(run);

  /** Runs `fn` in one transaction on one connection; `lock` names the account whose decisions it serializes. */
  async function inTransaction<T>(lock: string | undefined, fn: (run: Run) => Promise<T>): Promise<T> {
    requireOpen();
    let client: pg.PoolClient;
    try {
      client = await pool.connect();
    } catch (error) {
      failure = message(error);
      throw new JournalError(`state ${DATABASE_UNREACHABLE}`, {
        cause: new Error(`PostgreSQL at ${redactedUrl}: ${failure}`),
      });
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
      await migrate(pool, 'journal', JOURNAL_MIGRATIONS);
    } catch (error) {
      if (closed) return;
      const first = !retrying;
      retrying = true;
      openFailure = `cannot open the state database at ${redactedUrl}: ${message(error)}`;
      if (first)
        logger.error(
          { database: redactedUrl, reason: openFailure },
          'remediation disabled: the state database (PostgreSQL) cannot be opened; polling and /metrics go on, the action endpoints answer 503; retrying',
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
      await pool.end();
    },
  };
}
