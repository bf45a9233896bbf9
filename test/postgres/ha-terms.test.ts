/**
 * Replicas that disagree, with real processes: `baremetal-exporter run` on one PostgreSQL (Debian's, on
 * loopback), six simulators as the accounts' upstreams, each replica with an API key of its own per account (so
 * the simulator's call log tells which replica called). A replica with `share_accounts` off among sharing ones,
 * one with another account list, and a second process with a replica name already in use all refuse: they
 * never call the API, say why on /readyz, in the log and in baremetal_ha_config_mismatch, and an account only
 * the refused one has is counted unled. A rolling change of the option across three replicas converges with
 * every account polled by one replica at a time.
 *
 * "Polled by one replica at a time" is read from the call logs: an account's calls, in the order the simulator
 * received them, fall into runs of one replica's key; two replicas polling together alternate, so their runs
 * outnumber the terms the replicas logged ("elected leader", "leading the account"), each of which starts at
 * most one run.
 */
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { ledOn, type ReplicaProcess, type ReplicaProcesses, replicaSuite } from '../helpers/replica-processes.js';
import { ACCOUNTS, REPLICAS } from '../helpers/shared-accounts.js';
import { eventually } from '../helpers/processes.js';

const suite = replicaSuite();
const { sims } = suite;
const keyOf = (account: string, replica: number) => `terms-key-${account}-r${replica}-5c2a`;
const OPTIONS = {
  account: { retries: 0 },
  config: { collectors: { graphs: false }, schedules: { servers: '* * * * * *', firewall: '*/2 * * * * *' } },
};

const get = async (port: number, path: string) => {
  const { statusCode, body } = await request(`http://127.0.0.1:${port}${path}`);
  return { statusCode, text: await body.text() };
};
/** the value of one series on a replica's /metrics (undefined when absent) */
const sample = async (port: number, series: string) => {
  const { text } = await get(port, '/metrics');
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? undefined : Number(line.slice(series.length + 1));
};
/** the replicas (key ids) that called `account`'s API since call `from` */
const callers = (account: string, from = 0) =>
  new Set(
    sims
      .get(account)!
      .calls.slice(from)
      .map((c) => c.keyId),
  );
/** every account's call count now */
const marks = () => new Map(ACCOUNTS.map((a) => [a, sims.get(a)!.calls.length]));
/** waits until every account in `accounts` had `n` more calls since `since` (its leader polled meanwhile) */
const polledAgain = (since: Map<string, number>, accounts: readonly string[], n = 4) =>
  eventually(
    `${accounts.join(', ')} polled ${n} more times`,
    async () => accounts.every((a) => sims.get(a)!.calls.length >= since.get(a)! + n) || undefined,
    60_000,
    200,
  );

/** The number of runs of one replica's calls in `account`'s call log (see the file's comment). */
const runs = (account: string) => {
  let count = 0;
  let last: number | undefined;
  for (const { keyId } of sims.get(account)!.calls) {
    if (keyId !== last) count++;
    last = keyId;
  }
  return count;
};
/**
 * The terms of `account` the processes logged (logfmt): each election (every account) and each claim of the
 * account.
 */
const terms = (replicas: ReplicaProcesses, account: string) =>
  replicas
    .output()
    .split('\n')
    .filter(
      (line) =>
        line.includes('msg="elected leader') ||
        (line.includes('msg="leading the account') && line.includes(` account=${account} `)),
    ).length;
const onePollerAtATime = (replicas: ReplicaProcesses, accounts: readonly string[] = ACCOUNTS) => {
  for (const account of accounts) {
    expect(runs(account), `${account}: runs of one replica's calls`).toBeGreaterThan(0);
    expect(runs(account), `${account}: runs of one replica's calls ≤ the terms logged`).toBeLessThanOrEqual(
      terms(replicas, account),
    );
  }
};
/** each account's one leader among `ps`, by /metrics, once every account in `accounts` has exactly one */
const oneEach = (ps: readonly ReplicaProcess[], accounts: readonly string[] = ACCOUNTS) =>
  eventually(
    `every account led by exactly one of ${ps.map((p) => `r${p.replica}`).join(', ')}`,
    async () => {
      const by = new Map<string, number[]>(accounts.map((a) => [a, []]));
      for (const p of ps) for (const a of await ledOn(p.port)) by.get(a)?.push(p.replica);
      return [...by.values()].every((l) => l.length === 1) ? by : undefined;
    },
    60_000,
    200,
  );
const mismatch = (p: ReplicaProcess, reason: string) =>
  eventually(
    `r${p.replica} to report baremetal_ha_config_mismatch{reason="${reason}"} 1`,
    async () => (await sample(p.port, `baremetal_ha_config_mismatch{reason="${reason}"}`)) === 1 || undefined,
    60_000,
    200,
  );
const stop = async (p: ReplicaProcess) => {
  p.run.child.kill('SIGTERM');
  expect(await p.run.exited).toBe(0);
};

