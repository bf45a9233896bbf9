/**
 * No alert dropped for want of a leader, with real processes: three `baremetal-exporter run` sharing six
 * accounts (`database.share_accounts`) on one PostgreSQL (Debian's, on loopback), the default attack guard
 * (`deny_power_when_attacked`). A power alert delivered to every replica, as Alertmanager's webhook_configs do:
 * a replica that does not lead the account answers 503 with Retry-After and journals nothing; the leader
 * decides; the retries are duplicates — one call. During a handover (the leader stopped with SIGTERM) the
 * survivors answer 503 until the new leader has read the firewall history, then one of them decides once.
 * Never `denied_under_attack` for want of a leader. The same after a SIGKILL of the account's leader (an
 * alert in flight on it is not called again: its row stays `executing`, what the housekeeping recovers as
 * `unknown`) and across a rejoin (a stopped replica comes back and the share-out moves accounts to it).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { ledOn, type ReplicaProcess, replicaSuite } from '../helpers/replica-processes.js';
import { ACCOUNTS } from '../helpers/shared-accounts.js';
import { eventually } from '../helpers/processes.js';
import { tempDir } from '../helpers/tmp.js';

const suite = replicaSuite();
const { sims } = suite;
const keyOf = (account: string, replica: number) => `webhook-key-${account}-r${replica}-3b9e`;
const TOKEN = 'webhook-token-0c5f2a91d7e3';
const POWERCYCLE = '/api/v1/dedicated/powercycle';
const ACCOUNT = 'acme';

interface Reply {
  status: number;
  retryAfter: string | undefined;
  body: { code?: string; results?: Array<{ decision: string }> };
}

const deliver = async (p: ReplicaProcess, serverId: string, startsAt: string, account = ACCOUNT): Promise<Reply> => {
  const labels = { alertname: 'BaremetalServerUnreachable', account, server_id: serverId };
  const res = await request(`http://127.0.0.1:${p.port}/api/v1/alertmanager`, {
    method: 'POST',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      version: '4',
      status: 'firing',
      receiver: 'baremetal',
      alerts: [
        {
          status: 'firing',
          labels,
          annotations: {},
          startsAt,
          endsAt: '0001-01-01T00:00:00Z',
          fingerprint: `fp-${account}-${serverId}`,
        },
      ],
    }),
  });
  const header = res.headers['retry-after'];
  return {
    status: res.statusCode,
    retryAfter: typeof header === 'string' ? header : undefined,
    body: (await res.body.json()) as Reply['body'],
  };
};
/** Delivers until the replica decides (Alertmanager retries a 5xx); resolves to every reply, the last decided. */
const untilDecided = async (p: ReplicaProcess, serverId: string, startsAt: string, account = ACCOUNT) => {
  const replies: Reply[] = [];
  // At most a minute of retries, as an Alertmanager would keep retrying within a group interval.
  for (let attempt = 0; attempt < 300; attempt++) {
    const reply = await deliver(p, serverId, startsAt, account);
    replies.push(reply);
    if (reply.status !== 503) return replies;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`r${p.replica} answered 503 for a minute: ${JSON.stringify(replies.at(-1))}`);
};
const decision = (replies: Reply[]) => replies.at(-1)!.body.results?.[0]?.decision;
/** the journal's rows of `serverId`'s power calls, as a replica lists them */
const rowsOf = async (p: ReplicaProcess, serverId: string, account = ACCOUNT) => {
  const res = await request(
    `http://127.0.0.1:${p.port}/api/v1/actions?limit=1000&account=${account}&server_id=${serverId}`,
    { headers: { authorization: `Bearer ${TOKEN}` } },
  );
  expect(res.statusCode).toBe(200);
  const { actions } = (await res.body.json()) as { actions: Array<{ decision: string }> };
  return actions.map((a) => a.decision).sort();
};

