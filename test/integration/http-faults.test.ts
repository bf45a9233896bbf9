import { connect, type Socket } from 'node:net';
import bcrypt from 'bcryptjs';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Daemon } from '../../src/daemon/start.js';
import { MAX_CONNECTIONS_PER_ADDRESS } from '../../src/http/server-limits.js';
import { accountOf, startHarness, type Harness } from '../helpers/daemon.js';
import { TOKEN } from '../helpers/remediation.js';

const KEY = 'http-faults-key-7a0c';
const PASSWORD = 'scrape-password-0123';
// bcrypt's usual cost: each comparison takes tens of milliseconds, so a flood really fills the queue.
const HASH = bcrypt.hashSync(PASSWORD, 10);
const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
const SCRAPER = { authorization: basic('prometheus', PASSWORD) };
const OPERATOR = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };

let harness: Harness;
let daemon: Daemon;
let log: Harness['log'];
const agent = new Agent({ connections: 32 });

beforeAll(async () => {
  harness = await startHarness({
    key: KEY,
    simulator: { servers: 3, attackRate: 0 },
    remediationAuth: true,
    logLevel: 'info',
    config: {
      web: { auth: { basic_auth_users: { prometheus: HASH } } },
      remediation: { dry_run: false, rules: [{ alertname: 'BaremetalServerUnreachable', action: 'powercycle' }] },
    },
    daemon: { initialPolls: false, listen: true },
  });
  ({ daemon, log } = harness);
  await accountOf(daemon, 'default').polls.run('servers');
  // The attack state a power action needs (remediation.safety.deny_power_when_attacked).
  await accountOf(daemon, 'default').polls.run('firewall');
  await accountOf(daemon, 'default').polls.run('graphs');
  // Prometheus has scraped before the fault starts: its credentials are verified and remembered.
  expect((await scrape()).status).toBe(200);
});

afterAll(async () => {
  await agent.close();
  await harness?.stop();
});

async function call(
  path: string,
  options: { method?: 'GET' | 'POST'; headers?: Record<string, string>; body?: string } = {},
) {
  const res = await request(`${daemon.url}${path}`, {
    dispatcher: agent,
    method: options.method ?? 'GET',
    headers: options.headers ?? {},
    ...(options.body === undefined ? {} : { body: options.body }),
  });
  const text = await res.body.text();
  return { status: res.statusCode, text };
}
const scrape = () => call('/metrics', { headers: SCRAPER });

/** Scrapes /metrics `count` times, one after the other, while `fault` runs; every status. */
async function scrapesDuring(count: number): Promise<number[]> {
  const statuses: number[] = [];
  for (let i = 0; i < count; i++) statuses.push((await scrape()).status);
  return statuses;
}

/**
 * `count` raw connections from `localAddress` that send `head` and then one byte of `drip` every `everyMs`,
 * never finishing; each resolves to the status line it was answered with ('' when closed unanswered).
 */
function trickle(count: number, head: string, drip: string, everyMs: number, localAddress: string) {
  const sockets: Socket[] = [];
  const closed: Array<Promise<string>> = [];
  for (let i = 0; i < count; i++) {
    const socket = connect({ host: '127.0.0.1', port: Number(new URL(daemon.url).port), localAddress });
    socket.on('error', () => undefined);
    let received = '';
    socket.on('data', (d) => (received += String(d)));
    closed.push(new Promise((resolve) => socket.on('close', () => resolve(received.split('\r\n')[0] ?? ''))));
    socket.write(head);
    sockets.push(socket);
  }
  // At most 120 drips each (a minute at 500 ms): the loop stops by itself even if the server never closes.
  let drips = 0;
  const timer = setInterval(() => {
    if (++drips > 120) clearInterval(timer);
    for (const s of sockets) if (!s.destroyed) s.write(drip);
  }, everyMs);
  return {
    closed: Promise.all(closed),
    stop: () => {
      clearInterval(timer);
      for (const s of sockets) s.destroy();
    },
  };
}

/** `promise`, or a rejection naming `what` after `ms`: a bound on the wait, not a latency assertion. */
function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>(
    (_, reject) => (timer = setTimeout(() => reject(new Error(`${what} within ${ms / 1000} s`)), ms)),
  );
  return Promise.race([promise, deadline]).finally(() => clearTimeout(timer));
}

const powercycles = () => harness.sim.callsTo('/api/v1/dedicated/powercycle').length;
const errorLines = (from: number) =>
  log.lines.slice(from).filter((line) => ['error', 'fatal'].includes(JSON.parse(line).level));
const alert = (serverId: unknown, fingerprint: string) =>
  JSON.stringify({
    version: '4',
    status: 'firing',
    receiver: 'baremetal',
    alerts: [
      {
        status: 'firing',
        labels: { alertname: 'BaremetalServerUnreachable', server_id: serverId },
        annotations: {},
        startsAt: '2026-11-21T10:00:00Z',
        fingerprint,
      },
    ],
  });

interface Row {
  fault: string;
  run: () => Promise<void>;
}

