/**
 * Hostile clients at the HTTP edge (issue 28), each from its own loopback address (the whole 127/8 is
 * loopback on Linux), while the valid clients come from another:
 * - a flood of wrong `Basic` passwords from one address must not lock out valid basic-auth users elsewhere
 *   (before: 7 of 8 webhook deliveries answered 401 "too many password checks in progress");
 * - 600 slow connections from one address, each trickling a header byte every 500 ms and reconnecting when
 *   closed, must not take the port from scrapes, the health probes and a webhook (before: 18 of 20 failed);
 * - a 431 has the project's error body.
 * Outcomes are asserted, never times.
 */
import { connect, type Socket } from 'node:net';
import bcrypt from 'bcryptjs';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Daemon } from '../../src/daemon/start.js';
import { accountOf, startHarness, type Harness } from '../helpers/daemon.js';
import { unreachableAlert } from '../helpers/remediation.js';

const USERS = Array.from({ length: 8 }, (_, i) => ({ user: `am${i}`, password: `alertmanager-password-${i}` }));
// bcrypt's usual cost, so that a flood really fills the pool.
const HASHES = Object.fromEntries(USERS.map(({ user, password }) => [user, bcrypt.hashSync(password, 10)]));
const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

let harness: Harness;
let daemon: Daemon;
const agents: Agent[] = [];
/** An undici agent whose connections leave from `localAddress`. */
const from = (localAddress: string, connections = 1) => {
  const agent = new Agent({ connections, localAddress });
  agents.push(agent);
  return agent;
};

beforeAll(async () => {
  harness = await startHarness({
    key: 'hostile-clients-key-41c9',
    simulator: { servers: 3, attackRate: 0 },
    remediationAuth: true,
    config: {
      remediation: {
        auth: { basic_auth_users: HASHES },
        dry_run: true,
        rules: [{ alertname: 'BaremetalServerUnreachable', action: 'powercycle' }],
      },
    },
    daemon: { initialPolls: false, listen: true },
  });
  daemon = harness.daemon;
  await accountOf(daemon, 'default').polls.run('servers');
  await accountOf(daemon, 'default').polls.run('firewall');
});

afterAll(async () => {
  await Promise.all(agents.filter((a) => !a.closed).map((a) => a.close()));
  await harness?.stop();
});

/** A webhook delivery of one firing alert (dry run: the decision is logged, nothing is called). */
const delivery = (fingerprint: string) => JSON.stringify(unreachableAlert('2026-11-21T10:00:00Z', fingerprint));

async function call(agent: Agent, path: string, o: { headers?: Record<string, string>; body?: string } = {}) {
  const res = await request(`${daemon.url}${path}`, {
    dispatcher: agent,
    method: o.body === undefined ? 'GET' : 'POST',
    headers: { ...(o.body === undefined ? {} : { 'content-type': 'application/json' }), ...o.headers },
    ...(o.body === undefined ? {} : { body: o.body }),
  });
  const text = await res.body.text();
  return { status: res.statusCode, text, retryAfter: res.headers['retry-after'] };
}

/**
 * `count` connections from `localAddress`, each sending a request line and then one header byte every
 * `everyMs`, never finishing; a connection closed by the server is opened again after `everyMs`. Stops by
 * itself after `maxMs`, and on `stop()`.
 */
function slowloris(count: number, localAddress: string, everyMs: number, maxMs: number) {
  const port = Number(new URL(daemon.url).port);
  const sockets = new Set<Socket>();
  let running = true;
  let opened = 0;
  const initial: Array<Promise<void>> = [];
  const open = () => {
    const socket = connect({ host: '127.0.0.1', port, localAddress });
    opened++;
    sockets.add(socket);
    socket.on('error', () => undefined);
    const settled = new Promise<void>((resolve) => {
      socket.once('connect', () => resolve());
      socket.once('close', () => resolve());
    });
    socket.on('close', () => {
      sockets.delete(socket);
      if (running) setTimeout(() => running && open(), everyMs);
    });
    socket.write(`GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nX-Slow: `);
    return settled;
  };
  for (let i = 0; i < count; i++) initial.push(open());
  const drip = setInterval(() => {
    for (const s of sockets) if (!s.destroyed) s.write('a');
  }, everyMs);
  const stop = () => {
    running = false;
    clearInterval(drip);
    clearTimeout(bound);
    for (const s of sockets) s.destroy();
  };
  const bound = setTimeout(stop, maxMs);
  return { started: Promise.all(initial), stop, opened: () => opened };
}

