/**
 * Vitest globalSetup: one PostgreSQL cluster for the whole test run (Debian's binaries, on loopback), handed to
 * every worker through `BAREMETAL_TEST_POSTGRES`; each file's `startPostgres()` is then a database of its own on
 * it (no `initdb` per file). When the variable is set already (an outer runner started the cluster) it is kept.
 * Without Debian's PostgreSQL nothing starts and the PostgreSQL tests skip (or fail, under CI=true) as before.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { postgresBinDir, SHARED_POSTGRES_ENV, startPostgres } from '../helpers/postgres-cluster.ts';

export default async function setup(): Promise<(() => void) | undefined> {
  if (process.env[SHARED_POSTGRES_ENV]) return undefined;
  const bin = postgresBinDir();
  if (!existsSync(join(bin, 'initdb'))) return undefined;
  const cluster = await startPostgres(bin, { own: true });
  process.env[SHARED_POSTGRES_ENV] = JSON.stringify({ port: cluster.port, password: cluster.password });
  return () => {
    delete process.env[SHARED_POSTGRES_ENV];
    cluster.stop();
  };
}
