import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateAll } from '../../src/store/postgres/migrations.js';
import { openPool } from '../../src/store/postgres/pool.js';
import { SharedDirectory } from '../../src/store/postgres/directory.js';
import { captureLogger } from '../helpers/logger.js';
import { requirePostgres, startPostgres, type TestPostgres } from '../helpers/postgres.js';

const found = requirePostgres();
/** what a leader publishes of a server (its id's main IP) */
const server = (ip: string) => ({ ips: [ip], ip, hostname: `${ip}.example`, location: 'fra1', status: 'online' });

describe.skipIf(found.skip)('the shared server directory, read by a replica (Debian postgresql on loopback)', () => {
  let cluster: TestPostgres;
  let pool: pg.Pool;
  beforeAll(async () => {
    if (found.skip) return;
    cluster = await startPostgres(found.bin);
    pool = openPool(cluster.createDatabase('directory_read'), () => {}, { connectTimeoutMs: 30_000 });
    await migrateAll(pool);
  }, 120_000);
  afterAll(async () => {
    await pool?.end();
    cluster?.stop();
  });

  it('reads every account in one statement, and only the lists that changed since the last read', async () => {
    const accounts = ['acme', 'globex', 'initech'];
    const leader = new SharedDirectory({ pool, accounts, logger: captureLogger().logger });
    await leader.publish('acme', () => ({ '1': server('198.18.0.1') }));
    await leader.publish('globex', () => ({ '2': server('198.18.0.2') }));
    // A follower's pool that counts its statements.
    const statements: string[] = [];
    const counting = {
      query: (sql: string, params: unknown[]) => {
        statements.push(sql);
        return pool.query(sql, params);
      },
    } as unknown as pg.Pool;
    const follower = new SharedDirectory({ pool: counting, accounts, logger: captureLogger().logger });
    await follower.refresh();
    const first = {
      statements: statements.length,
      acme: [...follower.servers('acme').keys()],
      globex: [...follower.servers('globex').keys()],
      initechKnown: follower.snapshot('initech').serversKnown,
    };
    await leader.publish('acme', () => ({ '1': server('198.18.0.1'), '3': server('198.18.0.3') }));
    const globexVersion = follower.snapshot('globex').version;
    await follower.refresh();
    expect({
      first,
      second: {
        statements: statements.length,
        acme: [...follower.servers('acme').keys()],
        acmeVersion: follower.snapshot('acme').version,
        globexVersion: follower.snapshot('globex').version,
      },
    }).toEqual({
      first: { statements: 1, acme: ['1'], globex: ['2'], initechKnown: false },
      second: { statements: 2, acme: ['1', '3'], acmeVersion: '2', globexVersion },
    });
  });
});
