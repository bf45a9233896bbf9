import { createServer, connect, type Server, type Socket } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { Daemon } from '../../src/daemon/start.js';
import { accountOf, startHarness, type Harness } from '../helpers/daemon.js';
import { requirePostgres, startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { eventually, freePort } from '../helpers/processes.js';
import { POWERCYCLE_REMEDIATION, TOKEN } from '../helpers/remediation.js';

/** A TCP relay on `port` to the database: `up()` listens, `down()` closes it and cuts every connection. */
function relay(port: number, target: number) {
  const sockets = new Set<Socket>();
  let server: Server | undefined;
  const track = (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
    s.on('error', () => s.destroy());
  };
  return {
    up: () =>
      new Promise<void>((resolve, reject) => {
        server = createServer((client) => {
          const upstream = connect(target, '127.0.0.1');
          track(client);
          track(upstream);
          client.pipe(upstream).pipe(client);
          client.on('close', () => upstream.destroy());
          upstream.on('close', () => client.destroy());
        });
        server.once('error', reject);
        server.listen(port, '127.0.0.1', () => resolve());
      }),
    down: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        if (server) server.close(() => resolve());
        else resolve();
        server = undefined;
      }),
  };
}

const found = requirePostgres();
const auth = { authorization: `Bearer ${TOKEN}` };

