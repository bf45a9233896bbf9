/**
 * The one place that picks the state store's backend from `config.database` (the daemon and the CLI's `api`
 * writes): SQLite at `<state_dir>/journal.db` (the default), or PostgreSQL at `database.url` (shared by
 * replicas). Neither throws: a store that cannot be opened is returned unavailable (remediation disabled, the
 * action endpoints answer 503, /readyz names the reason).
 */
import { join } from 'node:path';
import type { Logger } from 'pino';
import type { Config } from '../config/types.js';
import type { PostgresStore, PostgresStoreOptions } from './postgres/store.js';
import { openSqliteStore, type SqliteStore } from './sqlite/store.js';

export interface OpenStoreOptions {
  logger: Logger;
  /** SQLite only: a reason not to open the journal (an unlockable state_dir) */
  refuse?: string;
  /** PostgreSQL only: retry, health-check and directory refresh intervals, pool limits */
  postgres?: Pick<PostgresStoreOptions, 'retryMs' | 'pingMs' | 'refreshMs' | 'limits'>;
}

/** A state store of either backend; `kind` tells which. */
export type OpenedStore = SqliteStore | PostgresStore;

export async function openStore(
  config: Pick<Config, 'database' | 'stateDir' | 'accounts'>,
  o: OpenStoreOptions,
): Promise<OpenedStore> {
  const db = config.database;
  if (db.kind === 'sqlite') return openSqliteStore(join(config.stateDir, 'journal.db'), config.stateDir, o.refuse);
  o.logger.info({ database: db.redactedUrl }, 'state database: PostgreSQL');
  // node-postgres and the backend's modules are loaded only with a PostgreSQL database (issue 53).
  const { openPostgresStore } = await import('./postgres/store.js');
  return openPostgresStore({
    url: db.url,
    redactedUrl: db.redactedUrl,
    logger: o.logger,
    accounts: config.accounts.map((a) => a.name),
    ...o.postgres,
  });
}
