import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Agent, MockAgent } from 'undici';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  ApiError,
  HttpStatusError,
  InsecureUrlError,
  InvalidReplyError,
  RateLimitedError,
  ResponseTooLargeError,
  UpstreamCancelledError,
  UpstreamConnectionError,
  UpstreamTimeoutError,
} from '../../../src/errors.js';
import { checkBaseUrl } from '../../../src/config/base-url.js';
import { UpstreamClient } from '../../../src/upstream/client.js';
import type { RequestEvent } from '../../../src/upstream/request.js';
import { listServers, powerCycle } from '../../../src/upstream/dedicated.js';
import { getDedicatedFirewallHistory, setFirewallState } from '../../../src/upstream/firewall.js';

const BASE = 'https://api.provider.test';
const KEY = 'sk-test-0123456789abcdef';

let agent: MockAgent;
let events: RequestEvent[];
const client = (overrides: Partial<ConstructorParameters<typeof UpstreamClient>[0]> = {}) =>
  new UpstreamClient({
    baseUrl: BASE,
    apiKey: KEY,
    timeoutMs: 2000,
    concurrency: 4,
    retries: 2,
    retryMinDelayMs: 1,
    dispatcher: agent,
    onRequest: (e) => events.push(e),
    ...overrides,
  });

/** A client of `url` (a loopback server), one request at a time, no retry, a 5 s deadline. */
const oneAtATime = (url: string, overrides: Partial<ConstructorParameters<typeof UpstreamClient>[0]>) =>
  new UpstreamClient({ baseUrl: url, apiKey: KEY, timeoutMs: 5000, concurrency: 1, retries: 0, ...overrides });

/** Writes `total` bytes to `res` in 64 KiB chunks as fast as the client reads them, telling `count` each write. */
function pump(res: ServerResponse, total: number, count: (bytes: number) => void): void {
  const chunk = Buffer.alloc(64 * 1024, 'x');
  let written = 0;
  const next = () => {
    while (written < total && !res.destroyed) {
      written += chunk.length;
      count(chunk.length);
      if (!res.write(chunk)) return void res.once('drain', next);
    }
    res.end();
  };
  next();
}

beforeEach(() => {
  agent = new MockAgent();
  agent.disableNetConnect();
  events = [];
});
afterEach(async () => {
  await agent.close();
});

describe('request encoding', () => {
  it('POSTs a form-encoded body with the key in a plain Authorization header', async () => {
    let seen: { body?: string; headers?: Record<string, string> } = {};
    agent
      .get(BASE)
      .intercept({ path: '/api/v1/dedicated/firewall', method: 'POST' })
      .reply(200, (opts) => {
        seen = { body: String(opts.body), headers: opts.headers as Record<string, string> };
        return { success: true, firewall: [] };
      });
    await getDedicatedFirewallHistory(client(), '1234', 'hour', '203.0.113.7');
    expect(seen.body).toBe('server_id=1234&scale=hour&ip=203.0.113.7');
    expect(seen.headers?.authorization).toBe(KEY);
    expect(seen.headers?.['content-type']).toBe('application/x-www-form-urlencoded');
    expect(events).toEqual([
      { operation: 'firewall_history_dedicated', outcome: 'success', durationSeconds: expect.any(Number) },
    ]);
  });

  it('omits optional parameters that are not given', async () => {
    let body = '';
    agent
      .get(BASE)
      .intercept({ path: '/api/v1/dedicated/firewall', method: 'POST' })
      .reply(200, (opts) => {
        body = String(opts.body);
        return { success: true, firewall: '' };
      });
    await getDedicatedFirewallHistory(client(), '1234', 'day');
    expect(body).toBe('server_id=1234&scale=day');
  });
});