describe.skipIf(found.skip)('the daemon on PostgreSQL under database faults', () => {
  let pg: TestPostgres;
  let databases = 0;
  let harness: Harness | undefined;
  let link: ReturnType<typeof relay> | undefined;
  beforeAll(async () => {
    if (!found.skip) pg = await startPostgres(found.bin);
  }, 120_000);
  afterAll(() => pg?.stop());
  afterEach(async () => {
    // The daemon stops while its database still answers, then the relay goes.
    await harness?.stop();
    await link?.down();
    harness = link = undefined;
  });

  /** A daemon whose database URL goes through a relay, down until the test brings it up. */
  async function start(spell: (url: string) => string = (url) => url) {
    const url = pg.createDatabase(`faults_${process.pid}_${++databases}`);
    const port = await freePort();
    link = relay(port, pg.port);
    const viaRelay = spell(url.replace(`127.0.0.1:${pg.port}`, `127.0.0.1:${port}`));
    const h = await startHarness({
      key: 'k',
      start: false,
      simulator: { servers: 3, attackRate: 0 },
      databaseUrl: viaRelay,
      remediationAuth: true,
      config: { upstream: { timeout: '500ms' }, remediation: POWERCYCLE_REMEDIATION },
      daemon: {
        stateStore: { retryMs: 100, pingMs: 100, limits: { connectTimeoutMs: 1000 } },
        ha: { retryMs: 100, heartbeatMs: 200, timeoutMs: 2_000, refreshMs: 100 },
      },
    });
    harness = h;
    return {
      log: h.log,
      link,
      sim: h.sim,
      boot: async () => {
        const daemon = await h.start();
        await daemon.ready;
        return daemon;
      },
    };
  }
  const powercycle = (d: Daemon, serverId: string) =>
    d.app.inject({
      method: 'POST',
      url: '/api/v1/actions/powercycle',
      headers: auth,
      payload: { server_id: serverId },
    });
  const journalUp = async (d: Daemon) => {
    await d.exposition.render();
    const text = (await d.app.inject({ method: 'GET', url: '/metrics' })).body;
    return /^baremetal_journal_up (\d)$/m.exec(text)?.[1];
  };
  const noSecret = (texts: string[]) => texts.filter((t) => t.includes(pg.password));
  /** The texts of unauthenticated replies that name the database's host, user or database name. */
  const notPublic = (texts: string[]) => texts.filter((t) => /127\.0\.0\.1|bmx|faults_|postgres:/.test(t));

  /** Waits until the replica leads and its first polls worked (/readyz 200). */
  const leading = (d: Daemon) =>
    eventually('the replica to lead and poll', async () =>
      (await d.app.inject({ method: 'GET', url: '/readyz' })).statusCode === 200 ? true : undefined,
    );

  it('unreachable at start: remediation disabled (503), nothing polls; it leads and acts once it answers', async () => {
    const h = await start();
    const d = await h.boot();
    const refused = await powercycle(d, '100001');
    expect(refused.statusCode).toBe(503);
    expect(refused.json()).toMatchObject({
      code: 'BM_ERR_JOURNAL',
      message: 'remediation is disabled: the journal is unavailable: state database unreachable',
    });
    const ready = await d.app.inject({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(503);
    expect(ready.json().reasons.join('\n')).toContain(
      'the journal is unavailable (remediation disabled): state database unreachable',
    );
    // Host, port, user and database are in the log, with the password masked, not in the open replies.
    expect(
      h.log.lines.some((l) =>
        /cannot open the state database at postgres:\/\/bmx:\*\*\*@127\.0\.0\.1:\d+\/faults_/.test(l),
      ),
    ).toBe(true);
    expect(notPublic([refused.body, ready.body])).toEqual([]);
    expect(await journalUp(d)).toBe('0');
    // No replica leads without the database: nothing polls the API.
    expect(d.role.leading).toBe(false);
    expect(h.sim.calls).toHaveLength(0);
    expect(h.log.lines.some((l) => l.includes('cannot open the state database (PostgreSQL)'))).toBe(true);

    await h.link.up();
    await eventually('the store to open', async () => (d.store.unavailable === undefined ? true : undefined));
    await accountOf(d, 'default').engine.ready;
    await leading(d);
    expect(h.sim.callsTo('/api/v1/dedicated').length).toBeGreaterThan(0);
    expect((await powercycle(d, '100001')).json()).toMatchObject({ decision: 'executed' });
    expect(h.sim.callsTo('/api/v1/dedicated/powercycle')).toHaveLength(1);
    expect(await journalUp(d)).toBe('1');
    expect(h.log.lines.some((l) => l.includes('state database reachable: remediation enabled'))).toBe(true);
    expect(noSecret([...h.log.lines, refused.body, ready.body])).toEqual([]);
  });

  it('lost mid-run: the requests that touch it answer 503, then it recovers with the pool', async () => {
    const h = await start();
    await h.link.up();
    const d = await h.boot();
    await leading(d);
    expect((await powercycle(d, '100001')).json()).toMatchObject({ decision: 'executed' });

    await h.link.down();
    const lost = await powercycle(d, '100002');
    expect(lost.statusCode).toBe(503);
    expect(lost.json()).toMatchObject({ code: 'BM_ERR_JOURNAL' });
    const unready = await eventually('/readyz to name the database', async () => {
      const res = await d.app.inject({ method: 'GET', url: '/readyz' });
      return res.statusCode === 503 ? res : undefined;
    });
    expect(unready.json().reasons.join('\n')).toContain(
      'the journal is unavailable (remediation disabled): state database unreachable',
    );
    expect(notPublic([lost.body, unready.body])).toEqual([]);
    expect(await journalUp(d)).toBe('0');
    // The ticker fails every second while it is down: logged once.
    for (let i = 0; i < 3; i++) await accountOf(d, 'default').engine.tick();
    expect(h.log.lines.filter((l) => l.includes('applying pending firewall changes failed'))).toHaveLength(1);
    // /metrics and the status of polling are untouched.
    expect((await d.app.inject({ method: 'GET', url: '/metrics' })).statusCode).toBe(200);

    await h.link.up();
    // Alertmanager-like retry: the same request until the database answers and the replica leads again (between
    // two terms it has no attack data: a power action is then denied as unknown, unclaimed); it acts once.
    const done = await eventually('the request to go through again', async () => {
      const res = await powercycle(d, '100002');
      return res.statusCode === 200 && res.json().decision !== 'denied_under_attack' ? res : undefined;
    });
    expect(done.json()).toMatchObject({ decision: 'executed' });
    expect(h.sim.callsTo('/api/v1/dedicated/powercycle', { server_id: '100002' })).toHaveLength(1);
    await eventually('/readyz to be ready again', async () =>
      (await d.app.inject({ method: 'GET', url: '/readyz' })).statusCode === 200 ? true : undefined,
    );
    expect(await journalUp(d)).toBe('1');
    await accountOf(d, 'default').engine.tick();
    expect(h.log.lines.some((l) => l.includes('applying pending firewall changes works again'))).toBe(true);
    expect(noSecret([...h.log.lines, lost.body, unready.body])).toEqual([]);
  });
  it('down: the open status page and /graphs answer 503 without host or port (the log keeps them)', async () => {
    const h = await start();
    const d = await h.boot();
    const page = await d.app.inject({ method: 'GET', url: '/' });
    const graphs = await d.app.inject({ method: 'GET', url: '/graphs' });
    expect({ page: page.statusCode, graphs: graphs.statusCode }).toEqual({ page: 503, graphs: 503 });
    expect(page.json()).toMatchObject({ message: 'graph images are unavailable: state database unreachable' });
    expect(notPublic([page.body, graphs.body])).toEqual([]);
    expect(h.log.lines.some((l) => l.includes('graph images are unavailable') && l.includes('127.0.0.1'))).toBe(true);
  });

  it('an options= value PostgreSQL refuses: its own error, which quotes the value, is redacted everywhere', async () => {
    const value = 'opt-s3cret-77d1';
    const h = await start((url) => `${url}?options=${encodeURIComponent(`-c statement_timeout=${value}`)}`);
    await h.link.up();
    const d = await h.boot();
    await eventually('the refusal to be logged', async () =>
      h.log.lines.some((l) => l.includes('statement_timeout')) ? true : undefined,
    );
    const texts = [
      ...h.log.lines,
      (await d.app.inject({ method: 'GET', url: '/readyz' })).body,
      (await d.app.inject({ method: 'GET', url: '/' })).body,
      (await powercycle(d, '100001')).body,
    ];
    expect(texts.filter((t) => t.toLowerCase().includes(value))).toEqual([]);
  });

  it.each([
    ['a password= query parameter', (url: string) => `${url.replace(`:${pg.password}@`, '@')}?password=${pg.password}`],
    [
      'password= and options= parameters',
      (url: string) =>
        `${url.replace(`:${pg.password}@`, '@')}?password=${encodeURIComponent(pg.password)}&options=${encodeURIComponent(`-c application_name=${pg.password}x`)}`,
    ],
  ])('%s: redacted in every log line and reply, down and up', async (_name, spell) => {
    const h = await start(spell);
    const d = await h.boot();
    const refused = await powercycle(d, '100001');
    const ready = await d.app.inject({ method: 'GET', url: '/readyz' });
    expect(ready.statusCode).toBe(503);
    expect(refused.statusCode).toBe(503);
    await eventually('the open failure to be logged', async () =>
      h.log.lines.some((l) => l.includes('cannot open the state database at')) ? true : undefined,
    );
    await h.link.up();
    await eventually('the store to open', async () => (d.store.unavailable === undefined ? true : undefined));
    await accountOf(d, 'default').engine.ready;
    await leading(d);
    expect((await powercycle(d, '100001')).json()).toMatchObject({ decision: 'executed' });
    const logged = h.log.lines.filter((l) => l.includes('postgres://'));
    expect(logged.length).toBeGreaterThan(0);
    expect(logged.join('\n')).toContain('password=***');
    expect(noSecret([...h.log.lines, refused.body, ready.body])).toEqual([]);
    expect(notPublic([refused.body, ready.body])).toEqual([]);
  });
});