/** Starts the fleet of a test (database `name`): three replicas, the default attack guard, power calls acted on. */
const startFleet = async (name: string) => {
  const dir = tempDir();
  const tokenFile = join(dir, 'token');
  writeFileSync(tokenFile, `${TOKEN}\n`);
  const { replicas } = await suite.start(name, keyOf, {
    account: { retries: 0 },
    config: {
      collectors: { graphs: false },
      schedules: { servers: '*/2 * * * * *', firewall: '*/2 * * * * *' },
      remediation: {
        dry_run: false,
        budget_per_hour: 1000,
        auth: { bearer_token_files: [tokenFile] },
        rules: [{ alertname: 'BaremetalServerUnreachable', action: 'powercycle', cooldown: '30m' }],
      },
    },
  });
  const fleet = await Promise.all([0, 1, 2].map((r) => replicas.start(r)));
  return { replicas, fleet };
};
/** The one replica among `among` whose /metrics says it leads `account` (waits up to a minute for one). */
const leaderOf = async (among: readonly ReplicaProcess[], account = ACCOUNT) =>
  eventually(
    `one leader of ${account} among r${among.map((p) => p.replica).join(', r')}`,
    async () => {
      const leading = [];
      for (const p of among) if ((await ledOn(p.port)).includes(account)) leading.push(p);
      return leading.length === 1 ? leading[0] : undefined;
    },
    60_000,
    200,
  );
/** A follower's first reply once it has read the leader's server list (before, it answers BM_ERR_NOT_READY). */
const onceServersKnown = (p: ReplicaProcess, serverId: string, startsAt: string, account = ACCOUNT) =>
  eventually(
    `r${p.replica} to know the servers of ${account}`,
    async () => {
      const reply = await deliver(p, serverId, startsAt, account);
      return reply.body.code === 'BM_ERR_NOT_READY' ? undefined : reply;
    },
    60_000,
    200,
  );
/**
 * Nothing was denied for want of a leader: every reply is a decision (200, never `denied_under_attack`) or a 503
 * with Retry-After that says why no decision was made here (no leader, or no server list read yet).
 */
const noneDenied = (replies: readonly Reply[]) => {
  for (const reply of replies) {
    if (reply.status === 503) {
      expect(['BM_ERR_NO_LEADER', 'BM_ERR_NOT_READY']).toContain(reply.body.code);
      if (reply.body.code === 'BM_ERR_NO_LEADER') expect(reply.retryAfter).toBe('5');
    } else {
      expect(reply.status).toBe(200);
      expect(reply.body.results?.[0]?.decision).not.toBe('denied_under_attack');
    }
  }
};
const serversOf = (account: string) => [...sims.get(account)!.state.servers.values()].map((s) => s.serverId);

