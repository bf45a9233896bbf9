/**
 * Fencing of real processes: three `baremetal-exporter run` with `database.share_accounts` on one PostgreSQL
 * (Debian's, on loopback), six simulators as the accounts' upstreams, each replica with an API key of its own
 * per account (so the simulator tells which replica called). One replica is frozen with SIGSTOP for longer than
 * its lease (the defaults: 10 s lease, 2 s heartbeat) while a poll run of its is in flight: the catalog run's
 * first request sent, its reply held back by the simulators' latency, its second queued behind it (one request at
 * a time). Once the others lead its accounts (ha_leases: another holder, a new epoch) it is woken with SIGCONT,
 * the reply waiting for it. From then until it claims an account again (a newer epoch in ha_leases) it sends that
 * account's API nothing: every call with its key that the simulator recorded before a sample of ha_leases still
 * showing the other holder's epoch is a violation. Before scheduler/lease-gate.ts the queued request could go out
 * on waking, when the process handled the reply before its lease's watchdog timer (in 3 of 8 runs here).
 */
import { describe, expect, it } from 'vitest';
import { leaseRows, replicaSuite } from '../helpers/replica-processes.js';
import { REPLICAS } from '../helpers/shared-accounts.js';
import { eventually } from '../helpers/processes.js';

const suite = replicaSuite();
const { sims } = suite;
const keyOf = (account: string, replica: number) => `fencing-key-${account}-r${replica}-4b9a`;
/** how long the simulators hold each reply back, ms: a run's requests are in flight that long each */
const LATENCY_MS = 1_000;
/** the catalog run's requests */
const CATALOG = ['/api/v1/dedicated/provision/os_ids', '/api/v1/reseller/locations'];
/** what a poll run stopped by the lease check (scheduler/lease-gate.ts) logs */
const WHY_GATED = 'poll run cancelled: this replica no longer leads the account';

describe.skipIf(suite.skip)('a frozen replica is fenced (processes, Debian postgresql on loopback)', () => {
  it('SIGSTOP mid-run past the lease, SIGCONT: it sends no request for the accounts it lost until it claims them again', async () => {
    const { replicas: runs, db } = await suite.start('ha_shares_fencing', keyOf, {
      // One request at a time: the catalog run's two requests (OS list, locations) go out one after the other.
      // An attempt's deadline of 2 s: on waking, the one in flight is past it before the lease's watchdog is
      // due, and its failure frees the slot for the queued one.
      account: { retries: 0, concurrency: 1, timeout: '2s' },
      config: {
        collectors: { graphs: false },
        // the catalog alone at its ticks, 5 s after the others'
        schedules: {
          servers: '*/10 * * * * *',
          firewall: '*/10 * * * * *',
          catalog: '5,15,25,35,45,55 * * * * *',
        },
      },
    });
    for (const sim of sims.values()) sim.setFaults({ latencyMs: LATENCY_MS });
    const leases = () => leaseRows(db);
    await Promise.all([0, 1, 2].map((r) => runs.start(r)));
    /** every account leased, two per replica (the share-out of 6 accounts on 3 replicas) */
    const balanced = await eventually(
      'every account leased, 2/2/2',
      async () => {
        const rows = await leases();
        const loads = REPLICAS.map((r) => rows.filter((l) => l.holder === r).length);
        return rows.length === 6 && loads.join() === '2,2,2' ? rows : undefined;
      },
      45_000,
      200,
    );
    const frozen = 1;
    const lost = balanced.filter((l) => l.holder === REPLICAS[frozen]);
    // Frozen with the catalog run's first request in flight (it arrived at the simulator 100–400 ms ago: every
    // request of that tick has left, the process waits), its second queued behind it.
    const mine = (account: string) => sims.get(account)!.calls.filter((c) => c.keyId === frozen);
    await eventually(
      `r${frozen} to have the first request of a catalog run in flight`,
      async () => {
        const now = Date.now();
        return lost.some(({ account }) => {
          const calls = mine(account).filter((c) => now - c.at < 2_500);
          const age = now - (calls[0]?.at ?? 0);
          return calls.length === 1 && CATALOG.includes(calls[0]!.path) && age > 100 && age < 400;
        })
          ? true
          : undefined;
      },
      60_000,
      20,
    );
    const child = runs.started[frozen]!.run.child;
    child.kill('SIGSTOP');
    const stoppedAt = Date.now();
    // its accounts claimed by the others: another holder, a newer epoch (lease 10 s + a heartbeat)
    const taken = await eventually(
      `the accounts of r${frozen} (${lost.map((l) => l.account).join(', ')}) led by the others`,
      async () => {
        const rows = await leases();
        const now = lost.map((l) => rows.find((r) => r.account === l.account)!);
        return now.every((r) => r.holder !== null && r.holder !== REPLICAS[frozen]) ? now : undefined;
      },
      45_000,
      200,
    );
    console.log(`frozen replica's accounts led by the others after ${Date.now() - stoppedAt} ms`);
    for (const [i, row] of taken.entries()) expect(BigInt(row.epoch)).toBeGreaterThan(BigInt(lost[i]!.epoch));

    // Woken up: sample ha_leases until it leads each lost account again; `fencedUntil` is, per account, the
    // send time of the last sample that still showed the takeover's epoch (it had not claimed it yet).
    const wokenAt = Date.now();
    child.kill('SIGCONT');
    const fencedUntil = new Map(lost.map((l) => [l.account, wokenAt]));
    const epochs = new Map(taken.map((r) => [r.account, r.epoch]));
    await eventually(
      `r${frozen} to lead ${lost.map((l) => l.account).join(', ')} again`,
      async () => {
        const sentAt = Date.now();
        const rows = await leases();
        let back = 0;
        for (const account of fencedUntil.keys()) {
          const row = rows.find((r) => r.account === account)!;
          if (row.epoch === epochs.get(account)) fencedUntil.set(account, sentAt);
          else if (row.holder === REPLICAS[frozen]) back++;
        }
        return back === lost.length ? true : undefined;
      },
      45_000,
      50,
    );
    console.log(`woken replica leads its accounts again after ${Date.now() - wokenAt} ms`);
    for (const [account, until] of fencedUntil) {
      const early = sims
        .get(account)!
        .calls.filter((c) => c.keyId === frozen && c.at >= wokenAt && c.at < until)
        .map((c) => c.path);
      expect(early, `r${frozen} called ${account}'s API while another replica led it`).toEqual([]);
    }
    // …and it polls them again once it leads them
    const since = Date.now();
    await eventually(
      `r${frozen} to poll its accounts again`,
      async () =>
        lost.every((l) => sims.get(l.account)!.calls.some((c) => c.keyId === frozen && c.at >= since))
          ? true
          : undefined,
      30_000,
      200,
    );
    const output = runs.output();
    console.log(`stale writes refused by the database: ${output.split('BM_ERR_STALE_LEASE').length - 1}`);
    console.log(`poll runs stopped by the lease check before a request: ${output.split(WHY_GATED).length - 1}`);
    expect(output).not.toContain(suite.server().password);
  }, 240_000);
});
