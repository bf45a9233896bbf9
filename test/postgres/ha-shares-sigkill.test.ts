/**
 * A crash, with real processes: three `baremetal-exporter run` with `database.share_accounts` on one PostgreSQL
 * (Debian's, on loopback), six simulators as the accounts' upstreams, each replica with an API key of its own per
 * account (so the simulator tells which replica called). One replica is killed with SIGKILL: nothing handed over,
 * its heartbeat row and leases left to expire (the defaults: 10 s lease, 2 s heartbeat). The requirement
 * (issue 42): its accounts are led again within 15 s of the kill, each by exactly one replica — read from
 * `baremetal_leader{account}` on the survivors' /metrics — and from then on each account is polled by that one
 * replica only, counted at the simulators by API key.
 */
import { describe, expect, it } from 'vitest';
import { ledOn, leaseRows, type ReplicaProcesses, replicaSuite } from '../helpers/replica-processes.js';
import { ACCOUNTS, REPLICAS } from '../helpers/shared-accounts.js';
import { eventually } from '../helpers/processes.js';

const suite = replicaSuite();
const { sims } = suite;
const keyOf = (account: string, replica: number) => `sigkill-key-${account}-r${replica}-81f3`;
/** the failover target of issue 42: an account of a crashed replica is led again within this, ms */
const FAILOVER_TARGET_MS = 15_000;

describe.skipIf(suite.skip)('a replica killed with SIGKILL (processes, Debian postgresql on loopback)', () => {
  let replicas: ReplicaProcesses | undefined;

  /** account → the replicas (indexes) among `alive` whose baremetal_leader{account} is 1 */
  const leaders = async (alive: readonly number[]) => {
    const out = new Map<string, number[]>(ACCOUNTS.map((a) => [a, []]));
    for (const r of alive) for (const account of await ledOn(replicas!.started[r]!.port)) out.get(account)!.push(r);
    return out;
  };
  /** each account's one leader among `alive`, once every account has exactly one; undefined before */
  const oneEach = async (alive: readonly number[]) => {
    const by = await leaders(alive);
    return [...by.values()].every((l) => l.length === 1) ? new Map([...by].map(([a, l]) => [a, l[0]!])) : undefined;
  };

  it('its accounts are led again within 15 s of the kill, each by one survivor, and polled by that one only', async () => {
    const started = await suite.start('ha_shares_sigkill', keyOf, {
      account: { retries: 0 },
      config: {
        collectors: { graphs: false },
        schedules: { servers: '*/5 * * * * *', firewall: '*/5 * * * * *' },
      },
    });
    replicas = started.replicas;
    const { db } = started;
    const all = [0, 1, 2];
    await Promise.all(all.map((r) => replicas!.start(r)));
    const before = await eventually(
      'every account led by one replica, 2/2/2',
      async () => {
        const leaderOf = await oneEach(all);
        const loads = all.map((r) => [...(leaderOf?.values() ?? [])].filter((l) => l === r).length);
        return leaderOf && loads.join() === '2,2,2' ? leaderOf : undefined;
      },
      60_000,
      200,
    );

    const killed = 2;
    const survivors = all.filter((r) => r !== killed);
    const orphans = ACCOUNTS.filter((a) => before.get(a) === killed);
    const { child, exited } = replicas.started[killed]!.run;
    const killedAt = Date.now();
    child.kill('SIGKILL');
    // Sampled every 100 ms; the time kept is when the sample that saw it answered (an upper bound).
    const after = await eventually(
      `every account led by exactly one of r${survivors.join(', r')} after r${killed} was killed`,
      async () => {
        const leaderOf = await oneEach(survivors);
        return leaderOf && { leaderOf, at: Date.now() };
      },
      60_000,
      100,
    );
    const failoverMs = after.at - killedAt;
    console.log(`accounts of the killed replica (${orphans.join(', ')}) led again after ${failoverMs} ms`);
    expect(await exited).toBeNull();
    expect(failoverMs).toBeLessThanOrEqual(FAILOVER_TARGET_MS);
    // no survivor leads more than ⌈6 ÷ 2⌉
    for (const r of survivors)
      expect([...after.leaderOf.values()].filter((l) => l === r).length).toBeLessThanOrEqual(3);

    // The share-out may still move an account between the survivors (a planned handover, at their next
    // heartbeat): the leaders are read until they have not changed for 5 s, more than two heartbeats.
    let last = { key: '', since: 0 };
    const stable = await eventually(
      'the leaders unchanged for 5 s',
      async () => {
        const leaderOf = await oneEach(survivors);
        const key = JSON.stringify([...(leaderOf ?? [])]);
        if (key !== last.key) last = { key, since: Date.now() };
        return leaderOf && Date.now() - last.since >= 5_000 ? { leaderOf, since: last.since } : undefined;
      },
      45_000,
      200,
    );
    // the leases say the same: held by the survivor whose metric says it leads
    const rows = await leaseRows(db);
    for (const row of rows) expect(row.holder).toBe(REPLICAS[stable.leaderOf.get(row.account)!]);

    // At the simulators, from then on: every account polled (in two poll periods), by its leader only.
    const calls = (account: string) => sims.get(account)!.calls.filter((c) => c.at >= stable.since);
    await eventually(
      'every account polled in two poll periods since',
      async () =>
        ACCOUNTS.every((a) => new Set(calls(a).map((c) => Math.floor(c.at / 5_000))).size >= 2) ? true : undefined,
      45_000,
      250,
    );
    const pollers = new Map(ACCOUNTS.map((a) => [a, [...new Set(calls(a).map((c) => c.keyId))].sort()]));
    expect(pollers).toEqual(new Map(ACCOUNTS.map((a) => [a, [stable.leaderOf.get(a)]])));
    expect(replicas.output()).not.toContain(suite.server().password);
  }, 240_000);
});
