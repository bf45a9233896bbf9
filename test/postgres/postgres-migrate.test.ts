import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MIGRATIONS, migrateAll } from '../../src/store/postgres/migrations.js';
import { migrate, openPool } from '../../src/store/postgres/pool.js';
import { requirePostgres, startPostgres, type TestPostgres } from '../helpers/postgres.js';

const found = requirePostgres();

describe.skipIf(found.skip)('PostgreSQL migrations (Debian postgresql on loopback)', () => {
  let server: TestPostgres;
  const pools: pg.Pool[] = [];
  const pool = (url: string) => {
    // A generous connect timeout: what this file tests is the migrations, not a loaded machine's connect time.
    const p = openPool(url, () => {}, { connectTimeoutMs: 30_000 });
    pools.push(p);
    return p;
  };
  beforeAll(async () => {
    if (found.skip) return;
    server = await startPostgres(found.bin);
  }, 120_000);
  afterAll(async () => {
    await Promise.all(pools.map((p) => p.end()));
    server?.stop();
  });

  it('applies each migration once when two replicas start together, components counted apart', async () => {
    const url = server.createDatabase('migrate_race');
    const a = pool(url);
    const b = pool(url);
    const journal = ['CREATE TABLE t1 (id INTEGER)', 'INSERT INTO t1 VALUES (1)'];
    await Promise.all([
      migrate(a, 'journal', journal),
      migrate(b, 'journal', journal),
      migrate(b, 'ha', ['CREATE TABLE t2 (id INTEGER)']),
    ]);
    const { rows } = await a.query('SELECT count(*)::int AS n FROM t1');
    expect(rows[0].n).toBe(1);
    const versions = await a.query('SELECT component, version FROM schema_migrations ORDER BY component, version');
    expect(versions.rows).toEqual([
      { component: 'ha', version: 1 },
      { component: 'journal', version: 1 },
      { component: 'journal', version: 2 },
    ]);
    // a later start with one more migration applies only that one
    await migrate(a, 'journal', [...journal, 'INSERT INTO t1 VALUES (2)']);
    expect((await a.query('SELECT count(*)::int AS n FROM t1')).rows[0].n).toBe(2);
  });

  it('migrates journal version 6: an expired row loses the approval time it was given, a settled one keeps it', async () => {
    const p = pool(server.createDatabase('migrate_expired'));
    await migrate(p, 'journal', MIGRATIONS.journal.slice(0, 6));
    await p.query(`INSERT INTO actions (account, created_at, source, action, server_id, decision, approver, approved_at)
      VALUES ('default', 1, 'operator', 'powercycle', '100001', 'expired', NULL, 900001),
             ('default', 2, 'operator', 'powercycle', '100002', 'denied_by_approver', 'bob', 900002)`);
    await migrateAll(p);
    const { rows } = await p.query('SELECT decision, approver, approved_at, approver_reason FROM actions ORDER BY id');
    expect(rows).toEqual([
      { decision: 'expired', approver: null, approved_at: null, approver_reason: null },
      { decision: 'denied_by_approver', approver: 'bob', approved_at: '900002', approver_reason: null },
    ]);
  });

  it('refuses a schema newer than it knows, and rolls a failing migration back', async () => {
    const url = server.createDatabase('migrate_fail');
    const p = pool(url);
    await migrate(p, 'journal', ['CREATE TABLE t1 (id INTEGER)', 'CREATE TABLE t3 (id INTEGER)']);
    await expect(migrate(p, 'journal', ['CREATE TABLE t1 (id INTEGER)'])).rejects.toThrow(
      /journal schema is at version 2, newer than this exporter knows \(1\)/,
    );
    await expect(
      migrate(p, 'journal', [
        'CREATE TABLE t1 (id INTEGER)',
        'CREATE TABLE t3 (id INTEGER)',
        'CREATE TABLE t4 (id INTEGER); SELECT nope',
      ]),
    ).rejects.toThrow(/nope/);
    const t4 = await p.query("SELECT to_regclass('t4') AS t");
    expect(t4.rows[0].t).toBeNull();
    const max = await p.query("SELECT max(version) AS v FROM schema_migrations WHERE component = 'journal'");
    expect(max.rows[0].v).toBe(2);
  });
});
