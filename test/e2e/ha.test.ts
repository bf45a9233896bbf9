/**
 * High availability end to end: two `baremetal-exporter run` processes on one real PostgreSQL (Debian's, on
 * loopback), the simulator as the API, and two unclustered real Alertmanagers each sending to a different
 * replica. Every intended action reaches the API exactly once, however many deliveries and replicas; one
 * replica polls; SIGKILL of the leader hands polling and a pending firewall change to the other.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../src/simulator/server.js';
import { requireBinary } from '../helpers/binaries.js';
import { requireBuiltCli } from '../helpers/cli.js';
import { startDaemonProcess, type DaemonProcess, type RunProcess } from '../helpers/daemon.js';
import { startAlertmanager } from '../helpers/alertmanager.js';
import { requirePostgres, startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { eventually, type startProcess } from '../helpers/processes.js';
import { TOKEN } from '../helpers/remediation.js';
import { tempDir } from '../helpers/tmp.js';

const alertmanager = requireBinary('/usr/bin/prometheus-alertmanager', 'prometheus-alertmanager');
const postgres = requirePostgres();
const KEY = 'ha-key-5d1c9a77e2';
const POWERCYCLE = '/api/v1/dedicated/powercycle';
const FIREWALL_STATE = '/api/v1/dedicated/firewall/state';
/** how far the test moves the clocks (simulator, and the database's timestamps) past the 2-minute window */
const WINDOW_JUMP_MS = 2 * 60_000 + 5_000;

interface Replica {
  name: string;
  base: string;
  run: RunProcess;
}

