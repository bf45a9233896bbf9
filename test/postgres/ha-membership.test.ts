/**
 * Replica membership on a real PostgreSQL (Debian's, on loopback): heartbeats make a replica live, a replica
 * that stops beating drops out after the lease, one that leaves drops out at once, and every replica computes
 * the same share-out of the accounts from what it reads.
 */
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accountsOf, assignAccounts } from '../../src/ha/assignment.js';
import { Membership } from '../../src/store/postgres/membership.js';
import { migrateAll } from '../../src/store/postgres/migrations.js';
import { openPool } from '../../src/store/postgres/pool.js';
import { requirePostgres, startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { eventually } from '../helpers/processes.js';

const found = requirePostgres();

describe.skipIf(found.skip)('replica membership (Debian postgresql on loopback)', () => {
  let server: TestPostgres;
  let pool: pg.Pool;
  beforeAll(async () => {
    if (found.skip) return;
    server = await startPostgres(found.bin);
    pool = openPool(server.createDatabase('ha_membership'), () => {}, { connectTimeoutMs: 30_000 });
    await migrateAll(pool);
  }, 120_000);
  afterAll(async () => {
    await pool?.end();
    server?.stop();
  });

  it('counts the replicas that beat; one that stops beating drops out after the lease, one that leaves at once', async () => {
    const [a, b, c] = ['replica-a', 'replica-b', 'replica-c'].map(
      (replica) => new Membership({ pool, replica, leaseMs: 1_500 }),
    ) as [Membership, Membership, Membership];
    await a.beat();
    await b.beat();
    expect(await c.beat()).toEqual(['replica-a', 'replica-b', 'replica-c']);
    // b leaves: gone at once for the others
    await b.leave();
    expect(await a.beat()).toEqual(['replica-a', 'replica-c']);
    // c stops beating: a still counts it until its heartbeat is older than the lease, then no more
    await eventually('replica-c to drop out', async () => {
      const live = await a.beat();
      return live.includes('replica-c') ? undefined : live;
    });
    expect(await a.beat()).toEqual(['replica-a']);
    // c comes back with its next heartbeat
    expect(await c.beat()).toEqual(['replica-a', 'replica-c']);
  });

  it('gives every replica the same share-out of the accounts: 6 accounts on 3 replicas, 2/2/2', async () => {
    const accounts = ['acme', 'globex', 'initech', 'umbrella', 'hooli', 'stark'];
    const replicas = ['share-0', 'share-1', 'share-2'].map(
      (replica) => new Membership({ pool, replica, leaseMs: 60_000 }),
    );
    for (const m of replicas) await m.beat();
    const views = await Promise.all(replicas.map(async (m) => (await m.beat()).filter((r) => r.startsWith('share-'))));
    const assignments = views.map((live) => assignAccounts(accounts, live));
    for (const assignment of assignments) expect(assignment).toEqual(assignments[0]);
    expect(replicas.map((m) => accountsOf(assignments[0]!, m.replica).length)).toEqual([2, 2, 2]);
    await Promise.all(replicas.map((m) => m.leave()));
  });
});