describe('base URL', () => {
  it.each([
    ['https is accepted', 'https://api.provider.test/', 'https://api.provider.test'],
    ['http to 127.0.0.1 is accepted (the simulator)', 'http://127.0.0.1:8443', 'http://127.0.0.1:8443'],
    ['http to localhost is accepted', 'http://localhost:1', 'http://localhost:1'],
  ])('%s', (_name, input, expected) => {
    expect(checkBaseUrl(input)).toBe(expected);
  });
  it('refuses plain http to a remote host', () => {
    expect(() => checkBaseUrl('http://api.provider.test')).toThrow(InsecureUrlError);
    expect(() => checkBaseUrl('http://api.provider.test')).toThrow(/requires HTTPS/);
  });
});

describe('error kinds', () => {
  it.each([
    {
      name: '{error:true} with 200 is an ApiError with the API message',
      status: 200,
      body: JSON.stringify({
        error: true,
        message: 'The IP firewall state was already updated in the last 2 minutes.',
      }),
      type: ApiError,
      message:
        'firewall_state [POST] "/api/v1/dedicated/firewall/state": 200 API error: The IP firewall state was already updated in the last 2 minutes.',
    },
    {
      name: '{error:true} with 403 is an ApiError too',
      status: 403,
      body: JSON.stringify({ error: true, message: 'Invalid API key.' }),
      type: ApiError,
      message: 'firewall_state [POST] "/api/v1/dedicated/firewall/state": 403 API error: Invalid API key.',
    },
    {
      name: 'an HTML 502 from a proxy keeps the first 200 characters',
      status: 502,
      body: `<html><head><title>502 Bad Gateway</title></head><body>${'x'.repeat(400)}</body></html>`,
      type: HttpStatusError,
      message: `firewall_state [POST] "/api/v1/dedicated/firewall/state": 502 unexpected HTTP status: <html><head><title>502 Bad Gateway</title></head><body>${'x'.repeat(200 - 55)}`,
    },
    {
      name: 'a 200 that is not JSON is an invalid reply',
      status: 200,
      body: 'OK',
      type: InvalidReplyError,
      message:
        'firewall_state [POST] "/api/v1/dedicated/firewall/state": 200 invalid reply: not JSON (body starts: "OK")',
    },
    {
      name: 'a 404 with JSON but no error flag is an HTTP status error',
      status: 404,
      body: JSON.stringify({ detail: 'nope' }),
      type: HttpStatusError,
      message:
        'firewall_state [POST] "/api/v1/dedicated/firewall/state": 404 unexpected HTTP status: {"detail":"nope"}',
    },
  ])('$name', async ({ status, body, type, message }) => {
    agent.get(BASE).intercept({ path: '/api/v1/dedicated/firewall/state', method: 'POST' }).reply(status, body);
    const error = await setFirewallState(client(), { serverId: '1', ip: '203.0.113.7', state: '1' }).catch(
      (e: unknown) => e,
    );
    expect(error).toBeInstanceOf(type);
    expect((error as Error).message).toBe(message);
    expect((error as ApiError).status).toBe(status);
    expect((error as ApiError).operation).toBe('firewall_state');
  });

  it('never puts the key in an error, even when the upstream echoes it', async () => {
    agent
      .get(BASE)
      .intercept({ path: '/api/v1/dedicated', method: 'POST' })
      .reply(401, { error: true, message: `bad key ${KEY}` });
    const error = (await listServers(client({ retries: 0 })).catch((e: unknown) => e)) as Error;
    expect(error).toBeInstanceOf(ApiError);
    expect(error.message).not.toContain(KEY);
    expect(JSON.stringify(error)).not.toContain(KEY);
    expect(error.message).toContain('[REDACTED]');
  });

  // A key with the characters that change under escaping: "/" (PHP's json_encode writes "\/"), "+" and "=".
  const SLASHY = 'sk/live+0123456789=abcdef';
  const escapedSlash = JSON.stringify(SLASHY).slice(1, -1).replaceAll('/', '\\/');
  it.each([
    {
      name: 'an API error echoing it JSON-escaped with \\/',
      status: 403,
      body: `{"error":true,"message":"bad key ${escapedSlash}"}`,
    },
    {
      name: 'an API error echoing it URL-encoded',
      status: 403,
      body: `{"error":true,"message":"bad key ${encodeURIComponent(SLASHY)}"}`,
    },
    {
      name: 'a proxy page with it past the 200-character excerpt boundary',
      status: 502,
      body: `${'x'.repeat(190)}${SLASHY} and more`,
    },
    {
      name: 'a wrong-shape 200 reply holding it (decode error excerpt)',
      status: 200,
      body: `{"unexpected":"${escapedSlash}"}`,
    },
  ])('scrubs the key from $name', async ({ status, body }) => {
    agent
      .get(BASE)
      .intercept({ path: '/api/v1/dedicated', method: 'POST' })
      .reply(status, body, { headers: { 'content-type': 'application/json' } });
    const error = (await listServers(client({ apiKey: SLASHY, retries: 0 })).catch((e: unknown) => e)) as Error;
    expect(error).toBeInstanceOf(Error);
    const everything = `${error.message} ${JSON.stringify(error)}`;
    for (const form of [SLASHY, escapedSlash, encodeURIComponent(SLASHY), SLASHY.slice(0, 12)])
      expect(everything).not.toContain(form);
  });

  it('after a key rotation, still scrubs the old key, the new one and the other secrets, however spelled', () => {
    const OTHER = 'webhook-token-0123456789';
    const NEW = 'sk-next-fedcba9876543210';
    const c = client({ secrets: [OTHER] });
    expect(c.apiKey.set(NEW)).toBe(true);
    const text = `old ${KEY.toUpperCase()} new ${encodeURIComponent(NEW)} token ${[...OTHER].map((ch) => `\\u${ch.charCodeAt(0).toString(16).padStart(4, '0')}`).join('')}`;
    expect(c.scrub(text)).toBe('old [REDACTED] new [REDACTED] token [REDACTED]');
  });

  it('maps a refused connection to UpstreamConnectionError', async () => {
    agent
      .get(BASE)
      .intercept({ path: '/api/v1/dedicated', method: 'POST' })
      .replyWithError(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }))
      .times(3);
    const error = await listServers(client()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UpstreamConnectionError);
    expect((error as Error).message).toContain('ECONNREFUSED');
  });
});

