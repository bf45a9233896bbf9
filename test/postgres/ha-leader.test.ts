/**
 * Leader election on a real PostgreSQL (Debian's, on loopback): one leader among electors on one database,
 * takeover when the leader stops or its backend is terminated, and no password in the logs.
 */
import { createServer, connect, type Server, type Socket } from 'node:net';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { LeaderElector } from '../../src/ha/leader.js';
import { captureLogger } from '../helpers/logger.js';
import { requirePostgres, startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { eventually } from '../helpers/processes.js';

const found = requirePostgres();

describe.skipIf(found.skip)('leader election (Debian postgresql on loopback)', () => {
  let server: TestPostgres;
  let url: string;
  const electors: LeaderElector[] = [];
  const logs: string[][] = [];
  beforeAll(async () => {
    if (found.skip) return;
    server = await startPostgres(found.bin);
    url = server.createDatabase('ha_leader');
  }, 120_000);
  afterEach(async () => {
    await Promise.all(electors.splice(0).map((e) => e.stop()));
    // The password never appears in what an elector logged, whatever happened in the test.
    for (const line of logs.splice(0).flat()) expect(line).not.toContain(server.password);
  });
  afterAll(() => server?.stop());

  /** An elector named `name` (its application_name) recording its role changes in `events`. */
  function elector(
    name: string,
    options: { url?: string; order?: string[]; retryMs?: number; timeoutMs?: number; sessionTimeoutMs?: number } = {},
  ) {
    const { logger, lines } = captureLogger('debug');
    logs.push(lines);
    const events: string[] = [];
    const e = new LeaderElector({
      url: options.url ?? url,
      redactedUrl: 'postgres://bmx:***@127.0.0.1/ha_leader',
      logger,
      onElected: () => {
        events.push('elected');
        options.order?.push(`${name} elected`);
      },
      onDemoted: () => {
        events.push('demoted');
        options.order?.push(`${name} demoted`);
      },
      retryMs: options.retryMs ?? 50,
      heartbeatMs: 100,
      timeoutMs: options.timeoutMs ?? 2_000,
      sessionTimeoutMs: options.sessionTimeoutMs ?? 10_000,
      applicationName: name,
    });
    electors.push(e);
    e.start();
    return { e, events, lines };
  }

  /** Both have reached the database at least once, and one of them leads. */
  const settled = (...all: Array<{ e: LeaderElector }>) =>
    eventually('an elected leader', async () =>
      all.every(({ e }) => e.problem === undefined) && all.some(({ e }) => e.leader) ? true : undefined,
    );

  const sql = async (text: string, values: unknown[] = []) => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return (await client.query(text, values)).rows;
    } finally {
      await client.end();
    }
  };

  it('elects exactly one of two electors; the lock is held by its session', async () => {
    const a = elector('bmx-a');
    const b = elector('bmx-b');
    await settled(a, b);
    const leaders = [a, b].filter(({ e }) => e.leader);
    expect(leaders).toHaveLength(1);
    const holders = await sql(
      `SELECT a.application_name FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
       WHERE l.locktype = 'advisory' AND l.granted AND a.datname = current_database()`,
    );
    expect(holders.map((h) => h.application_name)).toEqual([leaders[0] === a ? 'bmx-a' : 'bmx-b']);
  });

  it.each([
    {
      name: 'the leader stops: the lock is released and the other takes over',
      end: (leader: LeaderElector) => leader.stop(),
    },
    {
      name: "the leader's backend is terminated: it demotes itself and the other takes over",
      end: async (_leader: LeaderElector, app: string) => {
        await sql(
          'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()',
          [app],
        );
      },
    },
  ])('$name', async ({ end }) => {
    // The leader retries slowly once it has lost the lock, so that the other is the one to take it.
    const leader = elector('bmx-c', { retryMs: 10_000 });
    await eventually('a leader', async () => (leader.e.leader ? true : undefined));
    const follower = elector('bmx-d');
    await settled(leader, follower);
    await end(leader.e, 'bmx-c');
    await eventually('the follower to take over', async () => (follower.e.leader ? true : undefined));
    await eventually('the old leader to be demoted', async () =>
      leader.events.includes('demoted') ? true : undefined,
    );
    expect(leader.events.slice(0, 2)).toEqual(['elected', 'demoted']);
    expect(follower.events).toEqual(['elected']);
  });

  it('a terminated leader logs the loss, reconnects and follows; the other leads', async () => {
    const leader = elector('bmx-e', { retryMs: 10_000 });
    await eventually('a leader', async () => (leader.e.leader ? true : undefined));
    const follower = elector('bmx-f');
    await settled(leader, follower);
    await sql(
      'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()',
      ['bmx-e'],
    );
    await eventually('the follower to take over', async () => (follower.e.leader ? true : undefined));
    // The old leader is connected again, as a follower.
    await eventually('the old leader to reconnect', async () =>
      leader.e.problem === undefined && !leader.e.leader ? true : undefined,
    );
    expect(leader.lines.some((l) => l.includes('lost the database connection: no longer leader'))).toBe(true);
  });

  it('a hung network: the leader demotes itself before the server frees the lock for the other', async () => {
    // A TCP proxy in front of the database that, once frozen, forwards nothing and closes nothing.
    const port = Number(new URL(url).port);
    let frozen = false;
    const sockets: Socket[] = [];
    const proxy: Server = createServer((downstream) => {
      const upstream = connect(port, '127.0.0.1');
      sockets.push(downstream, upstream);
      downstream.on('data', (d) => frozen || upstream.write(d));
      upstream.on('data', (d) => frozen || downstream.write(d));
      downstream.on('close', () => frozen || upstream.destroy());
      upstream.on('close', () => frozen || downstream.destroy());
      downstream.on('error', () => undefined);
      upstream.on('error', () => undefined);
    });
    await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));
    try {
      const proxied = url.replace(`:${port}/`, `:${(proxy.address() as { port: number }).port}/`);
      const order: string[] = [];
      const a = elector('bmx-h', { url: proxied, order, timeoutMs: 1_000, sessionTimeoutMs: 5_000 });
      await eventually('a to lead', async () => (a.e.leader ? true : undefined));
      const b = elector('bmx-i', { order });
      await settled(a, b);
      frozen = true;
      await eventually('b to take over', async () => (b.e.leader ? true : undefined));
      // The heartbeat (every 100 ms, 1 s timeout) demotes a well before the server ends its idle session (5 s).
      expect(order).toEqual(['bmx-h elected', 'bmx-h demoted', 'bmx-i elected']);
      expect(a.e.problem).toMatch(/timeout/i);
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise((resolve) => proxy.close(resolve));
    }
  });

  it('a wrong password is retried and logged without the password', async () => {
    const wrong = url.replace(server.password, `${server.password}-wrong`);
    const { e, lines } = elector('bmx-g', { url: wrong });
    await eventually('the failure to be logged', async () =>
      lines.some((l) => l.includes('cannot reach the database for the leader election')) ? true : undefined,
    );
    expect(e.leader).toBe(false);
    expect(e.problem).toMatch(/password authentication failed/);
    expect(lines.join('\n')).not.toContain(server.password);
  });
});