describe.skipIf(suite.skip)('replicas that disagree (processes, Debian postgresql on loopback)', () => {
  it('a replica with share_accounts off among sharing ones refuses: it never polls, says why, and is counted', async () => {
    const { replicas, db } = await suite.start('ha_terms_mode', keyOf, OPTIONS);
    const sharing = await Promise.all([replicas.start(0), replicas.start(1)]);
    await oneEach(sharing);
    const single = await replicas.start(2, { shareAccounts: false, ready: false });
    await mismatch(single, 'mode');
    // Its row says what it runs; the sharing ones' say theirs.
    const { rows } = await db.query<{ mode: string }>('SELECT mode FROM ha_replicas ORDER BY mode, replica');
    expect(rows.map((r) => r.mode)).toEqual(['shared', 'shared', 'single']);
    // Every account polled again by its leader since the mismatch showed: the single replica sent nothing.
    await polledAgain(marks(), ACCOUNTS);
    for (const account of ACCOUNTS) expect(callers(account).has(2), account).toBe(false);
    onePollerAtATime(replicas);
    const ready = await get(single.port, '/readyz');
    expect(ready.statusCode).toBe(503);
    expect(ready.text).toContain('set database.share_accounts the same on every replica');
    expect(await sample(single.port, 'baremetal_leader')).toBe(0);
    expect(single.run.output()).toMatch(/msg="this replica disagrees with the live replicas.*reason=mode/);
    // The sharing ones agree and say so.
    expect(await sample(sharing[0]!.port, 'baremetal_ha_config_mismatch{reason="mode"}')).toBe(0);
    expect((await get(sharing[0]!.port, '/readyz')).statusCode).toBe(200);
  }, 180_000);

  it('a replica with another account list refuses; an account only it has is counted unled on every replica', async () => {
    const five = ACCOUNTS.filter((a) => a !== 'stark');
    const { replicas } = await suite.start('ha_terms_accounts', keyOf, { ...OPTIONS, accounts: five });
    const agreeing = await Promise.all([replicas.start(0), replicas.start(1)]);
    await oneEach(agreeing, five);
    const odd = await replicas.start(2, { accounts: ACCOUNTS, ready: false });
    await mismatch(odd, 'accounts');
    for (const p of [...agreeing, odd])
      await eventually(
        `r${p.replica} to count stark unled`,
        async () => (await sample(p.port, 'baremetal_ha_account_unled{account="stark"}')) === 1 || undefined,
        60_000,
        200,
      );
    await polledAgain(marks(), five);
    for (const account of ACCOUNTS) expect(callers(account).has(2), account).toBe(false);
    expect(sims.get('stark')!.calls).toEqual([]);
    onePollerAtATime(replicas, five);
    const ready = await get(odd.port, '/readyz');
    expect(ready.statusCode).toBe(503);
    expect(ready.text).toContain('only this replica has stark');
    expect(replicas.output()).toMatch(/no agreeing replica has.*stark/);
  }, 180_000);

  it('two processes with one replica name: the second refuses until the first has stopped, then takes over', async () => {
    const { replicas } = await suite.start('ha_terms_names', keyOf, OPTIONS);
    const [r0, r1] = await Promise.all([replicas.start(0), replicas.start(1)]);
    await oneEach([r0!, r1!]);
    // a third process (its own keys, key id 2) configured with r1's name
    const twin = await replicas.start(2, { name: REPLICAS[1]!, ready: false });
    await mismatch(twin, 'duplicate_name');
    await polledAgain(marks(), ACCOUNTS);
    for (const account of ACCOUNTS) expect(callers(account).has(2), account).toBe(false);
    expect((await get(twin.port, '/readyz')).text).toContain('already uses the replica name r1');
    // r1 stops (its row deleted): the twin holds the name from its next heartbeat and takes r1's share.
    await stop(r1!);
    const since = marks();
    await oneEach([r0!, twin]);
    await eventually(
      'the twin to be ready',
      async () => (await get(twin.port, '/readyz')).statusCode === 200 || undefined,
      60_000,
      200,
    );
    expect(await sample(twin.port, 'baremetal_ha_config_mismatch{reason="duplicate_name"}')).toBe(0);
    await polledAgain(since, ACCOUNTS);
    expect(ACCOUNTS.some((a) => callers(a, since.get(a)).has(2))).toBe(true);
    onePollerAtATime(replicas);
  }, 180_000);

  it('rolling share_accounts on across three replicas: the restarted ones wait, then share; one poller at a time', async () => {
    const { replicas } = await suite.start('ha_terms_roll', keyOf, OPTIONS);
    let fleet = await Promise.all([0, 1, 2].map((r) => replicas.start(r, { shareAccounts: false })));
    await polledAgain(marks(), ACCOUNTS);
    for (const r of [0, 1]) {
      await stop(fleet[r]!);
      const restarted = await replicas.start(r, { ready: false });
      fleet = fleet.map((p, i) => (i === r ? restarted : p));
      await mismatch(restarted, 'mode');
      // the replicas of the old config go on polling every account
      await polledAgain(marks(), ACCOUNTS);
    }
    // The last replica of the old config stops: the restarted ones agree and share every account.
    await stop(fleet[2]!);
    await oneEach([fleet[0]!, fleet[1]!]);
    fleet[2] = await replicas.start(2);
    await eventually(
      'every account led by one replica, 2/2/2',
      async () => {
        const leaderOf = await oneEach(fleet);
        const loads = [0, 1, 2].map((r) => [...leaderOf.values()].filter((l) => l[0] === r).length);
        return loads.join() === '2,2,2' || undefined;
      },
      60_000,
      200,
    );
    for (const p of fleet) expect(await sample(p.port, 'baremetal_ha_config_mismatch{reason="mode"}')).toBe(0);
    await polledAgain(marks(), ACCOUNTS);
    onePollerAtATime(replicas);
  }, 240_000);
});
