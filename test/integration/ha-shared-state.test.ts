/**
 * What a replica on PostgreSQL opens and shows: one node-postgres pool plus the leader's session connection
 * (docs/high-availability.md gives the count), and a follower's status page listing the server directory and
 * the graph images the leader published — the same ones its guards check and its `/graphs` serves.
 */
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Daemon } from '../../src/daemon.js';
import { startSimulator, type Simulator } from '../../src/simulator/server.js';
import { DEFAULT_POOL_LIMITS } from '../../src/store/postgres/pool.js';
import { startHarness, type Harness } from '../helpers/daemon.js';
import { seriesValue } from '../helpers/metrics.js';
import { requirePostgres, startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { eventually } from '../helpers/processes.js';
import { TOKEN } from '../helpers/remediation.js';

const KEY = 'ha-shared-state-key-5d1e2a';
const found = requirePostgres();

describe.skipIf(found.skip)('a replica on PostgreSQL (Debian postgresql on loopback)', () => {
  let server: TestPostgres;
  let sim: Simulator | undefined;
  const replicas: Harness[] = [];
  let databases = 0;
  beforeAll(async () => {
    if (found.skip) return;
    server = await startPostgres(found.bin);
  }, 120_000);
  afterEach(async () => {
    // The replicas first, then the upstream they share.
    for (const replica of replicas.splice(0)) await replica.stop();
    await sim?.close();
    sim = undefined;
  });
  afterAll(() => server?.stop());

  /** A simulator and a fresh database; `start()` starts one more replica on them. */
  async function cluster() {
    const upstream = await startSimulator({
      apiKey: KEY,
      servers: 3,
      colocations: 0,
      transits: 0,
      attackRate: 0,
      seed: 7,
    });
    sim = upstream;
    const url = server.createDatabase(`ha_shared_${++databases}`);
    const start = async () => {
      const replica = await startHarness({
        key: KEY,
        upstream,
        databaseUrl: url,
        remediationAuth: true,
        config: { graphs: { types: ['port_bits'], scales: ['day'] }, remediation: { dry_run: true } },
        daemon: { ha: { retryMs: 100, heartbeatMs: 200, timeoutMs: 2_000, refreshMs: 100 } },
      });
      replicas.push(replica);
      return replica.daemon;
    };
    return { start, url };
  }
  const graphPolls = async (d: Daemon) =>
    (await seriesValue(d.registry, 'baremetal_poll_runs_total', { poll: 'graphs', outcome: 'success' })) ?? 0;

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
           WHERE application_name LIKE 'baremetal-exporter%' GROUP BY application_name`,
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
    const a = await start();
    const b = await start();
    const leader = await eventually('a leader that has polled its graphs', async () => {
      const leaders = [a, b].filter((d) => d.role.leading);
      return leaders.length === 1 && (await graphPolls(leaders[0]!)) > 0 ? leaders[0] : undefined;
    });
    const follower = leader === a ? b : a;
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
    expect(await targets(follower)).toEqual(fromLeader);
  });
});