describe('faults at the HTTP edge', () => {
  it.each<Row>([
    {
      fault:
        '16 loops of wrong Basic auth: /metrics still answers 200, and the flood is refused without a check beyond the queue',
      run: async () => {
        const flood: string[] = [];
        let stop = false;
        const loops = Array.from({ length: 16 }, async (_, i) => {
          // Bounded: 25 attempts per loop, or until the scrapes are done.
          for (let n = 0; n < 25 && !stop; n++) {
            const res = await call('/metrics', {
              headers: { authorization: basic(i % 2 ? 'prometheus' : `user${i}`, `wrong-${n}`) },
            });
            flood.push(`${res.status} ${JSON.parse(res.text).message}`);
          }
        });
        const statuses = await scrapesDuring(20);
        stop = true;
        await Promise.all(loops);
        expect(statuses).toEqual(Array(20).fill(200));
        // Wrong passwords checked (401); beyond this address's share refused unchecked (503, then 429), never 401.
        expect(flood).toContain('401 invalid credentials');
        expect(flood).toContain(
          '503 credentials not checked: too many password checks in progress from this address; retry later',
        );
        expect(
          new Set([
            ...flood,
            '401 invalid credentials',
            '503 credentials not checked: too many password checks in progress from this address; retry later',
            '429 credentials not checked: too many wrong passwords from this address; retry later',
          ]).size,
        ).toBe(3);
        expect(log.lines.some((l) => JSON.parse(l).msg?.startsWith('basic-auth checks refused without a check'))).toBe(
          true,
        );
      },
    },
    {
      fault: `200 connections trickling headers or bodies from two addresses (${MAX_CONNECTIONS_PER_ADDRESS} each at most): the server closes the ones it took with 408 and the rest at once, /metrics answers meanwhile`,
      run: async () => {
        const port = new URL(daemon.url).port;
        const headers = trickle(100, `GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n`, 'x', 500, '127.0.0.2');
        const bodies = trickle(
          100,
          `POST /api/v1/alertmanager HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${TOKEN}\r\nContent-Type: application/json\r\nContent-Length: 100000\r\n\r\n`,
          ' ',
          500,
          '127.0.0.3',
        );
        try {
          const statuses = await scrapesDuring(10);
          expect(statuses).toEqual(Array(10).fill(200));
          const [h, b] = await within(
            30_000,
            'trickling connections not all closed',
            Promise.all([headers.closed, bodies.closed]),
          );
          for (const closed of [h, b]) {
            expect(closed.filter((line) => line === 'HTTP/1.1 408 Request Timeout')).toHaveLength(
              MAX_CONNECTIONS_PER_ADDRESS,
            );
            expect(closed.filter((line) => line === '')).toHaveLength(100 - MAX_CONNECTIONS_PER_ADDRESS);
          }
          expect((await scrape()).status).toBe(200);
          expect(powercycles()).toBe(0);
        } finally {
          headers.stop();
          bodies.stop();
        }
      },
    },
    {
      fault: 'webhook label server_id as a number: 400, the simulator recorded no power cycle',
      run: async () => {
        const res = await call('/api/v1/alertmanager', {
          method: 'POST',
          headers: OPERATOR,
          body: alert(100001, 'number-label'),
        });
        expect(res.status).toBe(400);
        expect(JSON.parse(res.text).message).toBe('body/alerts/0/labels/server_id must be string');
        expect(powercycles()).toBe(0);
      },
    },
    {
      fault: 'a webhook of 1001 alerts (remediation.max_alerts 1000): 400 naming the key, no power cycle',
      run: async () => {
        const one = JSON.parse(alert('100001', 'many-0'));
        const alerts = Array.from({ length: 1001 }, (_, i) => ({ ...one.alerts[0], fingerprint: `many-${i}` }));
        const res = await call('/api/v1/alertmanager', {
          method: 'POST',
          headers: OPERATOR,
          body: JSON.stringify({ ...one, alerts }),
        });
        expect(res.status).toBe(400);
        expect(JSON.parse(res.text).message).toBe(
          "1001 alerts in one delivery, above remediation.max_alerts (1000); nothing was done: set max_alerts on Alertmanager's webhook_config at or below it",
        );
        expect(powercycles()).toBe(0);
      },
    },
    {
      fault: 'operator body as an array: 400, the simulator recorded no power cycle',
      run: async () => {
        const res = await call('/api/v1/actions/powercycle', { method: 'POST', headers: OPERATOR, body: '["100001"]' });
        expect(res.status).toBe(400);
        expect(JSON.parse(res.text).message).toBe('body must be object');
        expect(powercycles()).toBe(0);
      },
    },
    {
      fault: '?width=Infinity: 400 with a plain sentence, no error-level log',
      run: async () => {
        const from = log.lines.length;
        const res = await call('/graphs/dedicated/100001/port_bits/day.png?width=Infinity', { headers: SCRAPER });
        expect(res.status).toBe(400);
        expect(JSON.parse(res.text)).toEqual({
          statusCode: 400,
          code: 'BM_ERR_BAD_REQUEST',
          error: 'Bad Request',
          message: 'width must be a whole number from 16 to 2000 (got "Infinity")',
        });
        expect(errorLines(from)).toEqual([]);
      },
    },
  ])('$fault', async ({ run }) => {
    await run();
  });

  it('acts on the same webhook with a string label (the rows above can fail)', async () => {
    const res = await call('/api/v1/alertmanager', {
      method: 'POST',
      headers: OPERATOR,
      body: alert('100001', 'string-label'),
    });
    expect(res.status).toBe(200);
    expect(JSON.parse(res.text).results[0].decision).toBe('executed');
    expect(powercycles()).toBe(1);
  });
});
