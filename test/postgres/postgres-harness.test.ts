import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SHARED_POSTGRES_ENV } from '../helpers/postgres-cluster.js';
import { requirePostgres, startPostgres, type TestPostgres } from '../helpers/postgres.js';

const found = requirePostgres();

async function currentDatabase(url: string): Promise<string> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  const { rows } = await client.query<{ db: string }>('SELECT current_database() AS db');
  await client.end();
  return rows[0]!.db;
}

// The run's one cluster (test/setup/postgres.ts), seen through a view: databases named after the asked name. A
// cluster of its own (`own: true`, what the bench uses) is what test/setup/postgres.ts itself starts for the run:
// every run goes through that path once, and no file starts a second cluster.
const named = (name: string) => expect.stringMatching(`^${name}_v`);

describe.skipIf(found.skip)(
  "the PostgreSQL test harness (Debian postgresql on loopback): a view of the run's shared cluster",
  () => {
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
      expect(rows).toEqual([{ db: named('bmx'), n: 2 }]);
    });

    it('refuses a wrong password (scram auth is on)', async () => {
      const client = new pg.Client({ connectionString: server.url.replace(server.password, 'wrong-password') });
      await expect(client.connect()).rejects.toThrow(/password authentication failed/);
      await client.end().catch(() => {});
    });

    it('creates a separate database on request', async () => {
      expect(await currentDatabase(server.createDatabase('harness_extra'))).toEqual(named('harness_extra'));
    });
  },
);

describe.skipIf(found.skip)("the run's shared cluster", () => {
  it('is the one the run started: every view is on its port, no initdb of its own', async () => {
    const shared = JSON.parse(process.env[SHARED_POSTGRES_ENV] ?? '{}') as { port?: number };
    const a = await startPostgres(found.skip ? '' : found.bin);
    const b = await startPostgres(found.skip ? '' : found.bin);
    try {
      expect([a.port, b.port]).toEqual([shared.port, shared.port]);
    } finally {
      a.stop();
      b.stop();
    }
  });

  it('keeps two views apart when they ask for the same name, and drops what a view made when it stops', async () => {
    const a = await startPostgres(found.skip ? '' : found.bin);
    const b = await startPostgres(found.skip ? '' : found.bin);
    const [dbA, dbB] = [
      await currentDatabase(a.createDatabase('same')),
      await currentDatabase(b.createDatabase('same')),
    ];
    expect(dbA).not.toBe(dbB);
    a.stop();
    const client = new pg.Client({ connectionString: b.url });
    await client.connect();
    const { rows } = await client.query<{ n: string }>(
      'SELECT count(*)::text AS n FROM pg_database WHERE datname = $1',
      [dbA],
    );
    await client.end();
    b.stop();
    expect(rows[0]!.n).toBe('0');
  });

  it('refuses a restart, naming the way to a cluster of its own', async () => {
    const view = await startPostgres(found.skip ? '' : found.bin);
    try {
      expect(() => view.restart()).toThrow(/startPostgres\(bin, \{ own: true \}\)/);
    } finally {
      view.stop();
    }
  });
});