describe('retries', () => {
  it('retries a read after a transient failure, then succeeds', async () => {
    const pool = agent.get(BASE);
    pool.intercept({ path: '/api/v1/dedicated', method: 'POST' }).reply(502, '<html>502 Bad Gateway</html>');
    pool
      .intercept({ path: '/api/v1/dedicated', method: 'POST' })
      .reply(500, { error: true, message: 'An unexpected error occurred.' });
    pool.intercept({ path: '/api/v1/dedicated', method: 'POST' }).reply(200, [{ server_id: '1' }]);
    const list = await listServers(client());
    expect(list.servers.map((s) => s.serverId)).toEqual(['1']);
    expect(events.map((e) => e.outcome)).toEqual(['http_error', 'api_error', 'success']);
  });

  it('gives up after the configured retries', async () => {
    agent.get(BASE).intercept({ path: '/api/v1/dedicated', method: 'POST' }).reply(503, 'busy').times(3);
    await expect(listServers(client({ retries: 2 }))).rejects.toBeInstanceOf(HttpStatusError);
    expect(events).toHaveLength(3);
  });

  it('does not retry a read whose reply is a well-formed API error with 200', async () => {
    agent
      .get(BASE)
      .intercept({ path: '/api/v1/dedicated', method: 'POST' })
      .reply(200, { error: true, message: 'Server not found.' });
    await expect(listServers(client())).rejects.toBeInstanceOf(ApiError);
    expect(events).toHaveLength(1);
  });

  it('never retries a write', async () => {
    agent.get(BASE).intercept({ path: '/api/v1/dedicated/powercycle', method: 'POST' }).reply(502, '<html>502</html>');
    await expect(powerCycle(client({ retries: 5 }), '1')).rejects.toBeInstanceOf(HttpStatusError);
    expect(events).toHaveLength(1);
  });
});

