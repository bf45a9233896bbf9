/**
 * What replicas sharing one PostgreSQL (`database.url`) share besides the journal: the pool, the `ha`
 * tables (migrated at start), the server directory and the graph images. Opened before the accounts, whose
 * graph stores write through it.
 */
import type pg from 'pg';
import type { Logger } from 'pino';
import { migrate, openPool } from '../database/postgres.js';
import { SharedGraphs } from '../graphs/shared.js';
import { SharedDirectory } from './directory.js';
import { databaseScrubber, reasonOf } from './redact.js';
import { HA_MIGRATIONS } from './schema.js';

export interface SharedState {
  pool: pg.Pool;
  directory: SharedDirectory;
  graphs: SharedGraphs;
  /** stops the directory's refresh and closes the pool */
  close(): Promise<void>;
}

/**
 * Opens the pool on `database` and applies the `ha` migrations. Throws when the database cannot be reached
 * or migrated; the message names the redacted URL, never the password.
 */
export async function openShared(
  database: { url: string; redactedUrl: string },
  accounts: readonly string[],
  logger: Logger,
  options: { refreshMs?: number } = {},
): Promise<SharedState> {
  const scrub = databaseScrubber(database.url);
  const pool = openPool(database.url, (error) =>
    logger.warn({ database: database.redactedUrl, reason: scrub(error.message) }, 'an idle database connection failed'),
  );
  try {
    await migrate(pool, 'ha', HA_MIGRATIONS);
  } catch (error) {
    await pool.end().catch(() => undefined);
    throw new Error(`cannot prepare the shared database ${database.redactedUrl}: ${reasonOf(scrub, error)}`);
  }
  const directory = new SharedDirectory({ pool, accounts, logger, ...options });
  directory.start();
  return {
    pool,
    directory,
    graphs: new SharedGraphs(pool, accounts, logger),
    close: async () => {
      await directory.stop();
      await pool.end();
    },
  };
}