describe.skipIf(alertmanager.skip || postgres.skip)('two replicas on one PostgreSQL', () => {
  let db: TestPostgres;
  let sim: Simulator;
  let offset = 0;
  const replicas: Replica[] = [];
  const harnesses: DaemonProcess[] = [];
  const managers: Array<ReturnType<typeof startProcess> & { url: string }> = [];
  let dir: string;

  const leaderValue = async (r: Replica): Promise<number | undefined> => {
    try {
      const text = await (await request(`${r.base}/metrics`)).body.text();
      const line = text.split('\n').find((l) => l.startsWith('baremetal_leader '));
      return line === undefined ? undefined : Number(line.split(' ')[1]);
    } catch {
      return undefined;
    }
  };
  const alive = () => replicas.filter((r) => r.run.child.exitCode === null && r.run.child.signalCode === null);
  /** The one live replica reporting leader 1 while every other live one reports 0, once that holds. */
  const leader = () =>
    eventually('exactly one leader', async () => {
      const values = await Promise.all(alive().map(leaderValue));
      if (values.some((v) => v === undefined)) return undefined;
      const leaders = alive().filter((_, i) => values[i] === 1);
      return leaders.length === 1 ? leaders[0] : undefined;
    });
  const webhook = (r: Replica, alert: { labels: Record<string, string>; startsAt: string; status?: string }) =>
    request(`${r.base}/api/v1/alertmanager`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        version: '4',
        status: alert.status ?? 'firing',
        receiver: 'baremetal',
        alerts: [
          {
            status: alert.status ?? 'firing',
            labels: alert.labels,
            annotations: {},
            startsAt: alert.startsAt,
            endsAt: alert.status === 'resolved' ? new Date().toISOString() : '0001-01-01T00:00:00Z',
            fingerprint: Buffer.from(JSON.stringify(alert.labels)).toString('hex').slice(0, 16),
          },
        ],
      }),
    }).then(async (res) => ({
      status: res.statusCode,
      body: (await res.body.json()) as { results?: Array<{ decision: string }> },
    }));
  /** The shared journal, as any replica lists it. */
  const journal = async (r: Replica) => {
    const res = await request(`${r.base}/api/v1/actions?limit=1000`, { headers: { authorization: `Bearer ${TOKEN}` } });
    return (
      (await res.body.json()) as { actions: Array<{ decision: string; alertname: string | null; ip: string | null }> }
    ).actions;
  };
  /**
   * Webhook notifications each Alertmanager has delivered: started (alertmanager_notifications_total) less
   * failed (alertmanager_notifications_failed_total, e.g. a 503 before a replica knew the servers).
   */
  const notifications = () =>
    Promise.all(
      managers.map(async (m) => {
        const text = await (await request(`${m.url}/metrics`)).body.text();
        const sum = (name: string) =>
          text
            .split('\n')
            .filter((l) => l.startsWith(`${name}{`) && l.includes('integration="webhook"'))
            .reduce((total, l) => total + Number(l.split(' ').at(-1)), 0);
        return sum('alertmanager_notifications_total') - sum('alertmanager_notifications_failed_total');
      }),
    );

  beforeAll(async () => {
    if (postgres.skip || alertmanager.skip) return;
    requireBuiltCli();
    dir = tempDir('bmx-ha-', 'all');
    db = await startPostgres(postgres.bin);
    sim = await startSimulator({
      apiKey: KEY,
      servers: 30,
      attackRate: 0,
      faults: { latencyMs: 20 },
      now: () => Date.now() + offset,
    });
    writeFileSync(join(dir, 'token'), `${TOKEN}\n`);
    writeFileSync(join(dir, 'database-url'), `${db.url}\n`);
    for (const name of ['a', 'b']) {
      const harness = await startDaemonProcess({
        key: KEY,
        upstream: sim,
        stateDir: join(dir, `state-${name}`),
        config: {
          upstream: { timeout: '10s', max_requests_per_second: 1000 },
          database: { url_file: join(dir, 'database-url') },
          log_level: 'warn',
          schedules: {
            servers: '*/5 * * * * *',
            firewall: '*/2 * * * * *',
            graphs: '0 0 0 * * *',
            catalog: '0 0 0 * * *',
          },
          remediation: {
            dry_run: false,
            budget_per_hour: 1000,
            // Exactly once is the subject: ten servers power-cycled at once would open the default breaker.
            safety: { circuit_breaker: { max_servers: 1000 } },
            auth: { bearer_token_files: [join(dir, 'token')] },
            rules: [
              { alertname: 'BaremetalServerUnreachable', action: 'powercycle', cooldown: '30m' },
              { alertname: 'BaremetalIpUnderAttack', action: 'firewall_state', firing_state: 1, resolved_state: 0 },
            ],
          },
        },
      });
      harnesses.push(harness);
      replicas.push({ name, base: harness.url, run: harness.spawn() });
    }
    // Both answer /readyz once the leader's first polls are in the database (the follower reads them there).
    for (const r of replicas)
      await eventually(
        `replica ${r.name} to be ready:\n${r.run.output()}`,
        async () => ((await request(`${r.base}/readyz`)).statusCode === 200 ? true : undefined),
        60_000,
        200,
      );
    for (const [i, r] of replicas.entries())
      managers.push(
        await startAlertmanager(alertmanager.skip ? '' : alertmanager.path, {
          dir,
          name: `am${i + 1}`,
          webhookUrl: `${r.base}/api/v1/alertmanager`,
          tokenFile: join(dir, 'token'),
          route:
            '  receiver: baremetal\n  group_by: [alertname, server_id, ip]\n  group_wait: 1s\n  group_interval: 1s\n  repeat_interval: 2s',
        }),
      );
  }, 180_000);

  afterAll(async () => {
    await Promise.all(managers.map((m) => m.stop()));
    for (const r of replicas)
      if (r.run.child.exitCode === null && r.run.child.signalCode === null) r.run.child.kill('SIGTERM');
    await Promise.all(replicas.map((r) => r.run.exited));
    await Promise.all(harnesses.map((h) => h.stop()));
    await sim?.close();
    db?.stop();
  }, 60_000);

  it('elects one leader; only it polls the API; the password is in no output', async () => {
    const first = await leader();
    const follower = replicas.find((r) => r !== first)!;
    expect(await leaderValue(follower)).toBe(0);
    // The follower's own poll series are absent: only the leader asked for the server list.
    const text = await (await request(`${follower.base}/metrics`)).body.text();
    expect(text).not.toMatch(/^baremetal_poll_last_success_timestamp_seconds\{[^}]*poll="servers"[^}]*\} [1-9]/m);
    for (const r of replicas) expect(r.run.output()).not.toContain(db.password);
  });

  it('20 alerts delivered 3 times or more by two unclustered Alertmanagers to two replicas: one call per action', async () => {
    const servers = [...sim.state.servers.values()];
    const powerTargets = servers.slice(0, 10).map((s) => s.serverId);
    const firewallTargets = servers.slice(10, 20).map((s) => ({ serverId: s.serverId, ip: s.ips[0]! }));
    const startsAt = new Date().toISOString();
    const alerts = [
      ...powerTargets.map((id) => ({ labels: { alertname: 'BaremetalServerUnreachable', server_id: id }, startsAt })),
      ...firewallTargets.map((t) => ({
        labels: { alertname: 'BaremetalIpUnderAttack', server_id: t.serverId, ip: t.ip },
        startsAt,
      })),
    ];
    const since = await notifications();
    await Promise.all(
      managers.map(async (m) => {
        const res = await request(`${m.url}/api/v2/alerts`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(alerts.map((a) => ({ ...a, annotations: {} }))),
        });
        await res.body.text();
        expect(res.statusCode).toBe(200);
      }),
    );
    // Each Alertmanager sends each of the 20 groups at least 3 times (first notification and repeats):
    // at least 120 deliveries in all, every one journaled and finished before counting calls.
    await eventually(
      '3 deliveries of every alert from each Alertmanager, all journaled',
      async () => {
        const now = await notifications();
        const rows = (await journal(replicas[0]!)).filter(
          (e) => e.alertname === 'BaremetalServerUnreachable' || e.alertname === 'BaremetalIpUnderAttack',
        );
        const started = now.reduce((sum, n, i) => sum + n - since[i]!, 0);
        return now.every((n, i) => n - since[i]! >= 60) &&
          rows.length >= started &&
          rows.every((e) => e.decision !== 'executing')
          ? true
          : undefined;
      },
      90_000,
      500,
    );
    for (const id of powerTargets) expect(sim.callsTo(POWERCYCLE, { server_id: id }), `server ${id}`).toHaveLength(1);
    for (const t of firewallTargets)
      expect(sim.callsTo(FIREWALL_STATE, { ip: t.ip, state: '1' }), `IP ${t.ip}`).toHaveLength(1);
    expect(sim.callsTo(POWERCYCLE)).toHaveLength(10);
    expect(sim.callsTo(FIREWALL_STATE)).toHaveLength(10);
  }, 120_000);

  it('50 parallel deliveries of one alert split across both replicas make one call', async () => {
    const target = [...sim.state.servers.values()][25]!.serverId;
    const labels = { alertname: 'BaremetalServerUnreachable', server_id: target };
    const startsAt = new Date().toISOString();
    const first = await leader();
    // A delivery the follower sees before the leader's claim cannot be decided there (only the leader polls the
    // firewall histories): 503, nothing journaled, and retried as Alertmanager does until it is decided — for a
    // minute at most, as an Alertmanager keeps retrying within a group interval (ha-webhook.test.ts `untilDecided`).
    const deliver = async (r: Replica) => {
      let reply: Awaited<ReturnType<typeof webhook>> | undefined;
      for (let attempt = 0; attempt < 300; attempt++) {
        reply = await webhook(r, { labels, startsAt });
        if (reply.status !== 503) return { replica: r, ...reply };
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
      throw new Error(`${r.name} answered 503 for a minute: ${JSON.stringify(reply?.body)}`);
    };
    const replies = await Promise.all(Array.from({ length: 50 }, (_, i) => deliver(replicas[i % 2]!)));
    expect(replies.map((r) => r.status)).toEqual(Array(50).fill(200));
    const decisions = replies.map((r) => r.body.results![0]!.decision);
    expect(decisions.filter((d) => d === 'executed')).toHaveLength(1);
    expect(replies.find((r) => r.body.results![0]!.decision === 'executed')!.replica).toBe(first);
    // Every other one is a duplicate: none denied for want of a leader.
    expect(decisions.filter((d) => d === 'duplicate')).toHaveLength(49);
    expect(sim.callsTo(POWERCYCLE, { server_id: target })).toHaveLength(1);
  });

  it('SIGKILL of the leader while it polls: the follower leads within 15 s, polls, applies a pending change once', async () => {
    const old = await leader();
    const follower = replicas.find((r) => r !== old)!;
    const server = [...sim.state.servers.values()][27]!;
    const ip = server.ips[0]!;
    const labels = { alertname: 'BaremetalIpUnderAttack', server_id: server.serverId, ip };
    const startsAt = new Date().toISOString();
    // Firing: state 1 now. Resolved: state 0 pending until the API's 2-minute window opens.
    expect((await webhook(follower, { labels, startsAt })).body.results![0]!.decision).toBe('executed');
    expect((await webhook(follower, { labels, startsAt, status: 'resolved' })).body.results![0]!.decision).toBe(
      'deferred',
    );
    // Kill it while a poll of it is in flight (a firewall history request has just reached the simulator).
    const callsBefore = sim.calls.length;
    await eventually('a poll request in flight', async () =>
      sim.calls.slice(callsBefore).some((c) => c.path.endsWith('/firewall')) ? true : undefined,
    );
    const killedAt = performance.now();
    old.run.child.kill('SIGKILL');
    await old.run.exited;
    const pollsBefore = sim.calls.filter((c) => c.path.endsWith('/firewall')).length;
    await eventually(
      'the follower to lead',
      async () => ((await leaderValue(follower)) === 1 ? true : undefined),
      15_000,
      50,
    );
    const failoverMs = performance.now() - killedAt;
    console.log(`HA failover: the follower reported baremetal_leader 1 ${Math.round(failoverMs)} ms after SIGKILL`);
    await eventually('polling to resume', async () =>
      sim.calls.filter((c) => c.path.endsWith('/firewall')).length > pollsBefore ? true : undefined,
    );
    expect(sim.callsTo(FIREWALL_STATE, { ip, state: '0' })).toHaveLength(0);
    // Two minutes pass: the simulator's clock, and every timestamp the replicas wrote for this IP.
    offset += WINDOW_JUMP_MS;
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    try {
      await client.query(
        `UPDATE actions SET created_at = created_at - $1, completed_at = completed_at - $1 WHERE ip = $2`,
        [WINDOW_JUMP_MS, ip],
      );
      await client.query(
        `UPDATE firewall_desired SET due_at = due_at - $1, applied_at = applied_at - $1 WHERE ip = $2`,
        [WINDOW_JUMP_MS, ip],
      );
    } finally {
      await client.end();
    }
    await eventually('the new leader to apply the pending change', async () =>
      sim.callsTo(FIREWALL_STATE, { ip, state: '0' }).length > 0 ? true : undefined,
    );
    // Two more firewall polls by the new leader: its engine has ticked many times since; nothing more was sent.
    const polls = sim.calls.filter((c) => c.path.endsWith('/firewall')).length;
    await eventually('two more polls', async () =>
      sim.calls.filter((c) => c.path.endsWith('/firewall')).length >= polls + 2 * 30 ? true : undefined,
    );
    expect(sim.callsTo(FIREWALL_STATE, { ip, state: '0' })).toHaveLength(1);
    expect(sim.callsTo(FIREWALL_STATE, { ip, state: '1' })).toHaveLength(1);
    expect(sim.state.firewallSetting(ip).state).toBe('0');
  }, 120_000);
});