describe('against real sockets', () => {
  let server: Server | undefined;
  afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

  it('times out a reply that never comes (headers timeout)', async () => {
    server = createServer(() => undefined);
    server.listen(0, '127.0.0.1');
    await new Promise((r) => server!.once('listening', r));
    const { port } = server.address() as AddressInfo;
    const c = new UpstreamClient({
      baseUrl: `http://127.0.0.1:${port}`,
      apiKey: KEY,
      timeoutMs: 300,
      concurrency: 1,
      retries: 0,
    });
    const error = await listServers(c).catch((e: unknown) => e);
    server.closeAllConnections();
    await c.close();
    expect(error).toBeInstanceOf(UpstreamTimeoutError);
    expect((error as Error).message).toMatch(/^list_servers \[POST\] "\/api\/v1\/dedicated": timed out \(/);
  });

  /** A server whose every reply is written by `handle`; counts the requests it saw. */
  async function serve(
    handle: (res: import('node:http').ServerResponse, n: number) => void,
  ): Promise<{ url: string; requests: () => number }> {
    let n = 0;
    server = createServer((req, res) => {
      req.resume();
      handle(res, ++n);
    });
    server.listen(0, '127.0.0.1');
    await new Promise((r) => server!.once('listening', r));
    return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, requests: () => n };
  }

  it('ends an attempt whose body trickles in at the total deadline, however often bytes arrive', async () => {
    const timers: NodeJS.Timeout[] = [];
    let closed: Promise<true> | undefined;
    const { url } = await serve((res) => {
      closed = new Promise((resolve) => res.once('close', () => resolve(true)));
      res.writeHead(200, { 'content-type': 'application/json' });
      // One byte every 50 ms: undici's per-chunk body timeout (300 ms) alone would never fire.
      const drip = () =>
        timers.push(
          setTimeout(() => {
            res.write(' ');
            drip();
          }, 50),
        );
      drip();
    });
    const c = new UpstreamClient({ baseUrl: url, apiKey: KEY, timeoutMs: 300, concurrency: 1, retries: 0 });
    const error = await setFirewallState(c, { serverId: '1', ip: '203.0.113.7', state: '1' }).catch((e: unknown) => e);
    // The deadline aborted the exchange itself, not only the promise: the client closed the connection.
    const closedByClient = await Promise.race([closed, new Promise((r) => setTimeout(() => r(false), 5_000))]);
    timers.forEach(clearTimeout);
    server!.closeAllConnections();
    await c.close();
    expect(closedByClient).toBe(true);
    expect(error).toBeInstanceOf(UpstreamTimeoutError);
    // The body was being answered: the write may have acted.
    expect((error as UpstreamTimeoutError).outcomeUnknown).toBe(true);
  });

  it.each([
    { name: 'a declared length over the cap', chunked: false },
    { name: 'a chunked body that grows past the cap', chunked: true },
  ])('aborts $name with ResponseTooLargeError', async ({ chunked }) => {
    let written = 0;
    const { url } = await serve((res) => {
      const total = 10 * 1024 * 1024;
      res.writeHead(
        200,
        chunked
          ? { 'content-type': 'application/json' }
          : { 'content-type': 'application/json', 'content-length': total },
      );
      pump(res, total, (bytes) => (written += bytes));
    });
    const seen: RequestEvent[] = [];
    const c = oneAtATime(url, { maxResponseBytes: 256 * 1024, onRequest: (e) => seen.push(e) });
    const error = await listServers(c).catch((e: unknown) => e);
    server!.closeAllConnections();
    await c.close();
    expect(error).toBeInstanceOf(ResponseTooLargeError);
    expect(seen.map((e) => e.outcome)).toEqual(['too_large']);
    // Streaming stopped early: far less than the 10 MiB the server meant to send was read.
    expect(written).toBeLessThan(10 * 1024 * 1024);
  });

  it('reads no more of a 429 than undici dump() would: a large body is a pause, not a reply too large', async () => {
    let written = 0;
    const total = 10 * 1024 * 1024;
    const { url } = await serve((res) => {
      res.writeHead(429, { 'retry-after': '60', 'content-type': 'application/json' }); // chunked
      pump(res, total, (bytes) => (written += bytes));
    });
    // A cap below DISCARD_LIMIT: the cap is not what stops the read.
    const c = oneAtATime(url, { maxResponseBytes: 64 * 1024 });
    const error = await setFirewallState(c, { serverId: '1', ip: '203.0.113.7', state: '1' }).catch((e: unknown) => e);
    server!.closeAllConnections();
    await c.close();
    expect(error).toBeInstanceOf(RateLimitedError);
    expect(c.pausedUntil).toBeGreaterThan(0);
    expect(written).toBeLessThan(total);
  });

  it('pauses every request after a 429 with Retry-After: a write is refused unsent, a read waits (and can be cancelled)', async () => {
    const { url, requests } = await serve((res) => {
      res.writeHead(429, { 'retry-after': '120', 'content-type': 'application/json' });
      res.end('{"error":true,"message":"Too many requests."}');
    });
    const clock = { now: 1_000_000 };
    const c = new UpstreamClient({
      baseUrl: url,
      apiKey: KEY,
      timeoutMs: 2000,
      concurrency: 2,
      retries: 3,
      retryMinDelayMs: 1,
      now: () => clock.now,
    });
    const cancel = new AbortController();
    const read = c.json({
      operation: 'list_servers',
      path: '/api/v1/dedicated',
      body: {},
      read: true,
      signal: cancel.signal,
    });
    // Let the first attempt come back with the 429, then cancel the read waiting in the pause.
    while (requests() === 0 || c.pausedUntil === 0) await new Promise((r) => setTimeout(r, 5));
    cancel.abort();
    const first = await read.catch((e: unknown) => e);
    // The read retried into the pause and waited there until it was cancelled: one request reached the server.
    expect(first).toBeInstanceOf(UpstreamCancelledError);
    expect(c.pausedUntil).toBe(1_000_000 + 120_000);
    const write = await setFirewallState(c, { serverId: '1', ip: '203.0.113.7', state: '1' }).catch((e: unknown) => e);
    expect(write).toBeInstanceOf(RateLimitedError);
    expect((write as RateLimitedError).outcomeUnknown).toBe(false);
    expect(requests()).toBe(1);
    clock.now += 120_001;
    expect(c.pausedUntil).toBe(0);
    await c.close();
  });

  /**
   * A rate-limiting reply whose body never arrives whole: `cut` 'reset' destroys the connection after a piece of a
   * chunked body, 'short' closes it before the declared length, 'stall' sends a piece of the declared length and
   * nothing more. Resolves with whether the server saw the connection close, once it did (or after 5 s).
   */
  function cutReply(
    res: ServerResponse,
    status: number,
    cut: 'reset' | 'short' | 'stall',
  ): { closed: Promise<boolean> } {
    const closed = new Promise<boolean>((resolve) => {
      res.socket?.once('close', () => resolve(true));
      setTimeout(() => resolve(false), 5_000).unref();
    });
    res.writeHead(status, cut === 'reset' ? { 'retry-after': '60' } : { 'retry-after': '60', 'content-length': '100' });
    res.write('{"error":');
    if (cut === 'reset') setImmediate(() => res.socket?.destroy());
    if (cut === 'short') setImmediate(() => res.socket?.end());
    return { closed };
  }

  it.each([
    { name: 'a 429 whose chunked body is reset', status: 429, cut: 'reset' as const },
    { name: 'a 429 whose body stalls (the body timeout and the deadline end it)', status: 429, cut: 'stall' as const },
    { name: 'a 503 with Retry-After whose body is cut short', status: 503, cut: 'short' as const },
  ])('pauses after $name: its status is the answer, not the body', async ({ status, cut }) => {
    let closed: Promise<boolean> | undefined;
    const { url } = await serve((res) => {
      closed = cutReply(res, status, cut).closed;
    });
    const seen: RequestEvent[] = [];
    const c = oneAtATime(url, { timeoutMs: 300, onRequest: (e) => seen.push(e) });
    const error = await listServers(c).catch((e: unknown) => e);
    const closedByEither = await closed;
    server!.closeAllConnections();
    await c.close();
    expect(error).toBeInstanceOf(RateLimitedError);
    expect((error as RateLimitedError).status).toBe(status);
    expect(c.pausedUntil).toBeGreaterThan(0);
    expect(seen.map((e) => e.outcome)).toEqual(['rate_limited']);
    // No connection is kept with a body half read (for 'stall', the client is the one that closed it).
    expect(closedByEither).toBe(true);
  });

  it("pauses after a 429 whose body the caller's cancel cuts short, as dump().catch() did", async () => {
    const { url } = await serve((res) => void cutReply(res, 429, 'stall'));
    // The client's handler, seen through an interceptor: the cancel comes once it has the 429's headers.
    let headersSeen: () => void = () => undefined;
    const seenHeaders = new Promise<void>((resolve) => (headersSeen = resolve));
    const dispatcher = new Agent().compose(
      (dispatch) => (options, handler) =>
        dispatch(options, {
          onRequestStart: (controller, context) => handler.onRequestStart?.(controller, context),
          onResponseStart: (controller, statusCode, headers, message) => {
            handler.onResponseStart?.(controller, statusCode, headers, message);
            headersSeen();
          },
          onResponseData: (controller, chunk) => handler.onResponseData?.(controller, chunk),
          onResponseEnd: (controller, trailers) => handler.onResponseEnd?.(controller, trailers),
          onResponseError: (controller, error) => handler.onResponseError?.(controller, error),
        }),
    );
    const c = oneAtATime(url, { dispatcher });
    const cancel = new AbortController();
    const read = listServers(c, cancel.signal).catch((e: unknown) => e);
    await seenHeaders;
    cancel.abort();
    const error = await read;
    server!.closeAllConnections();
    await c.close();
    await dispatcher.close();
    expect(error).toBeInstanceOf(RateLimitedError);
    expect(c.pausedUntil).toBeGreaterThan(0);
  });

  it("refuses the next write unsent after a write's 429 whose body is cut: the 429 says it was not acted on", async () => {
    const { url, requests } = await serve((res) => void cutReply(res, 429, 'reset'));
    const seen: RequestEvent[] = [];
    const c = oneAtATime(url, { onRequest: (e) => seen.push(e) });
    const first = await setFirewallState(c, { serverId: '1', ip: '203.0.113.7', state: '1' }).catch((e: unknown) => e);
    const next = await setFirewallState(c, { serverId: '1', ip: '203.0.113.7', state: '1' }).catch((e: unknown) => e);
    server!.closeAllConnections();
    await c.close();
    expect(first).toBeInstanceOf(RateLimitedError);
    expect((first as RateLimitedError).outcomeUnknown).toBe(false);
    expect(next).toBeInstanceOf(RateLimitedError);
    expect((next as RateLimitedError).outcomeUnknown).toBe(false);
    expect(requests()).toBe(1);
    expect(seen.map((e) => e.outcome)).toEqual(['rate_limited']);
  });

  it('does not retry a read whose 429 body is cut at once: one request reaches the server, then the pause', async () => {
    const { url, requests } = await serve((res) => void cutReply(res, 429, 'reset'));
    const c = oneAtATime(url, { retries: 3, retryMinDelayMs: 1 });
    const cancel = new AbortController();
    let done = false;
    const read = listServers(c, cancel.signal)
      .catch((e: unknown) => e)
      .finally(() => (done = true));
    // Wait until the read is in the pause (or, without one, has given up), then cancel it there.
    while (!done && c.pausedUntil === 0) await new Promise((r) => setTimeout(r, 5));
    cancel.abort();
    const error = await read;
    server!.closeAllConnections();
    await c.close();
    expect(error).toBeInstanceOf(UpstreamCancelledError);
    expect(c.pausedUntil).toBeGreaterThan(0);
    expect(requests()).toBe(1);
  });

  it("takes a read's budget token only once it has a slot, and never sends a read cancelled in the queue", async () => {
    let release: (() => void) | undefined;
    const { url, requests } = await serve((res) => {
      release = () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('[]');
      };
    });
    // One token a second, burst 1: the first read spends it; a read that took a token before its slot
    // would be waiting in the budget's queue for the next one.
    const dispatcher = new Agent();
    const c = client({ baseUrl: url, dispatcher, concurrency: 1, retries: 0, maxRequestsPerSecond: 1 });
    const first = listServers(c);
    const cancel = new AbortController();
    const queued = Promise.allSettled(
      [1, 2, 3].map(() =>
        c.json({ operation: 'list_servers', path: '/api/v1/dedicated', body: {}, read: true, signal: cancel.signal }),
      ),
    );
    while (requests() === 0) await new Promise((r) => setTimeout(r, 5));
    expect(c.pendingCount).toBe(3);
    expect(c.budget!.waiting).toEqual({ write: 0, read: 0, background: 0 });
    cancel.abort();
    release!();
    await expect(first).resolves.toMatchObject({ servers: [] });
    const outcomes = await queued;
    expect(outcomes.map((o) => o.status === 'rejected' && o.reason instanceof UpstreamCancelledError)).toEqual([
      true,
      true,
      true,
    ]);
    expect(requests()).toBe(1);
    expect(c.pendingCount).toBe(0);
    await dispatcher.close();
  });

  it('gives a freed slot to a waiting read before a waiting background read, and says which were sent', async () => {
    const paths: string[] = [];
    let release: (() => void) | undefined;
    const { url } = await serve((res, n) => {
      const answer = () => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('[]');
      };
      if (n === 1) release = answer;
      else answer();
    });
    server!.prependListener('request', (req) => paths.push(req.url ?? ''));
    const dispatcher = new Agent();
    const c = client({ baseUrl: url, dispatcher, concurrency: 1, retries: 0, maxRequestsPerSecond: 1000 });
    const sent: string[] = [];
    const read = (path: string, extra: { background?: boolean; signal?: AbortSignal } = {}) =>
      c.json({ operation: 'op', path, body: {}, read: true, onSent: () => sent.push(path), ...extra });
    const first = read('/first');
    while (paths.length === 0) await new Promise((r) => setTimeout(r, 5));
    // Queued behind the first: two pictures, then attack detection, then one cancelled while queued.
    const cancel = new AbortController();
    const queued = Promise.allSettled([
      read('/graph-1', { background: true }),
      read('/graph-2', { background: true }),
      read('/firewall'),
      read('/cancelled', { signal: cancel.signal }),
    ]);
    expect(c.pendingCount).toBe(4);
    cancel.abort();
    release!();
    await first;
    const outcomes = (await queued).map((o) => o.status);
    expect(outcomes).toEqual(['fulfilled', 'fulfilled', 'fulfilled', 'rejected']);
    expect(paths).toEqual(['/first', '/firewall', '/graph-1', '/graph-2']);
    expect(sent).toEqual(['/first', '/firewall', '/graph-1', '/graph-2']);
    await dispatcher.close();
  });

  it('lets background reads hold at most half the slots: a read finds one while slow pictures are in flight', async () => {
    const paths: string[] = [];
    const held: Array<() => void> = [];
    const { url } = await serve((res) => {
      held.push(() => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end('[]');
      });
    });
    server!.prependListener('request', (req) => paths.push(req.url ?? ''));
    const dispatcher = new Agent();
    const c = client({ baseUrl: url, dispatcher, concurrency: 4, retries: 0 });
    const read = (path: string, background: boolean) =>
      c.json({ operation: 'op', path, body: {}, read: true, background });
    const pictures = Promise.all([1, 2, 3, 4].map((n) => read(`/graph-${n}`, true)));
    while (paths.length < 2) await new Promise((r) => setTimeout(r, 5));
    const firewall = read('/firewall', false);
    while (paths.length < 3) await new Promise((r) => setTimeout(r, 5));
    expect(paths).toEqual(['/graph-1', '/graph-2', '/firewall']);
    expect(c.pendingCount).toBe(2);
    while (held.length > 0 || paths.length < 5) {
      held.shift()?.();
      await new Promise((r) => setTimeout(r, 5));
    }
    await Promise.all([pictures, firewall]);
    expect(paths.slice(3).sort()).toEqual(['/graph-3', '/graph-4']);
    await dispatcher.close();
  });
});
