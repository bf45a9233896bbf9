import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { requirePostgres, startPostgres, type TestPostgres } from '../helpers/postgres.js';

const found = requirePostgres();

describe.skipIf(found.skip)('the PostgreSQL test harness (Debian postgresql on loopback)', () => {
  let server: TestPostgres;
  beforeAll(async () => {
    if (found.skip) return;
    server = await startPostgres(found.bin);
  }, 120_000);
  afterAll(() => server?.stop());

  it('serves its database over TCP with the password it chose', async () => {
    const client = new pg.Client({ connectionString: server.url });
    await client.connect();
    const { rows } = await client.query<{ db: string; n: number }>('SELECT current_database() AS db, 1 + 1 AS n');
    await client.end();
    expect(rows).toEqual([{ db: 'bmx', n: 2 }]);
  });

  it('refuses a wrong password (scram auth is on)', async () => {
    const client = new pg.Client({ connectionString: server.url.replace(server.password, 'wrong-password') });
    await expect(client.connect()).rejects.toThrow(/password authentication failed/);
    await client.end().catch(() => {});
  });

  it('creates a separate database on request', async () => {
    const url = server.createDatabase('harness_extra');
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const { rows } = await client.query<{ db: string }>('SELECT current_database() AS db');
    await client.end();
    expect(rows[0]!.db).toBe('harness_extra');
  });
});
