/**
 * Two in-process daemons on one real PostgreSQL (Debian's, on loopback), the simulator as their upstream:
 * exactly one polls, `baremetal_leader` is 1 on it and 0 on the other, the follower's engine checks targets
 * against the server list the leader published, the follower serves the graph images the leader stored and
 * lists them and the published servers on its status page, and when the leader stops the follower takes over
 * and polls. A replica opens one pool and the leader's connection (docs/high-availability.md counts them).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import sharp from 'sharp';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Daemon } from '../../src/daemon/start.js';
import { startSimulator, type Simulator } from '../../src/simulator/server.js';
import { DEFAULT_POOL_LIMITS } from '../../src/store/postgres/bounds.js';
import { accountOf, startHarness } from '../helpers/daemon.js';
import { seriesValue } from '../helpers/metrics.js';
import { requirePostgres, startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { eventually, freePort } from '../helpers/processes.js';
import { TOKEN } from '../helpers/remediation.js';
import { tempDir } from '../helpers/tmp.js';

const KEY = 'ha-daemons-key-3c9a1f7e';
const found = requirePostgres();

describe.skipIf(found.skip)('two daemons on one PostgreSQL (Debian postgresql on loopback)', () => {
  let server: TestPostgres;
  let sim: Simulator | undefined;
  const daemons: Daemon[] = [];
  const logs: string[][] = [];
  let databases = 0;
  beforeAll(async () => {
    if (found.skip) return;
    server = await startPostgres(found.bin);
  }, 120_000);
  afterEach(async () => {
    for (const d of daemons.splice(0)) await d.stop();
    await sim?.close();
    sim = undefined;
    for (const line of logs.splice(0).flat()) expect(line).not.toContain(server.password);
  });
  afterAll(() => server?.stop());

  /**
   * A simulator and a fresh database; `start()` starts one more daemon on them, with `config`'s keys (given its
   * state_dir) over the cluster's and `now` as its clock (default Date.now).
   */
  async function cluster(config: (stateDir: string) => Record<string, unknown> = () => ({}), now?: () => number) {
    const upstream = await startSimulator({
      apiKey: KEY,
      servers: 3,
      colocations: 0,
      transits: 0,
      attackRate: 0,
      seed: 5,
    });
    sim = upstream;
    const url = server.createDatabase(`ha_daemons_${++databases}`);
    const start = async (stateDir = tempDir()) => {
      const replica = await startHarness({
        key: KEY,
        upstream,
        stateDir,
        databaseUrl: url,
        remediationAuth: true,
        config: ({ stateDir: dir }) => ({
          graphs: { types: ['port_bits'], scales: ['day'] },
          remediation: { dry_run: true },
          ...config(dir),
        }),
        daemon: {
          ha: { retryMs: 100, heartbeatMs: 200, timeoutMs: 2_000, refreshMs: 100 },
          ...(now ? { now } : {}),
        },
      });
      logs.push(replica.log.lines);
      daemons.push(replica.daemon);
      return replica.daemon;
    };
    return { start, url };
  }

  const leaderGauge = (d: Daemon) => seriesValue(d.registry, 'baremetal_leader');
  const serverPolls = async (d: Daemon) =>
    (await seriesValue(d.registry, 'baremetal_poll_runs_total', { poll: 'servers', outcome: 'success' })) ?? 0;
  const graphPolls = async (d: Daemon) =>
    (await seriesValue(d.registry, 'baremetal_poll_runs_total', { poll: 'graphs', outcome: 'success' })) ?? 0;
  /** Waits until one of `all` leads and has run its first server and graph polls; returns [leader, follower]. */
  const elected = async (all: Daemon[]) => {
    const leader = await eventually('a leader that has polled', async () => {
      const leaders = all.filter((d) => d.role.leading);
      const [one] = leaders;
      return leaders.length === 1 && one && (await serverPolls(one)) > 0 && (await graphPolls(one)) > 0
        ? one
        : undefined;
    });
    return [leader, all.find((d) => d !== leader)!] as const;
  };
  const powercycle = (d: Daemon, serverId: string) =>
    d.app.inject({
      method: 'POST',
      url: '/api/v1/actions/powercycle',
      payload: { server_id: serverId },
      headers: { authorization: `Bearer ${TOKEN}` },
    });

  it('exactly one polls; baremetal_leader 1 and 0; when the leader stops the other takes over and polls', async () => {
    const { start } = await cluster();
    const a = await start();
    const b = await start();
    const [leader, follower] = await elected([a, b]);
    expect({
      leader: await leaderGauge(leader),
      follower: await leaderGauge(follower),
      followerPolls: await serverPolls(follower),
      followerReady: (await follower.app.inject('/readyz')).statusCode,
    }).toEqual({ leader: 1, follower: 0, followerPolls: 0, followerReady: 200 });
    // What only the polling replica knows is on the leader's /metrics alone (a follower's api_up 0 would page).
    const scrape = async (d: Daemon) => {
      await d.exposition.render();
      const text = (await d.app.inject('/metrics')).body;
      return [
        'baremetal_api_up',
        'baremetal_servers',
        'baremetal_poll_last_success_timestamp_seconds',
        'baremetal_leader',
      ].map((name) => new RegExp(`^${name}[{ ]`, 'm').test(text));
    };
    expect({ leader: await scrape(leader), follower: await scrape(follower) }).toEqual({
      leader: [true, true, true, true],
      follower: [false, false, false, true],
    });
    const listed = sim!.callsTo('/api/v1/dedicated').length;
    // Only the leader's initial polls reached the API: one server list.
    expect(listed).toBe(1);

    await leader.stop();
    daemons.splice(daemons.indexOf(leader), 1);
    await eventually('the follower to lead and poll', async () =>
      follower.role.leading && (await serverPolls(follower)) > 0 ? true : undefined,
    );
    expect(await leaderGauge(follower)).toBe(1);
    expect(sim!.callsTo('/api/v1/dedicated').length).toBe(listed + 1);
    expect(await scrape(follower)).toEqual([true, true, true, true]);
  });

  it("a follower's engine checks targets against the leader's server list", async () => {
    const { start } = await cluster();
    const [leader, follower] = await elected([await start(), await start()]);
    const known = [...accountOf(leader, 'default').state.inventory.keys()][0]!;
    // The follower never polled: its engine answers from the shared directory.
    expect(accountOf(follower, 'default').state.serversKnown).toBe(false);
    // Until the follower has read the leader's server list it answers 503 too (BM_ERR_NOT_READY).
    const res = await eventually('the follower to know the servers', async () => {
      const r = await powercycle(follower, known);
      return r.json().code === 'BM_ERR_NO_LEADER' ? r : undefined;
    });
    const cases = [
      { name: 'a listed server', res },
      { name: 'an unknown server', res: await powercycle(follower, '999999') },
    ];
    // A listed server passes the target check; the follower has no attack data (only the leader polls the
    // firewall histories), so the power guard decides nothing (503, retried) and the leader decides.
    expect(cases.map((c) => ({ name: c.name, status: c.res.statusCode, decision: c.res.json().decision }))).toEqual([
      { name: 'a listed server', status: 503, decision: undefined },
      { name: 'an unknown server', status: 200, decision: 'denied_unknown_target' },
    ]);
    expect(res.json().code).toBe('BM_ERR_NO_LEADER');
    expect(res.headers['retry-after']).toBe('5');
    expect(res.json().message).toContain('this replica does not lead the account');
    expect((await powercycle(leader, known)).json().decision).toBe('dry_run');
  });

  it("the remediation gauges are the leader's, read again by it after the other replica's decisions", async () => {
    // alice's requests wait for another operator (require_approval); bob's act at once.
    const tokens = { alice: 'alice-token-0123456789abcdef', bob: 'bob-token-0123456789abcdef' };
    const principals = (dir: string) => {
      const file = (name: keyof typeof tokens) => {
        writeFileSync(join(dir, `${name}.token`), tokens[name]);
        return join(dir, `${name}.token`);
      };
      return {
        remediation: {
          dry_run: false,
          budget_per_hour: 10,
          // The attack guard is not the subject: a follower (no firewall histories) then decides itself.
          safety: { deny_power_when_attacked: false },
          auth: {
            principals: [
              { name: 'alice', bearer_token_file: file('alice'), roles: ['operator'], require_approval: true },
              { name: 'bob', bearer_token_file: file('bob'), roles: ['operator'] },
            ],
          },
        },
      };
    };
    // Both replicas' clock: the leader's ticker reads the shared store again every 10 s of it.
    let skew = 0;
    const { start } = await cluster(principals, () => Date.now() + skew);
    const [leader, follower] = await elected([await start(), await start()]);
    const [first, second] = [...accountOf(leader, 'default').state.inventory.keys()];
    const ask = (d: Daemon, who: keyof typeof tokens, serverId: string) =>
      d.app.inject({
        method: 'POST',
        url: '/api/v1/actions/powercycle',
        payload: { server_id: serverId, reason: 'hung' },
        headers: { authorization: `Bearer ${tokens[who]}` },
      });
    /** The leader's ticker, 10 s later: it reads again what the other replica changed. */
    const leaderReads = async () => {
      skew += 10_000;
      await accountOf(leader, 'default').engine.tick();
    };
    const gauges = [
      'baremetal_action_pending',
      'baremetal_action_awaiting_approval',
      'baremetal_action_budget_remaining',
    ];
    /** Each gauge's samples of account default on `d`'s /metrics, by their labels. */
    const scrape = async (d: Daemon) => {
      await d.exposition.render();
      const lines = (await d.app.inject('/metrics')).body.split('\n');
      return Object.fromEntries(
        gauges.map((name) => [name, lines.filter((l) => l.startsWith(`${name}{account="default"`)).sort()]),
      );
    };

    // The follower decides (after it has read the leader's server list): a request awaiting approval.
    const asked = await eventually('the follower to know the servers', async () => {
      const r = await ask(follower, 'alice', first!);
      return r.json().decision === 'awaiting_approval' ? r : undefined;
    });
    await leaderReads();
    expect(await scrape(leader)).toEqual({
      baremetal_action_pending: ['baremetal_action_pending{account="default",action="firewall_state"} 0'],
      baremetal_action_awaiting_approval: [
        'baremetal_action_awaiting_approval{account="default",action="powercycle"} 1',
      ],
      baremetal_action_budget_remaining: ['baremetal_action_budget_remaining{account="default"} 10'],
    });

    // The leader approves it: it acts once. The follower's own reading (1 awaiting) is not exposed.
    const approved = await leader.app.inject({
      method: 'POST',
      url: `/api/v1/actions/${asked.json().id}/approve`,
      headers: { authorization: `Bearer ${tokens.bob}` },
      payload: {},
    });
    expect(approved.json()).toMatchObject({ execution: { decision: 'executed' } });
    await leaderReads();
    const none = Object.fromEntries(gauges.map((name) => [name, []]));
    expect({ leader: await scrape(leader), follower: await scrape(follower) }).toEqual({
      leader: {
        baremetal_action_pending: ['baremetal_action_pending{account="default",action="firewall_state"} 0'],
        baremetal_action_awaiting_approval: [
          'baremetal_action_awaiting_approval{account="default",action="powercycle"} 0',
        ],
        baremetal_action_budget_remaining: ['baremetal_action_budget_remaining{account="default"} 9'],
      },
      follower: none,
    });

    // The follower spends a call of the shared budget: the leader shows it once it has read again.
    expect((await ask(follower, 'bob', second!)).json()).toMatchObject({ decision: 'executed' });
    await leaderReads();
    expect({ leader: await scrape(leader), follower: await scrape(follower) }).toMatchObject({
      leader: { baremetal_action_budget_remaining: ['baremetal_action_budget_remaining{account="default"} 8'] },
      follower: none,
    });
  });

  it('a replica elected again reads the attack event ids again: events counted meanwhile do not count twice', async () => {
    const { start, url } = await cluster();
    sim!.state.injectEvents('dedicated', '100001', [
      { id: 'e1', ip: '198.18.0.1' },
      { id: 'e2', ip: '198.18.0.1' },
    ]);
    const stateDir = tempDir();
    const daemon = await start(stateDir);
    const firewallPolls = async () =>
      (await seriesValue(daemon.registry, 'baremetal_poll_runs_total', { poll: 'firewall', outcome: 'success' })) ?? 0;
    const total = () =>
      seriesValue(daemon.registry, 'baremetal_firewall_attack_events_total', {
        service_id: '100001',
        ip: '198.18.0.1',
      });
    await eventually('the first firewall poll', async () => ((await firewallPolls()) > 0 ? true : undefined));
    const first = await total();
    // Meanwhile another leader counted e3 and saved the ids in the shared database; then this replica loses
    // its connection and is elected again.
    sim!.state.injectEvents('dedicated', '100001', [{ id: 'e3', ip: '198.18.0.1' }]);
    await daemon.store.eventLedger('default').save(new Map([['dedicated/100001', new Set(['e1', 'e2', 'e3'])]]));
    const admin = new pg.Client({ connectionString: url });
    await admin.connect();
    await admin.query(
      "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'baremetal-exporter-leader' AND datname = current_database()",
    );
    await admin.end();
    await eventually('the second term to poll the firewall', async () =>
      (await firewallPolls()) > 1 ? true : undefined,
    );
    // The first poll exposes the new series at 0; the next adds e1 and e2, not e3 (docs/metrics-counters.md).
    expect({ first, again: await total() }).toEqual({ first: 0, again: 2 });
  });

  it('a database that cannot be reached at start: the daemon serves, leads nothing, polls nothing, names the redacted URL only', async () => {
    const password = 'start-secret-7f3a9c';
    const h = await startHarness({
      key: KEY,
      databaseUrl: `postgres://bmx:${password}@127.0.0.1:${await freePort()}/bmx`,
      config: { upstream: { base_url: 'http://127.0.0.1:1' } },
      daemon: {
        schedule: true,
        ha: { retryMs: 100, heartbeatMs: 200, timeoutMs: 2_000, refreshMs: 100 },
        stateStore: { retryMs: 100, pingMs: 100, limits: { connectTimeoutMs: 1000 } },
      },
    });
    const { daemon, log } = h;
    daemons.push(daemon);
    const unready = await eventually('/readyz to name the shared database', async () => {
      const res = await daemon.app.inject({ method: 'GET', url: '/readyz' });
      return res.statusCode === 503 && res.body.includes('the shared database does not answer') ? res : undefined;
    });
    await eventually('the state database to be retried', async () =>
      log.lines.some((l) => l.includes('cannot open the state database')) ? true : undefined,
    );
    expect(daemon.role.leading).toBe(false);
    expect(await leaderGauge(daemon)).toBe(0);
    expect(await serverPolls(daemon)).toBe(0);
    expect((await daemon.app.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(200);
    const preparing = log.lines.filter((l) => l.includes('cannot open the state database'));
    expect(preparing.join('\n')).toMatch(/postgres:\/\/bmx:\*\*\*@127\.0\.0\.1:\d+\/bmx/);
    expect(`${unready.body}\n${log.lines.join('\n')}`).not.toContain(password);
  });

  it('a follower serves the graph images the leader stored, with ETag, 304 and ?width=', async () => {
    const { start } = await cluster();
    const [leader, follower] = await elected([await start(), await start()]);
    const held = accountOf(leader, 'default').graphStore.list();
    expect(held.length).toBe(3);
    const list = (await follower.app.inject('/graphs')).json().graphs as Array<{ url: string; bytes: number }>;
    expect(list.map((g) => g.url)).toEqual(
      held.map((g) => `/graphs/default/dedicated/${g.serverId}/port_bits/day.png`),
    );
    const first = held[0]!;
    const url = list[0]!.url;
    const image = await follower.app.inject(url);
    const notModified = await follower.app.inject({ url, headers: { 'if-none-match': first.etag } });
    const narrow = await follower.app.inject(`${url}?width=32`);
    const missing = await follower.app.inject('/graphs/default/dedicated/999999/port_bits/day.png');
    expect({
      status: image.statusCode,
      type: image.headers['content-type'],
      etag: image.headers.etag,
      same: Buffer.compare(image.rawPayload, (await accountOf(leader, 'default').graphStore.get(first))!.png) === 0,
      notModified: notModified.statusCode,
      narrow: narrow.statusCode,
      narrowWidth: (await sharp(narrow.rawPayload).metadata()).width,
      missing: missing.statusCode,
      missingMessage: missing.json().message,
    }).toEqual({
      status: 200,
      type: 'image/png',
      etag: first.etag,
      same: true,
      notModified: 304,
      narrow: 200,
      narrowWidth: 32,
      missing: 404,
      missingMessage: 'no port_bits day graph held for server "999999"',
    });
  });

  it('opens one pool and the leader connection, and no more connections than the docs say', async () => {
    const Pool = pg.Pool;
    let pools = 0;
    pg.Pool = class extends Pool {
      constructor(...args: ConstructorParameters<typeof Pool>) {
        super(...args);
        pools++;
      }
    };
    try {
      const { start, url } = await cluster();
      const daemon = await start();
      await eventually('the replica leads and has polled its graphs', async () =>
        daemon.role.leading && (await graphPolls(daemon)) > 0 ? true : undefined,
      );
      // A burst of requests that each need a connection: the journal, the shared graphs and the directory.
      const auth = { authorization: `Bearer ${TOKEN}` };
      await Promise.all(
        Array.from({ length: 30 }, (_, i) =>
          daemon.app.inject(i % 2 ? { url: '/api/v1/actions', headers: auth } : { url: '/graphs' }),
        ),
      );
      const client = new pg.Client({ connectionString: url });
      await client.connect();
      const { rows } = await client
        .query<{ name: string; count: string }>(
          `SELECT application_name AS name, count(*)::text AS count FROM pg_stat_activity
           WHERE application_name LIKE 'baremetal-exporter%' AND datname = current_database() GROUP BY application_name`,
        )
        .finally(() => client.end());
      const count = Object.fromEntries(rows.map((r) => [r.name, Number(r.count)]));
      expect(pools).toBe(1);
      expect(count['baremetal-exporter-leader']).toBe(1);
      expect(count['baremetal-exporter']).toBeGreaterThan(0);
      expect(count['baremetal-exporter']).toBeLessThanOrEqual(DEFAULT_POOL_LIMITS.max);
    } finally {
      pg.Pool = Pool;
    }
  });

  it("a follower's status page lists the leader's published servers and graph images", async () => {
    const { start } = await cluster();
    // A scheduled cancellation travels through the directory too (issue 32).
    sim!.state.servers.get('100001')!.cancellation = 'end';
    const a = await start();
    const b = await start();
    const [leader, follower] = await elected([a, b]);
    const serverIds = [...sim!.state.servers.keys()];
    const page = await eventually('the follower lists every published server', async () => {
      const body = (await follower.app.inject({ url: '/', headers: { authorization: `Bearer ${TOKEN}` } })).body;
      return serverIds.every((id) => body.includes(id)) && body.includes('/graphs/') ? body : undefined;
    });
    const followerGraphs = (await follower.app.inject('/graphs')).json() as { graphs: Array<{ url: string }> };
    expect(followerGraphs.graphs.length).toBe(serverIds.length);
    for (const { url } of followerGraphs.graphs) expect(page).toContain(url);
    expect(page).not.toContain('no graph fetched yet');
    // The directory carries the record fields too: the follower's page shows hostnames, its discovery the
    // leader's targets.
    for (const server of sim!.state.servers.values()) expect(page).toContain(server.hostname);
    const targets = async (d: Daemon) => {
      const reply = await d.app.inject('/api/v1/discovery?port=9100');
      return { status: reply.statusCode, body: reply.json() };
    };
    const fromLeader = await targets(leader);
    expect(fromLeader.body).toHaveLength(serverIds.length);
    const cancellations = (fromLeader.body as Array<{ labels: Record<string, string> }>).map(
      (group) => group.labels.__meta_baremetal_cancellation,
    );
    expect(cancellations).toEqual([...serverIds].sort().map((id) => (id === '100001' ? 'end' : '')));
    expect(await targets(follower)).toEqual(fromLeader);
  });
});
