/**
 * The two state-store backends as the shared suites use them: `fresh()` gives a new, empty database and a way to
 * open any number of stores on it (two stores = two processes or two replicas: two SQLite connections on one
 * file, two PostgreSQL pools). Every store opened is closed after the file's tests; PostgreSQL is a real
 * Debian server on loopback (skipped when absent, failing under CI=true).
 */
import { join } from 'node:path';
import { afterAll, afterEach, beforeAll } from 'vitest';
import { captureLogger } from './logger.js';
import { requirePostgres, startPostgres, type TestPostgres } from './postgres.js';
import { openTestStore } from './remediation.js';
import { tempDir } from './tmp.js';
import { openPostgresStore } from '../../src/store/postgres/store.js';
import type { StateStore } from '../../src/store/store.js';

export interface TestDatabase {
  /** opens another store on this database */
  open(): Promise<StateStore>;
  /** what the stores logged (PostgreSQL; empty for SQLite) */
  lines: string[];
  /** PostgreSQL's URL with its password, to check it never shows */
  secret?: string;
  /** PostgreSQL: the database's URL (to prepare it before a store opens it) */
  url?: string;
}

export interface Backend {
  name: 'sqlite' | 'postgres';
  /** why it is skipped, when it is */
  skip: string | undefined;
  fresh(): Promise<TestDatabase>;
}

/** Registers the backends' lifecycle hooks in the calling test file and returns them. */
export function backends(): Backend[] {
  const opened: StateStore[] = [];
  afterEach(async () => {
    await Promise.all(opened.splice(0).map((s) => s.close()));
  });
  const found = requirePostgres();
  let server: TestPostgres | undefined;
  let databases = 0;
  beforeAll(async () => {
    if (!found.skip) server = await startPostgres(found.bin);
  }, 120_000);
  afterAll(() => server?.stop());
  const keep = (s: StateStore) => {
    opened.push(s);
    return s;
  };
  return [
    {
      name: 'sqlite',
      skip: undefined,
      fresh: async () => {
        const path = join(tempDir(), 'journal.db');
        return { open: async () => keep(openTestStore(path)), lines: [] };
      },
    },
    {
      name: 'postgres',
      skip: found.skip ? found.reason : undefined,
      fresh: async () => {
        const url = server!.createDatabase(`store_${process.pid}_${++databases}`);
        const log = captureLogger();
        return {
          open: async () =>
            keep(
              await openPostgresStore({
                url,
                accounts: ['default'],
                redactedUrl: url.replace(server!.password, '***'),
                logger: log.logger,
                retryMs: 200,
                pingMs: 200,
              }),
            ),
          lines: log.lines,
          secret: server!.password,
          url,
        };
      },
    },
  ];
}
