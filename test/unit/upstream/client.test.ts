import { createServer, type Server } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { MockAgent } from 'undici';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  ApiError,
  HttpStatusError,
  InsecureUrlError,
  InvalidReplyError,
  UpstreamConnectionError,
  UpstreamTimeoutError,
  UpstreamTlsError,
} from '../../../src/errors.js';
import { UpstreamClient, checkBaseUrl, type RequestEvent } from '../../../src/upstream/client.js';
import { listServers, powerCycle } from '../../../src/upstream/dedicated.js';
import { getDedicatedFirewallHistory, setFirewallState } from '../../../src/upstream/firewall.js';
import { makeTestPki } from '../../helpers/certs.js';

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
    expect(events).toEqual([{ operation: 'firewall_history_dedicated', outcome: 'success', durationSeconds: expect.any(Number) }]);
  });

  it('omits optional parameters that are not given', async () => {
    let body = '';
    agent.get(BASE).intercept({ path: '/api/v1/dedicated/firewall', method: 'POST' }).reply(200, (opts) => {
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
      body: JSON.stringify({ error: true, message: 'The IP firewall state was already updated in the last 2 minutes.' }),
      type: ApiError,
      message: 'firewall_state [POST] "/api/v1/dedicated/firewall/state": 200 API error: The IP firewall state was already updated in the last 2 minutes.',
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
      message: 'firewall_state [POST] "/api/v1/dedicated/firewall/state": 200 invalid reply: not JSON (body starts: "OK")',
    },
    {
      name: 'a 404 with JSON but no error flag is an HTTP status error',
      status: 404,
      body: JSON.stringify({ detail: 'nope' }),
      type: HttpStatusError,
      message: 'firewall_state [POST] "/api/v1/dedicated/firewall/state": 404 unexpected HTTP status: {"detail":"nope"}',
    },
  ])('$name', async ({ status, body, type, message }) => {
    agent.get(BASE).intercept({ path: '/api/v1/dedicated/firewall/state', method: 'POST' }).reply(status, body);
    const error = await setFirewallState(client(), { serverId: '1', ip: '203.0.113.7', state: '1' }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(type);
    expect((error as Error).message).toBe(message);
    expect((error as ApiError).status).toBe(status);
    expect((error as ApiError).operation).toBe('firewall_state');
  });

  it('never puts the key in an error, even when the upstream echoes it', async () => {
    agent.get(BASE).intercept({ path: '/api/v1/dedicated', method: 'POST' }).reply(401, { error: true, message: `bad key ${KEY}` });
    const error = (await listServers(client({ retries: 0 })).catch((e: unknown) => e)) as Error;
    expect(error).toBeInstanceOf(ApiError);
    expect(error.message).not.toContain(KEY);
    expect(JSON.stringify(error)).not.toContain(KEY);
    expect(error.message).toContain('[REDACTED]');
  });

  it('maps a refused connection to UpstreamConnectionError', async () => {
    agent.get(BASE).intercept({ path: '/api/v1/dedicated', method: 'POST' }).replyWithError(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' })).times(3);
    const error = await listServers(client()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UpstreamConnectionError);
    expect((error as Error).message).toContain('ECONNREFUSED');
  });
});

describe('retries', () => {
  it('retries a read after a transient failure, then succeeds', async () => {
    const pool = agent.get(BASE);
    pool.intercept({ path: '/api/v1/dedicated', method: 'POST' }).reply(502, '<html>502 Bad Gateway</html>');
    pool.intercept({ path: '/api/v1/dedicated', method: 'POST' }).reply(500, { error: true, message: 'An unexpected error occurred.' });
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
    agent.get(BASE).intercept({ path: '/api/v1/dedicated', method: 'POST' }).reply(200, { error: true, message: 'Server not found.' });
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
    const c = new UpstreamClient({ baseUrl: `http://127.0.0.1:${port}`, apiKey: KEY, timeoutMs: 300, concurrency: 1, retries: 0 });
    const error = await listServers(c).catch((e: unknown) => e);
    server.closeAllConnections();
    await c.close();
    expect(error).toBeInstanceOf(UpstreamTimeoutError);
    expect((error as Error).message).toMatch(/^list_servers \[POST\] "\/api\/v1\/dedicated": timed out \(UND_ERR_HEADERS_TIMEOUT/);
  });

  it('rejects a certificate from an unknown CA, and accepts it with the CA file', async () => {
    const pki = makeTestPki();
    server = createTlsServer({ key: pki.key, cert: pki.cert }, (_req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify([{ server_id: '7' }]));
    });
    server.listen(0, '127.0.0.1');
    await new Promise((r) => server!.once('listening', r));
    const { port } = server.address() as AddressInfo;
    const options = { baseUrl: `https://127.0.0.1:${port}`, apiKey: KEY, timeoutMs: 2000, concurrency: 1, retries: 0 };
    const untrusting = new UpstreamClient(options);
    const error = await listServers(untrusting).catch((e: unknown) => e);
    await untrusting.close();
    expect(error).toBeInstanceOf(UpstreamTlsError);
    expect((error as Error).message).toContain('TLS failure');
    const trusting = new UpstreamClient({ ...options, ca: pki.ca });
    expect((await listServers(trusting)).servers[0]?.serverId).toBe('7');
    await trusting.close();
  });
});
