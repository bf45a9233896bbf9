/**
 * PostgreSQL, the state shared by replicas (`database.url`): the connection pool every part uses and the
 * versioned schema migrations, applied at start under a session advisory lock so that two replicas starting
 * together never apply one migration twice. Each part of the daemon keeps its own migration list under its
 * own name (`journal`, `ha`): their versions are counted apart, in one table.
 *
 * Its advisory lock ids and pool limits are in bounds.ts, apart, so that what only needs them (the leader
 * election, the CLI's defaults) does not load node-postgres.
 */
import pg from 'pg';
import { ADVISORY_LOCKS, DEFAULT_POOL_LIMITS, type PoolLimits } from './bounds.js';

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
