/**
 * PostgreSQL, the state shared by replicas (`database.url`): the connection pool every part uses and the
 * versioned schema migrations, applied at start under a session advisory lock so that two replicas starting
 * together never apply one migration twice. Each part of the daemon keeps its own migration list under its
 * own name (`journal`, `ha`): their versions are counted apart, in one table.
 *
 * Advisory lock ids used by the daemon are listed here, one place, so that no two parts pick the same.
 */
import pg from 'pg';

/** Session-level advisory lock ids (bigint; these are arbitrary constants, stable across versions). */
export const ADVISORY_LOCKS = {
  /** held while migrations are applied */
  migrations: 0x6d78_0001n,
  /** held by the leader for as long as it leads (session level, on its own connection) */
  leader: 0x6d78_0002n,
} as const;

/**
 * The transaction-level advisory lock key of an account's decisions (`$1`: the account name), taken with
 * `pg_advisory_xact_lock` by every guard decision: derived from the name, in the same bigint space as the ids
 * above (a collision with them is a 2^-64 chance and would only make a decision wait).
 */
export const ACCOUNT_LOCK_KEY = "hashtextextended('bmx:' || $1, 0)";

/** Bounds of every connection: how long to wait for a connection and for a statement, in ms. */
export interface PoolLimits {
  /** connections at most */
  max: number;
  /** giving up on connecting after, ms */
  connectTimeoutMs: number;
  /** a statement running longer is cancelled by the server (statement_timeout), ms */
  statementTimeoutMs: number;
  /** an idle connection is closed after, ms */
  idleTimeoutMs: number;
}

export const DEFAULT_POOL_LIMITS: PoolLimits = {
  max: 10,
  connectTimeoutMs: 5_000,
  statementTimeoutMs: 10_000,
  idleTimeoutMs: 30_000,
};

/**
 * A node-postgres pool on `url` with `limits`. An idle connection's error (the server restarted, the network
 * dropped) is passed to `onError` instead of crashing the process; the pool replaces the connection. The
 * URL carries the password: never log it or an error's `message` unredacted (pg's messages do not include it).
 */
export function openPool(url: string, onError: (error: Error) => void, limits: Partial<PoolLimits> = {}): pg.Pool {
  const l = { ...DEFAULT_POOL_LIMITS, ...limits };
  const pool = new pg.Pool({
    connectionString: url,
    max: l.max,
    connectionTimeoutMillis: l.connectTimeoutMs,
    idleTimeoutMillis: l.idleTimeoutMs,
    statement_timeout: l.statementTimeoutMs,
    query_timeout: l.statementTimeoutMs + 1_000,
    application_name: 'baremetal-exporter',
  });
  pool.on('error', onError);
  return pool;
}

/** One migration: SQL applied in one transaction. Append only: a released migration is never edited. */
export type Migration = string;

/**
 * Applies the migrations of `component` that the database does not have yet, in order, each in its own
 * transaction, under the migrations advisory lock (a second replica waits, then finds nothing to do).
 * Throws when the database is newer than this exporter knows (a downgrade) or a migration fails (that
 * migration is rolled back; the earlier ones stay).
 */
export async function migrate(pool: pg.Pool, component: string, migrations: readonly Migration[]): Promise<void> {
  const client = await pool.connect();
  try {
    await client.query('SELECT pg_advisory_lock($1)', [ADVISORY_LOCKS.migrations]);
    try {
      await client.query(
        `CREATE TABLE IF NOT EXISTS schema_migrations (
           component TEXT NOT NULL,
           version INTEGER NOT NULL,
           applied_at TIMESTAMPTZ NOT NULL DEFAULT now(),
           PRIMARY KEY (component, version)
         )`,
      );
      const { rows } = await client.query<{ version: number | null }>(
        'SELECT max(version) AS version FROM schema_migrations WHERE component = $1',
        [component],
      );
      const current = rows[0]?.version ?? 0;
      if (current > migrations.length)
        throw new Error(
          `the ${component} schema is at version ${current}, newer than this exporter knows (${migrations.length})`,
        );
      for (let v = current; v < migrations.length; v++) {
        await client.query('BEGIN');
        try {
          await client.query(migrations[v]!);
          await client.query('INSERT INTO schema_migrations (component, version) VALUES ($1, $2)', [component, v + 1]);
          await client.query('COMMIT');
        } catch (error) {
          await client.query('ROLLBACK');
          throw error;
        }
      }
    } finally {
      await client.query('SELECT pg_advisory_unlock($1)', [ADVISORY_LOCKS.migrations]);
    }
  } finally {
    client.release();
  }
}
