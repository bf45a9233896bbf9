/**
 * Leadership per account on a real PostgreSQL (Debian's, on loopback): replicas sharing six accounts lead two
 * each, one replica per account; a replica that stops hands its accounts over and the others lead them; a
 * replica whose heartbeat stops past its lease loses its accounts, and its writes under the old epoch are refused by the
 * database (fencing).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { StaleLeaseError } from '../../src/errors.js';
import { AccountShares, type AccountTerm } from '../../src/ha/shares.js';
import { AccountLeases } from '../../src/store/postgres/leases.js';
import { Membership } from '../../src/store/postgres/membership.js';
import { termsOf } from '../../src/ha/terms.js';
import { migrateAll } from '../../src/store/postgres/migrations.js';
import { openPool } from '../../src/store/postgres/pool.js';
import { captureLogger } from '../helpers/logger.js';
import { requirePostgres, startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { eventually } from '../helpers/processes.js';

const found = requirePostgres();
const ACCOUNTS = ['acme', 'globex', 'initech', 'umbrella', 'hooli', 'stark'];
const TIMINGS = { leaseMs: 1_500, tickMs: 150, marginMs: 500 };

describe.skipIf(found.skip)('leadership per account (Debian postgresql on loopback)', () => {
  let server: TestPostgres;
  let pool: pg.Pool;
  let database = 0;
  const running: AccountShares[] = [];
  beforeAll(async () => {
    if (found.skip) return;
    server = await startPostgres(found.bin);
  }, 120_000);
  afterEach(async () => {
    await Promise.all(running.splice(0).map((r) => r.stop()));
    await pool?.end();
  });
  afterAll(() => server?.stop());

  /** The database of the latest fleet. */
  let url = '';

  /**
   * What a restart of PostgreSQL does to the fleet's database, done on the run's shared cluster (which no file may
   * restart): every session ended as a shutdown ends it (57P01, `pg_terminate_backend`), and new sessions refused
   * for `refuseMs` (`ALLOW_CONNECTIONS false`, which binds superusers too), then allowed again. Returns how many
   * sessions it ended.
   */
  async function restartAsSeen(refuseMs = 1_000): Promise<number> {
    const db = new URL(url).pathname.slice(1);
    const admin = new pg.Client({ connectionString: url.replace(/\/[^/]+$/, '/postgres') });
    await admin.connect();
    try {
      await admin.query(`ALTER DATABASE ${db} ALLOW_CONNECTIONS false`);
      const ended = await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1', [
        db,
      ]);
      await sleep(refuseMs);
      return ended.rowCount ?? 0;
    } finally {
      await admin.query(`ALTER DATABASE ${db} ALLOW_CONNECTIONS true`).finally(() => admin.end());
    }
  }

  /** A fresh database per test, and what each replica's duties do: `acting` holds who acts for each account. */
  async function fleet() {
    url = server.createDatabase(`ha_shares_${++database}`);
    pool = openPool(url, () => {}, { connectTimeoutMs: 30_000 });
    await migrateAll(pool);
    const acting = new Map<string, Set<string>>(ACCOUNTS.map((a) => [a, new Set()]));
    /** an account acted on by two replicas at once, as the duties saw it */
    const overlaps: string[] = [];
    const replica = (name: string, accounts = ACCOUNTS) => {
      const leases = new AccountLeases({ pool, replica: name, leaseMs: TIMINGS.leaseMs });
      const shares = new AccountShares({
        membership: new Membership({
          pool,
          replica: name,
          leaseMs: TIMINGS.leaseMs,
          terms: termsOf(
            'shared',
            accounts.map((a) => ({ name: a, baseUrl: `http://${a}.invalid` })),
          ),
        }),
        leases,
        accounts,
        logger: captureLogger('debug').logger,
        ...TIMINGS,
        onGained: ({ account }: AccountTerm) => {
          const set = acting.get(account)!;
          if (set.size > 0) overlaps.push(`${account}: ${name} with ${[...set].join(', ')}`);
          set.add(name);
        },
        onLost: ({ account }: AccountTerm) => void acting.get(account)!.delete(name),
      });
      running.push(shares);
      shares.start();
      return { name, shares, leases };
    };
    const loads = (leaders: Map<string, string>, names: string[]) =>
      names.map((n) => [...leaders.values()].filter((l) => l === n).length);
    /**
     * Each account's leader, once every account has exactly one (by `leads` and by the duties) and the replicas
     * lead `expected` accounts each (the share-out converges once every replica has seen the others).
     */
    const settled = (replicas: Array<{ name: string; shares: AccountShares }>, expected: number[]) =>
      eventually(
        `every account led by exactly one replica, ${expected.join('/')}`,
        async () => {
          const leaders = new Map<string, string>();
          for (const account of ACCOUNTS) {
            const by = replicas.filter((r) => r.shares.leads(account));
            const set = acting.get(account)!;
            if (by.length !== 1 || set.size !== 1 || !set.has(by[0]!.name)) return;
            leaders.set(account, by[0]!.name);
          }
          const names = replicas.map((r) => r.name);
          return loads(leaders, names).join() === expected.join() ? leaders : undefined;
        },
        30_000,
        50,
      );
    return { replica, settled, overlaps, acting };
  }

  it('3 replicas × 6 accounts: each account led by exactly one replica, 2/2/2; the leases say the same', async () => {
    const f = await fleet();
    const replicas = ['r0', 'r1', 'r2'].map((n) => f.replica(n));
    const leaders = await f.settled(replicas, [2, 2, 2]);
    const rows = await replicas[0]!.leases.all();
    expect(rows.map((r) => [r.account, r.holder, r.live])).toEqual(
      [...ACCOUNTS].sort().map((a) => [a, leaders.get(a), true]),
    );
    expect(f.overlaps).toEqual([]);
  });

  it('a replica that stops hands its accounts over: the others lead them, 3/3, never two at once', async () => {
    const f = await fleet();
    const replicas = ['r0', 'r1', 'r2'].map((n) => f.replica(n));
    await f.settled(replicas, [2, 2, 2]);
    await replicas[1]!.shares.stop();
    await f.settled([replicas[0]!, replicas[2]!], [3, 3]);
    // it joins again: it gets a share back, handed over by the others' duties ending first
    const back = f.replica('r1');
    await f.settled([replicas[0]!, back, replicas[2]!], [2, 2, 2]);
    expect(f.overlaps).toEqual([]);
  });

  it('a replica whose heartbeat stops past its lease leads nothing, and its writes under the old epoch are refused', async () => {
    const f = await fleet();
    const replicas = ['r0', 'r1', 'r2'].map((n) => f.replica(n));
    const leaders = await f.settled(replicas, [2, 2, 2]);
    const paused = replicas[0]!;
    const account = [...leaders].find(([, r]) => r === 'r0')![0];
    const old = paused.shares.term(account)!;
    const write = (epoch: string) =>
      paused.leases.fenced(account, epoch, (c) =>
        c.query("INSERT INTO event_ids (account, service_key, ids) VALUES ($1, 'k', '{}') ON CONFLICT DO NOTHING", [
          account,
        ]),
      );
    await write(old.epoch);
    paused.shares.pauseHeartbeat();
    // the others lead its accounts once its heartbeat and leases have expired
    await eventually('another replica to lead the paused replica’s account', async () =>
      replicas.slice(1).some((r) => r.shares.leads(account)) ? true : undefined,
    );
    // it trusts the lease no more (no heartbeat needed), and the database refuses a write under the old epoch
    expect(paused.shares.leads(account)).toBe(false);
    await expect(write(old.epoch)).rejects.toBeInstanceOf(StaleLeaseError);
    const rows = await pool.query('SELECT epoch::text AS epoch FROM ha_leases WHERE account = $1', [account]);
    expect(BigInt(rows.rows[0].epoch)).toBeGreaterThan(BigInt(old.epoch));
    paused.shares.resumeHeartbeat();
    await f.settled(replicas, [2, 2, 2]);
    // back in its share, it leads under a new epoch; the old one stays refused
    expect(BigInt(paused.shares.term(account)?.epoch ?? '0')).toBeGreaterThan(BigInt(old.epoch));
    await expect(write(old.epoch)).rejects.toBeInstanceOf(StaleLeaseError);
  });

  it('a leader frozen inside a fenced write (its transaction open, the lease row locked) does not block the takeover', async () => {
    const f = await fleet();
    const replicas = ['r0', 'r1', 'r2'].map((n) => f.replica(n));
    const leaders = await f.settled(replicas, [2, 2, 2]);
    const frozen = replicas[0]!;
    const account = [...leaders].find(([, r]) => r === 'r0')![0];
    // A paused process in the middle of a write: the lease row locked FOR SHARE, its session idle in the
    // transaction. PostgreSQL ends that session after the lease, so that the others' claim goes through.
    let wake = () => {};
    const woken = new Promise<void>((resolve) => (wake = resolve));
    const write = frozen.leases.fenced(account, frozen.shares.term(account)!.epoch, () => woken);
    write.catch(() => {});
    frozen.shares.pauseHeartbeat();
    await eventually('another replica to lead the frozen replica’s account', async () =>
      replicas.slice(1).some((r) => r.shares.leads(account)) ? true : undefined,
    );
    wake();
    await expect(write).rejects.toThrow();
    frozen.shares.resumeHeartbeat();
    await f.settled(replicas, [2, 2, 2]);
  });

  it('a PostgreSQL restart (every session ended): every account is led again, 2/2/2, never two at once', async () => {
    const f = await fleet();
    const replicas = ['r0', 'r1', 'r2'].map((n) => f.replica(n));
    await f.settled(replicas, [2, 2, 2]);
    // The replicas share the fleet's one pool: however many sessions it held then, at least one was ended.
    expect(await restartAsSeen()).toBeGreaterThanOrEqual(1);
    // Past two leases after the restart, a live lease is one claimed or renewed since (on new sessions).
    const restartedAt = Date.now();
    await eventually('two leases to pass', async () =>
      Date.now() - restartedAt > 2 * TIMINGS.leaseMs ? true : undefined,
    );
    const leaders = await f.settled(replicas, [2, 2, 2]);
    // the leases in the database agree, and are live
    const rows = await replicas[0]!.leases.all();
    expect(rows.map((r) => [r.account, r.holder, r.live])).toEqual(
      [...ACCOUNTS].sort().map((a) => [a, leaders.get(a), true]),
    );
    expect(f.overlaps).toEqual([]);
  });

  it('one replica with one account leads it, as one leader does today', async () => {
    const f = await fleet();
    const only = f.replica('solo', ['acme']);
    await eventually('the replica to lead its account', async () => (only.shares.leads('acme') ? true : undefined));
    expect(only.shares.led()).toEqual(['acme']);
    expect(only.shares.term('acme')?.epoch).toBe('1');
  });
});
