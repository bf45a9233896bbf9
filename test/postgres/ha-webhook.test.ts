/**
 * No alert dropped for want of a leader, with real processes: three `baremetal-exporter run` sharing six
 * accounts (`database.share_accounts`) on one PostgreSQL (Debian's, on loopback), the default attack guard
 * (`deny_power_when_attacked`). A power alert delivered to every replica, as Alertmanager's webhook_configs do:
 * a replica that does not lead the account answers 503 with Retry-After and journals nothing; the leader
 * decides; the retries are duplicates — one call. During a handover (the leader stopped with SIGTERM) the
 * survivors answer 503 until the new leader has read the firewall history, then one of them decides once.
 * Never `denied_under_attack` for want of a leader.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { ledOn, type ReplicaProcess, replicaSuite } from '../helpers/replica-processes.js';
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

const deliver = async (p: ReplicaProcess, serverId: string, startsAt: string): Promise<Reply> => {
  const labels = { alertname: 'BaremetalServerUnreachable', account: ACCOUNT, server_id: serverId };
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
          fingerprint: `fp-${serverId}`,
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
const untilDecided = async (p: ReplicaProcess, serverId: string, startsAt: string) => {
  const replies: Reply[] = [];
  // At most a minute of retries, as an Alertmanager would keep retrying within a group interval.
  for (let attempt = 0; attempt < 300; attempt++) {
    const reply = await deliver(p, serverId, startsAt);
    replies.push(reply);
    if (reply.status !== 503) return replies;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`r${p.replica} answered 503 for a minute: ${JSON.stringify(replies.at(-1))}`);
};
const decision = (replies: Reply[]) => replies.at(-1)!.body.results?.[0]?.decision;
/** the journal's rows of `serverId`'s power calls, as a replica lists them */
const rowsOf = async (p: ReplicaProcess, serverId: string) => {
  const res = await request(
    `http://127.0.0.1:${p.port}/api/v1/actions?limit=1000&account=${ACCOUNT}&server_id=${serverId}`,
    { headers: { authorization: `Bearer ${TOKEN}` } },
  );
  expect(res.statusCode).toBe(200);
  const { actions } = (await res.body.json()) as { actions: Array<{ decision: string }> };
  return actions.map((a) => a.decision).sort();
};

describe.skipIf(suite.skip)('webhooks to every replica (processes, Debian postgresql on loopback)', () => {
  it('the replicas that cannot decide answer 503 and journal nothing; the leader decides once, also across a handover', async () => {
    const dir = tempDir();
    const tokenFile = join(dir, 'token');
    writeFileSync(tokenFile, `${TOKEN}\n`);
    const { replicas } = await suite.start('ha_webhook', keyOf, {
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
    const leaderOf = async (among: readonly ReplicaProcess[]) =>
      eventually(
        `one leader of ${ACCOUNT} among r${among.map((p) => p.replica).join(', r')}`,
        async () => {
          const leading = [];
          for (const p of among) if ((await ledOn(p.port)).includes(ACCOUNT)) leading.push(p);
          return leading.length === 1 ? leading[0] : undefined;
        },
        60_000,
        200,
      );
    const [first, second] = [...sims.get(ACCOUNT)!.state.servers.values()].map((s) => s.serverId);

    // Steady state: the followers first (503, nothing journaled), then the leader (executed), then the
    // followers' retries (duplicates).
    const leader = await leaderOf(fleet);
    const followers = fleet.filter((p) => p !== leader);
    const startsAt = new Date().toISOString();
    // (A follower that has not read the leader's server list yet answers 503 too, BM_ERR_NOT_READY.)
    const waiting = await Promise.all(
      followers.map((p) =>
        eventually(
          `r${p.replica} to know the servers`,
          async () => {
            const reply = await deliver(p, first!, startsAt);
            return reply.body.code === 'BM_ERR_NOT_READY' ? undefined : reply;
          },
          60_000,
          200,
        ),
      ),
    );
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
});