describe.skipIf(suite.skip)('webhooks to every replica (processes, Debian postgresql on loopback)', () => {
  it('the replicas that cannot decide answer 503 and journal nothing; the leader decides once, also across a handover', async () => {
    const { fleet } = await startFleet('ha_webhook');
    const [first, second] = serversOf(ACCOUNT);

    // Steady state: the followers first (503, nothing journaled), then the leader (executed), then the
    // followers' retries (duplicates).
    const leader = await leaderOf(fleet);
    const followers = fleet.filter((p) => p !== leader);
    const startsAt = new Date().toISOString();
    // (A follower that has not read the leader's server list yet answers 503 too, BM_ERR_NOT_READY.)
    const waiting = await Promise.all(followers.map((p) => onceServersKnown(p, first!, startsAt)));
    for (const reply of waiting) {
      expect(reply).toMatchObject({ status: 503, retryAfter: '5', body: { code: 'BM_ERR_NO_LEADER' } });
    }
    expect(await rowsOf(leader, first!)).toEqual([]);
    expect(decision(await untilDecided(leader, first!, startsAt))).toBe('executed');
    for (const p of followers) expect(decision(await untilDecided(p, first!, startsAt))).toBe('duplicate');
    expect(sims.get(ACCOUNT)!.callsTo(POWERCYCLE, { server_id: first! })).toHaveLength(1);
    expect(await rowsOf(leader, first!)).toEqual(['duplicate', 'duplicate', 'executed']);

    // A handover: the leader stops (SIGTERM); an alert delivered to both survivors meanwhile is retried until
    // the new leader has read the firewall history, then decided once.
    leader.run.child.kill('SIGTERM');
    const later = new Date().toISOString();
    const handover = await Promise.all(followers.map((p) => untilDecided(p, second!, later)));
    expect(await leader.run.exited).toBe(0);
    const decisions = handover.map(decision).sort();
    expect(decisions).toEqual(['duplicate', 'executed']);
    expect(sims.get(ACCOUNT)!.callsTo(POWERCYCLE, { server_id: second! })).toHaveLength(1);
    // Nothing final was journaled while no replica could decide: one row per decided delivery, none a denial.
    const rows = await rowsOf(followers[0]!, second!);
    expect(rows).toEqual(['duplicate', 'executed']);
    // The one that executed is the account's new leader.
    const next = await leaderOf(followers);
    expect(decision(handover[followers.indexOf(next)]!)).toBe('executed');
    expect(handover.flat().every((r) => r.status === 200 || r.status === 503)).toBe(true);
  }, 180_000);

  it('a SIGKILL of the leader: 503 with Retry-After and nothing journaled until a new leader has read the history; each alert acted on once, the one in flight on the killed replica never again', async () => {
    const { fleet } = await startFleet('ha_webhook_kill');
    const sim = sims.get(ACCOUNT)!;
    const [inFlight, afterKill] = serversOf(ACCOUNT);
    const leader = await leaderOf(fleet);
    const survivors = fleet.filter((p) => p !== leader);
    const startsAt = new Date().toISOString();
    // The followers have read the leader's server list: they answer BM_ERR_NO_LEADER (not BM_ERR_NOT_READY).
    for (const reply of await Promise.all(survivors.map((p) => onceServersKnown(p, afterKill!, startsAt))))
      expect(reply).toMatchObject({ status: 503, retryAfter: '5', body: { code: 'BM_ERR_NO_LEADER' } });

    // An alert whose power call is in flight on the leader when it is killed: the API acted, no reply came back.
    sim.setFaults({ mode: 'act_then_hang', hangMs: 120_000, paths: [POWERCYCLE], ids: [inFlight!] });
    const held = deliver(leader, inFlight!, startsAt).then(
      () => 'answered',
      () => 'cut off',
    );
    await eventually(
      'the power call in flight to reach the simulator',
      async () => (sim.callsTo(POWERCYCLE, { server_id: inFlight! }).length === 1 ? true : undefined),
      30_000,
      50,
    );
    expect(await rowsOf(leader, inFlight!)).toEqual(['executing']);
    leader.run.child.kill('SIGKILL');
    expect(await leader.run.exited).toBeNull();
    expect(await held).toBe('cut off');
    sim.setFaults({});

    // The killed replica's lease has not expired: the account has no leader. Every survivor answers 503 with
    // Retry-After and journals nothing.
    for (const reply of await Promise.all(survivors.map((p) => deliver(p, afterKill!, startsAt))))
      expect(reply).toMatchObject({ status: 503, retryAfter: '5', body: { code: 'BM_ERR_NO_LEADER' } });
    expect(await rowsOf(survivors[0]!, afterKill!)).toEqual([]);

    // Alertmanager's retries of both alerts to both survivors, until decided: through the lease's expiry and
    // the new leader's first read of the firewall history (503 meanwhile), then one decision each.
    const [killed, flight] = await Promise.all([
      Promise.all(survivors.map((p) => untilDecided(p, afterKill!, startsAt))),
      Promise.all(survivors.map((p) => untilDecided(p, inFlight!, startsAt))),
    ]);
    noneDenied([...killed.flat(), ...flight.flat()]);
    expect(killed.map(decision).sort()).toEqual(['duplicate', 'executed']);
    expect(await rowsOf(survivors[0]!, afterKill!)).toEqual(['duplicate', 'executed']);
    const next = await leaderOf(survivors);
    expect(decision(killed[survivors.indexOf(next)]!)).toBe('executed');
    // One call, with the new leader's key.
    expect(sim.callsTo(POWERCYCLE, { server_id: afterKill! }).map((c) => c.keyId)).toEqual([next.replica]);
    // The call in flight on the killed replica is not made again: its retries are duplicates of its row, left
    // `executing` (the housekeeping makes it `unknown` once no call can still be in flight).
    expect(flight.map(decision)).toEqual(['duplicate', 'duplicate']);
    expect(sim.callsTo(POWERCYCLE, { server_id: inFlight! }).map((c) => c.keyId)).toEqual([leader.replica]);
    const rows = await rowsOf(next, inFlight!);
    expect(rows.filter((d) => d !== 'duplicate')).toHaveLength(1);
    expect(['executing', 'unknown']).toContain(rows.find((d) => d !== 'duplicate'));
  }, 180_000);

  it('a rejoin: alerts delivered to every replica while the share-out moves accounts to the replica back are acted on once', async () => {
    const { replicas, fleet } = await startFleet('ha_webhook_rejoin');
    const [r0, r1, r2] = fleet as [ReplicaProcess, ReplicaProcess, ReplicaProcess];
    // r2 leaves (SIGTERM): its accounts move to r0 and r1.
    r2.run.child.kill('SIGTERM');
    expect(await r2.run.exited).toBe(0);
    const everyAccount = [...ACCOUNTS].sort().join();
    await eventually(
      'every account led by r0 or r1',
      async () =>
        [...(await ledOn(r0.port)), ...(await ledOn(r1.port))].sort().join() === everyAccount ? true : undefined,
      60_000,
      200,
    );

    // r2 comes back. Alertmanager delivers one alert per account to every replica from the moment r0 or r1
    // lets an account go for r2 (the move has begun; r2 is not ready yet, its deliveries start once it is),
    // until decided.
    const starting = replicas.start(2);
    const released = await eventually(
      'r0 and r1 to let an account go',
      async () => {
        const kept = new Set([...(await ledOn(r0.port)), ...(await ledOn(r1.port))]);
        const gone = ACCOUNTS.filter((a) => !kept.has(a));
        return gone.length > 0 ? gone : undefined;
      },
      60_000,
      50,
    );
    const startsAt = new Date().toISOString();
    const wave = (index: 0 | 1, to: readonly Promise<ReplicaProcess>[]) =>
      Promise.all(
        ACCOUNTS.map(async (account) => {
          const serverId = serversOf(account)[index]!;
          const replies = await Promise.all(to.map(async (p) => untilDecided(await p, serverId, startsAt, account)));
          return { account, serverId, replies };
        }),
      );
    const across = await wave(0, [Promise.resolve(r0), Promise.resolve(r1), starting]);
    const back = await starting;
    const everyone = [r0, r1, back];
    // The share-out is whole again: every account led by exactly one replica, r2 among them.
    await eventually(
      'every account led by one replica, r2 leading some',
      async () => {
        const led = await Promise.all(everyone.map((p) => ledOn(p.port)));
        return led.flat().sort().join() === everyAccount && led[2]!.length > 0 ? true : undefined;
      },
      60_000,
      200,
    );
    // Then a second alert per account, to every replica, after the move.
    const after = await wave(
      1,
      everyone.map((p) => Promise.resolve(p)),
    );

    for (const { account, serverId, replies } of [...across, ...after]) {
      noneDenied(replies.flat());
      expect(replies.map(decision).sort(), `${account}/${serverId}`).toEqual(['duplicate', 'duplicate', 'executed']);
      // One call, with the key of the replica that said `executed`.
      const executor = everyone[replies.findIndex((r) => decision(r) === 'executed')]!;
      expect(
        sims
          .get(account)!
          .callsTo(POWERCYCLE, { server_id: serverId })
          .map((c) => c.keyId),
        `${account}/${serverId}`,
      ).toEqual([executor.replica]);
      expect(await rowsOf(back, serverId, account), `${account}/${serverId}`).toEqual([
        'duplicate',
        'duplicate',
        'executed',
      ]);
    }
    // The alert of an account let go by r0 or r1 for the move came while that account had no leader among
    // them: whichever replica answered it first without deciding said 503 (no leader), not a denial.
    for (const { account, replies } of across.filter((a) => released.includes(a.account))) {
      const firsts = [replies[0]![0]!, replies[1]![0]!];
      expect(
        firsts.some((r) => r.status === 503 && r.body.code === 'BM_ERR_NO_LEADER' && r.retryAfter === '5'),
        account,
      ).toBe(true);
    }
  }, 180_000);
});
