/**
 * Fencing of real processes: three `baremetal-exporter run` with `database.share_accounts` on one PostgreSQL
 * (Debian's, on loopback), one account each, a simulator per account, each replica with an API key of its own
 * per account (so the simulator tells which replica called). One replica is frozen with SIGSTOP for longer than
 * its lease (the defaults: 10 s lease, 2 s heartbeat) while a poll run of its is in flight: the catalog run's
 * first request sent, its reply held back by the simulator's latency, its second queued behind it (one request at
 * a time). Once another replica leads its account (ha_leases: another holder, a new epoch) it is woken with
 * SIGCONT, the reply waiting for it. From then until it claims the account again (a newer epoch in ha_leases) it
 * sends that account's API nothing: every call with its key that the simulator recorded before a sample of
 * ha_leases still showing the other holder's epoch is a violation. Whether the queued request would leave without
 * scheduler/lease-gate.ts depends on the event loop (a process woken from epoll runs its overdue timers, the
 * lease's watchdog among them, before it reads the reply): it went out in few runs, not in most; the gate
 * itself is proven deterministically by test/unit/scheduler/lease-gate.test.ts.
 */
import { describe, expect, it } from 'vitest';
import { leaseRows, replicaSuite } from '../helpers/replica-processes.js';
import { ACCOUNTS, REPLICAS } from '../helpers/shared-accounts.js';
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
      // one account per replica: the frozen one's catalog run is the only one of its tick
      accounts: ACCOUNTS.slice(0, 3),
      // One request at a time: the catalog run's two requests (OS list, locations) go out one after the other;
      // an attempt's deadline of 2 s: on waking, the one in flight has failed and freed the slot for the other.
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
    /** every account leased, one per replica (the share-out of 3 accounts on 3 replicas) */
    const balanced = await eventually(
      'every account leased, 1/1/1',
      async () => {
        const rows = await leases();
        const loads = REPLICAS.map((r) => rows.filter((l) => l.holder === r).length);
        return rows.length === 3 && loads.join() === '1,1,1' ? rows : undefined;
      },
      45_000,
      200,
    );
    const frozen = 1;
    const lost = balanced.filter((l) => l.holder === REPLICAS[frozen]);
    // Frozen the moment its catalog run's first request arrives at the simulator (its reply comes LATENCY_MS
    // later; the second request queued behind it, not yet past its check), while the replica may still be busy
    // with that tick. Asleep in epoll instead, the SIGCONT interrupts the wait and its overdue timers (the lease's
    // watchdog) run first, before the waiting reply is read: the unfenced path leaks only when the freeze finds
    // the process awake.
    const child = runs.started[frozen]!.run.child;
    const notBefore = Date.now() + 3_000;
    let frozenAt = 0;
    const firstArrived = () => {
      const now = Date.now();
      return lost.some(({ account }) => {
        const recent = sims.get(account)!.calls.filter((c) => c.keyId === frozen && now - c.at < 2_500);
        return recent.length === 1 && CATALOG.includes(recent[0]!.path);
      });
    };
    const disarms = lost.map(({ account }) => {
      const calls = sims.get(account)!.calls;
      const push = calls.push.bind(calls);
      calls.push = (...added) => {
        const n = push(...added);
        if (!frozenAt && Date.now() > notBefore && firstArrived()) {
          child.kill('SIGSTOP');
          frozenAt = Date.now();
        }
        return n;
      };
      return () => {
        calls.push = push;
      };
    });
    await eventually(
      `r${frozen} to be frozen with a catalog request in flight`,
      async () => frozenAt || undefined,
      60_000,
      20,
    );
    for (const disarm of disarms) disarm();
    const stoppedAt = frozenAt;
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