describe('hostile clients at the HTTP edge', () => {
  it('a wrong-password flood from 127.0.0.2 (40 loops): 8 basic-auth users from 127.0.0.3 each deliver a webhook, none refused', async () => {
    const flooder = from('127.0.0.2', 40);
    const logFrom = harness.log.lines.length;
    const flood: Record<string, number> = {};
    let stop = false;
    const loops = Array.from({ length: 40 }, async (_, i) => {
      // Bounded: 25 attempts per loop, or until the valid deliveries are done.
      for (let n = 0; n < 25 && !stop; n++) {
        const res = await call(flooder, '/api/v1/alertmanager', {
          headers: { authorization: basic(USERS[i % USERS.length]!.user, `wrong-${i}-${n}`) },
          body: delivery(`flood-${i}-${n}`),
        });
        flood[res.status] = (flood[res.status] ?? 0) + 1;
      }
    });
    // The flood is running: its first answers have arrived.
    while (Object.keys(flood).length === 0) await new Promise((resolve) => setTimeout(resolve, 50));
    const valid = from('127.0.0.3');
    const statuses: number[] = [];
    for (const { user, password } of USERS) {
      const res = await call(valid, '/api/v1/alertmanager', {
        headers: { authorization: basic(user, password) },
        body: delivery(`valid-${user}`),
      });
      statuses.push(res.status);
    }
    stop = true;
    await Promise.all(loops);
    expect(statuses).toEqual(Array(USERS.length).fill(200));
    // The flood got its own refusals: 401 for the wrong passwords checked, 429/503 beyond its share, never 200.
    expect(flood['401']).toBeGreaterThan(0);
    expect(Object.keys(flood).filter((status) => !['401', '429', '503'].includes(status))).toEqual([]);
    // Counted in one warning a minute, not logged per refused request.
    const levels = harness.log.lines.slice(logFrom).map((l) => JSON.parse(l).level as string);
    expect(levels.filter((level) => level === 'error')).toEqual([]);
  });

  it('a refusal without a check is 503 or 429 with Retry-After and the error body, never 401', async () => {
    const flooder = from('127.0.0.4', 8);
    const replies = await Promise.all(
      Array.from({ length: 24 }, (_, i) =>
        call(flooder, '/api/v1/alertmanager', {
          headers: { authorization: basic('am0', `wrong-${i}`) },
          body: delivery(`refusal-${i}`),
        }),
      ),
    );
    const unchecked = replies.filter((r) => r.status !== 401);
    expect(unchecked.length).toBeGreaterThan(0);
    for (const r of unchecked) {
      expect([429, 503]).toContain(r.status);
      expect(Number(r.retryAfter)).toBeGreaterThanOrEqual(1);
      expect(JSON.parse(r.text).code).toBe(r.status === 429 ? 'BM_ERR_AUTH_RATE_LIMITED' : 'BM_ERR_AUTH_BUSY');
    }
  });

  it('600 slow connections from 127.0.0.2: scrapes, /healthz, /readyz and a webhook from 127.0.0.1 succeed', async () => {
    const attack = slowloris(600, '127.0.0.2', 500, 60_000);
    try {
      await attack.started;
      // A fresh connection for every request, as a restarted Prometheus would open: the port must accept it.
      const statuses: string[] = [];
      for (let i = 0; i < 20; i++) {
        const agent = from('127.0.0.1');
        const path = ['/metrics', '/healthz', '/readyz', '/metrics'][i % 4]!;
        statuses.push(`${path} ${(await call(agent, path).catch(() => ({ status: 'failed' }))).status}`);
        await agent.close();
        await new Promise((resolve) => setTimeout(resolve, 300));
      }
      const webhook = await call(from('127.0.0.1'), '/api/v1/alertmanager', {
        headers: { authorization: basic(USERS[0]!.user, USERS[0]!.password) },
        body: delivery('during-slowloris'),
      }).catch((error: Error) => ({ status: error.message }));
      expect(statuses.filter((s) => !s.endsWith(' 200'))).toEqual([]);
      expect(webhook.status).toBe(200);
      // The slow connections really were refused and came back.
      expect(attack.opened()).toBeGreaterThan(600);
    } finally {
      attack.stop();
    }
  });

  it('a header block over 16 KiB: 431 with the error body', async () => {
    const res = await call(from('127.0.0.5'), '/metrics', { headers: { 'x-large': 'a'.repeat(20 * 1024) } });
    expect(res.status).toBe(431);
    expect(JSON.parse(res.text)).toEqual({
      statusCode: 431,
      code: 'BM_ERR_HEADERS_TOO_LARGE',
      error: 'Request Header Fields Too Large',
      message: 'the request headers are larger than 16 KiB; the connection is closed',
    });
  });
});
