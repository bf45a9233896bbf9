import { join } from 'node:path';
import { afterAll, beforeAll } from 'vitest';
import { requireBinary } from './binaries.js';
import { postgresBinDir, startPostgres, type TestPostgres } from './postgres-cluster.js';

export { startPostgres, type TestPostgres } from './postgres-cluster.js';

/**
 * Whether Debian's PostgreSQL is installed, in the shape of `requireBinary`: skipped with a reason naming the
 * package when absent, a failure under CI=true or BAREMETAL_E2E=1.
 */
export function requirePostgres(): { skip: false; bin: string } | { skip: true; reason: string } {
  const bin = postgresBinDir();
  const found = requireBinary(join(bin, 'initdb'), 'postgresql');
  return found.skip ? found : { skip: false, bin };
}

/**
 * One PostgreSQL cluster for the calling test file (started before its tests, stopped after them) and a fresh
 * database per `database()` call, its name from `prefix`; `skip`: why PostgreSQL tests are skipped, if they are.
 */
export function postgresDatabases(prefix: string): { skip: string | undefined; database: () => string } {
  const found = requirePostgres();
  let server: TestPostgres | undefined;
  let made = 0;
  beforeAll(async () => {
    if (!found.skip) server = await startPostgres(found.bin);
  }, 120_000);
  afterAll(() => server?.stop());
  return {
    skip: found.skip ? found.reason : undefined,
    database: () => server!.createDatabase(`${prefix}_${process.pid}_${++made}`),
  };
}
