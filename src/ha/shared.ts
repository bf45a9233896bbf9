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
import { databaseScrubber, reasonOf } from '../database/redact.js';
import { HA_MIGRATIONS } from './schema.js';

export interface SharedState {
  /**
   * resolves once the `ha` tables are migrated (at once when the database answers; otherwise retried every
   * `retryMs` until it does, or until close()); a replica leads only after it
   */
  ready: Promise<void>;
  pool: pg.Pool;
  directory: SharedDirectory;
  graphs: SharedGraphs;
  /** stops the directory's refresh and closes the pool */
  close(): Promise<void>;
}

/**
 * Opens the pool on `database` and applies the `ha` migrations in the background: a database that cannot be
 * reached or migrated at start does not fail the start (the daemon serves /metrics and /readyz names the
 * problem; nothing polls, since no replica can be elected without it). The failure is logged once per
 * distinct reason, with the redacted URL, never the password, and retried every `retryMs` (default 5 s).
 */
export function openShared(
  database: { url: string; redactedUrl: string },
  accounts: readonly string[],
  logger: Logger,
  options: { refreshMs?: number; retryMs?: number } = {},
): SharedState {
  const scrub = databaseScrubber(database.url);
  const pool = openPool(database.url, (error) =>
    logger.warn({ database: database.redactedUrl, reason: scrub(error.message) }, 'an idle database connection failed'),
  );
  const directory = new SharedDirectory({
    pool,
    accounts,
    logger,
    ...(options.refreshMs !== undefined ? { refreshMs: options.refreshMs } : {}),
  });
  let closed = false;
  let wake: (() => void) | undefined;
  const ready = (async () => {
    let logged: string | undefined;
    while (!closed) {
      try {
        await migrate(pool, 'ha', HA_MIGRATIONS);
        if (logged !== undefined) logger.info({ database: database.redactedUrl }, 'shared database prepared');
        if (!closed) directory.start();
        return;
      } catch (error) {
        const reason = reasonOf(scrub, error);
        if (reason !== logged)
          logger.error(
            { database: database.redactedUrl, reason },
            'cannot prepare the shared database: no replica can lead (nothing polls) until it answers; retrying',
          );
        logged = reason;
      }
      await new Promise<void>((resolve) => {
        wake = resolve;
        setTimeout(resolve, options.retryMs ?? 5_000).unref();
      });
    }
  })();
  return {
    ready,
    pool,
    directory,
    graphs: new SharedGraphs(pool, accounts, logger),
    close: async () => {
      closed = true;
      wake?.();
      await ready;
      await directory.stop();
      await pool.end();
    },
  };
}
