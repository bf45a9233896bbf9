/**
 * Replica membership on a real PostgreSQL (Debian's, on loopback): heartbeats make a replica live, a replica
 * that stops beating drops out after the lease, one that leaves drops out at once, and every replica computes
 * the same share-out of the accounts from what it reads.
 */
import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accountsOf, assignAccounts } from '../../src/ha/assignment.js';
import { Membership } from '../../src/store/postgres/membership.js';
import { judge, termsOf } from '../../src/ha/terms.js';
import { migrateAll } from '../../src/store/postgres/migrations.js';
import { ADVISORY_LOCKS } from '../../src/store/postgres/bounds.js';
import { openPool } from '../../src/store/postgres/pool.js';
import { requirePostgres, startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { eventually } from '../helpers/processes.js';

const found = requirePostgres();
const TERMS = termsOf('shared', [{ name: 'default', baseUrl: 'http://api.invalid' }]);

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
      (replica) => new Membership({ pool, replica, leaseMs: 1_500, terms: TERMS }),
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

  it('publishes the terms; a name held by a live process of another boot is not overwritten until it leaves', async () => {
    const first = new Membership({ pool, replica: 'twin', leaseMs: 60_000, terms: TERMS, bootId: 'boot-1' });
    const second = new Membership({ pool, replica: 'twin', leaseMs: 60_000, terms: TERMS, bootId: 'boot-2' });
    const seen = await first.members();
    expect(seen.live.filter((m) => m.replica === 'twin')).toEqual([
      expect.objectContaining({ bootId: 'boot-1', terms: TERMS }),
    ]);
    // the second process of that name sees the first's row, and its heartbeat changes nothing
    const refused = await second.members();
    expect(refused.live.filter((m) => m.replica === 'twin').map((m) => m.bootId)).toEqual(['boot-1']);
    expect(judge({ replica: 'twin', bootId: 'boot-2', terms: TERMS }, refused.live).mismatch?.reason).toBe(
      'duplicate_name',
    );
    // How long ago the holder beat, in database time: a killed process's row ages, and is waited for.
    const held = refused.live.find((m) => m.replica === 'twin')!;
    expect(held.heartbeatAgeMs).toBeGreaterThanOrEqual(0);
    await pool.query("UPDATE ha_replicas SET heartbeat_at = now() - interval '5 seconds' WHERE replica = 'twin'");
    const aged = (await second.members()).live.find((m) => m.replica === 'twin')!;
    expect(aged).toMatchObject({ bootId: 'boot-1' });
    expect(aged.heartbeatAgeMs).toBeGreaterThanOrEqual(5_000);
    expect(judge({ replica: 'twin', bootId: 'boot-2', terms: TERMS }, [aged], false, 2_000).mismatch).toMatchObject({
      reason: 'duplicate_name',
      waiting: true,
    });
    expect(judge({ replica: 'twin', bootId: 'boot-1', terms: TERMS }, (await first.members()).live).mismatch).toBe(
      undefined,
    );
    // its leave deletes nothing of the first's; once the first leaves, the second takes the name
    await second.leave();
    expect((await first.members()).live.filter((m) => m.replica === 'twin').map((m) => m.bootId)).toEqual(['boot-1']);
    await first.leave();
    const taken = await second.members();
    expect(taken.live.filter((m) => m.replica === 'twin').map((m) => m.bootId)).toEqual(['boot-2']);
    await second.leave();
  });

  it('sees the single leader’s advisory lock held by any session on its database, not on another', async () => {
    const m = new Membership({ pool, replica: 'lock-watcher', leaseMs: 60_000, terms: TERMS });
    expect((await m.members()).singleLeaderLocked).toBe(false);
    // another deployment's single leader, on another database of the same server
    const other = openPool(server.createDatabase('ha_membership_other'), () => {}, { connectTimeoutMs: 30_000 });
    const elsewhere = await other.connect();
    try {
      await elsewhere.query('SELECT pg_advisory_lock($1)', [ADVISORY_LOCKS.leader]);
      expect((await m.members()).singleLeaderLocked).toBe(false);
    } finally {
      elsewhere.release();
      await other.end();
    }
    const client = await pool.connect();
    try {
      await client.query('SELECT pg_advisory_lock($1)', [ADVISORY_LOCKS.leader]);
      expect((await m.members()).singleLeaderLocked).toBe(true);
      await client.query('SELECT pg_advisory_unlock($1)', [ADVISORY_LOCKS.leader]);
    } finally {
      client.release();
    }
    expect((await m.members()).singleLeaderLocked).toBe(false);
    await m.leave();
  });

  it('gives every replica the same share-out of the accounts: 6 accounts on 3 replicas, 2/2/2', async () => {
    const accounts = ['acme', 'globex', 'initech', 'umbrella', 'hooli', 'stark'];
    const replicas = ['share-0', 'share-1', 'share-2'].map(
      (replica) => new Membership({ pool, replica, leaseMs: 60_000, terms: TERMS }),
    );
    for (const m of replicas) await m.beat();
    const views = await Promise.all(replicas.map(async (m) => (await m.beat()).filter((r) => r.startsWith('share-'))));
    const assignments = views.map((live) => assignAccounts(accounts, live));
    for (const assignment of assignments) expect(assignment).toEqual(assignments[0]);
    expect(replicas.map((m) => accountsOf(assignments[0]!, m.replica).length)).toEqual([2, 2, 2]);
    await Promise.all(replicas.map((m) => m.leave()));
  });
});
