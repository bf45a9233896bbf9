import sharp from 'sharp';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { buildApp } from '../../../src/http/app.js';
import { HttpStatusError, IdempotencyMismatchError, INTERNAL_ERROR_CODE, JournalError } from '../../../src/errors.js';
import { GraphStore } from '../../../src/graphs/store.js';
import { ExpositionCache } from '../../../src/metrics/exposition-cache.js';
import { pngOf } from '../../helpers/images.js';
import { captureLogger } from '../../helpers/logger.js';
import { freshMetrics } from '../../helpers/metrics.js';
import { tempDir } from '../../helpers/tmp.js';

let app: ReturnType<typeof buildApp>;
let store: GraphStore;
let exposition: ExpositionCache;
let metrics: ReturnType<typeof freshMetrics>['metrics'];

beforeEach(async () => {
  const fresh = freshMetrics();
  metrics = fresh.metrics;
  exposition = new ExpositionCache({ registry: fresh.registry });
  store = new GraphStore(tempDir(), 'default');
  await store.put(
    { serverId: '100001', type: 'port_bits', scale: 'day' },
    { png: await pngOf(400, 100), width: 400, height: 100 },
    Date.UTC(2026, 10, 21, 12),
  );
  app = buildApp({
    logger: captureLogger().logger,
    exposition,
    graphStores: new Map([['default', store]]),
    graphMaxWidth: 2000,
  });
});
afterEach(() => app.close());

describe('GET /metrics', () => {
  it('serves the last rendering, not the live registry', async () => {
    metrics.servers.set({ account: 'default' }, 3);
    await exposition.render();
    metrics.servers.set({ account: 'default' }, 99);
    const res = await app.inject('/metrics');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/plain; version=0\.0\.4/);
    expect(res.body).toContain('\nbaremetal_servers{account="default"} 3\n');
    await exposition.render();
    expect((await app.inject('/metrics')).body).toContain('\nbaremetal_servers{account="default"} 99\n');
  });
});

describe('--web.telemetry-path', () => {
  it('serves the exposition at the given path only, behind web.auth like /metrics', async () => {
    const moved = buildApp({
      logger: captureLogger().logger,
      exposition,
      graphStores: new Map([['default', store]]),
      graphMaxWidth: 2000,
      telemetryPath: '/prometheus/metrics',
      webAuth: { bearerTokens: ['metrics-token-0123456789'], basicAuthUsers: {} },
    });
    metrics.servers.set({ account: 'default' }, 7);
    await exposition.render();
    const authorization = 'Bearer metrics-token-0123456789';
    const res = await moved.inject({ url: '/prometheus/metrics', headers: { authorization } });
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain('\nbaremetal_servers{account="default"} 7\n');
    expect((await moved.inject('/prometheus/metrics')).statusCode).toBe(401);
    expect((await moved.inject({ url: '/metrics', headers: { authorization } })).statusCode).toBe(404);
    await moved.close();
  });
});

describe('GET /graphs', () => {
  it('lists the held images', async () => {
    const res = await app.inject('/graphs');
    expect(res.json()).toEqual({
      graphs: [
        {
          account: 'default',
          server_id: '100001',
          type: 'port_bits',
          scale: 'day',
          url: '/graphs/default/dedicated/100001/port_bits/day.png',
          width: 400,
          height: 100,
          bytes: expect.any(Number),
          updated_at: '2026-11-21T12:00:00.000Z',
        },
      ],
    });
  });

  it('serves a PNG with caching headers, and 304 on a matching If-None-Match', async () => {
    const res = await app.inject('/graphs/dedicated/100001/port_bits/day.png');
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('image/png');
    expect(res.headers['last-modified']).toBe('Sat, 21 Nov 2026 12:00:00 GMT');
    expect(res.headers['cache-control']).toBe('public, max-age=60');
    expect((await sharp(res.rawPayload).metadata()).width).toBe(400);
    const etag = String(res.headers.etag);
    const cached = await app.inject({
      url: '/graphs/dedicated/100001/port_bits/day.png',
      headers: { 'if-none-match': etag },
    });
    expect(cached.statusCode).toBe(304);
    expect(cached.body).toBe('');
  });

  it('resizes with ?width= and gives the resized image its own ETag', async () => {
    const res = await app.inject('/graphs/dedicated/100001/port_bits/day.png?width=100');
    expect(res.statusCode).toBe(200);
    expect(await sharp(res.rawPayload).metadata()).toMatchObject({ width: 100, height: 25 });
    expect(res.headers.etag).not.toBe(store.list()[0]!.etag);
  });

  it.each([
    {
      url: '/graphs/dedicated/100001/port_bytes/day.png',
      status: 404,
      message: 'unknown graph type "port_bytes": expected one of port_bits, port_percent, port_errors, port_upkts',
    },
    {
      url: '/graphs/dedicated/100001/port_bits/year.png',
      status: 404,
      message: 'unknown graph "year.png": expected <scale>.png with scale one of day, week, month',
    },
    {
      url: '/graphs/dedicated/100001/port_bits/day.jpg',
      status: 404,
      message: 'unknown graph "day.jpg": expected <scale>.png with scale one of day, week, month',
    },
    {
      url: '/graphs/dedicated/999/port_bits/day.png',
      status: 404,
      message: 'no port_bits day graph held for server "999"',
    },
    {
      url: '/graphs/dedicated/100001/port_errors/day.png',
      status: 404,
      message: 'no port_errors day graph held for server "100001"',
    },
    { url: '/nope', status: 404, message: 'no route GET /nope' },
  ])('$url → $status with a JSON error', async ({ url, status, message }) => {
    const res = await app.inject(url);
    expect(res.statusCode).toBe(status);
    expect(res.headers['content-type']).toMatch(/^application\/json/);
    expect(res.json()).toMatchObject({ statusCode: status, message });
  });
});

describe('?width=', () => {
  const url = (width: string) => `/graphs/dedicated/100001/port_bits/day.png?width=${width}`;
  it.each([
    { name: 'the smallest', width: '16', px: 16 },
    { name: 'the largest (never enlarging)', width: '2000', px: 400 },
  ])('accepts $name width, $width', async ({ width, px }) => {
    const res = await app.inject(url(width));
    expect(res.statusCode).toBe(200);
    expect((await sharp(res.rawPayload).metadata()).width).toBe(px);
  });

  it.each([
    { name: 'below 16', width: '15' },
    { name: 'above graphs.max_width', width: '2001' },
    { name: 'zero', width: '0' },
    { name: 'Infinity', width: 'Infinity' },
    { name: 'an exponent overflowing to Infinity', width: '1e400' },
    { name: 'an exponent inside the range', width: '1e2' },
    { name: 'NaN', width: 'NaN' },
    { name: 'minus zero', width: '-0' },
    { name: 'a negative number', width: '-100' },
    { name: 'a leading zero', width: '016' },
    { name: 'a fraction', width: '1.5' },
    { name: 'a fraction that is whole', width: '100.0' },
    { name: 'a plus sign', width: '%2B100' },
    { name: 'hexadecimal', width: '0x64' },
    { name: 'a word', width: 'wide' },
    { name: 'an empty value', width: '' },
    { name: 'surrounding space', width: '%20100' },
  ])('answers 400 with a plain sentence for $name ($width), logging no error', async ({ width }) => {
    const log = captureLogger();
    const strict = buildApp({
      logger: log.logger,
      exposition,
      graphStores: new Map([['default', store]]),
      graphMaxWidth: 2000,
    });
    const res = await strict.inject(url(width));
    await strict.close();
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      statusCode: 400,
      code: 'BM_ERR_BAD_REQUEST',
      error: 'Bad Request',
      message: `width must be a whole number from 16 to 2000 (got ${JSON.stringify(decodeURIComponent(width))})`,
    });
    expect(log.lines.filter((line) => ['error', 'fatal'].includes(JSON.parse(line).level))).toEqual([]);
  });

  it('answers 400 for a repeated width, and for an unknown query parameter', async () => {
    expect((await app.inject(`${url('100')}&width=200`)).json()).toMatchObject({
      statusCode: 400,
      message: 'querystring/width must be string',
    });
    expect((await app.inject(`${url('100')}&height=20`)).json()).toMatchObject({
      statusCode: 400,
      message: 'querystring must NOT have additional properties',
    });
  });
});

describe('GET /healthz and /readyz (and /-/healthy, /-/ready)', () => {
  it.each(['/healthz', '/-/healthy'])('answers %s while the process serves', async (path) => {
    expect((await app.inject(path)).json()).toEqual({ status: 'ok' });
  });

  it.each(['/readyz', '/-/ready'])('answers %s 503 with the reasons until ready, then 200', async (path) => {
    const reasons = ['the first firewall poll has not finished'];
    const probed = buildApp({
      logger: captureLogger().logger,
      exposition,
      graphStores: new Map([['default', store]]),
      graphMaxWidth: 2000,
      readiness: () => reasons,
    });
    const before = await probed.inject(path);
    expect(before.statusCode).toBe(503);
    expect(before.json()).toEqual({ status: 'not ready', reasons });
    reasons.length = 0;
    const after = await probed.inject(path);
    expect(after.statusCode).toBe(200);
    expect(after.json()).toEqual({ status: 'ready' });
    await probed.close();
  });
});

describe('web.auth', () => {
  it('guards /metrics and /graphs when configured, leaving the probes open', async () => {
    const guarded = buildApp({
      logger: captureLogger().logger,
      exposition,
      graphStores: new Map([['default', store]]),
      graphMaxWidth: 2000,
      webAuth: { bearerTokens: ['metrics-token-0123456789'], basicAuthUsers: {} },
    });
    expect((await guarded.inject('/metrics')).statusCode).toBe(401);
    expect((await guarded.inject('/graphs')).statusCode).toBe(401);
    expect(
      (await guarded.inject({ url: '/metrics', headers: { authorization: 'Bearer metrics-token-0123456789' } }))
        .statusCode,
    ).toBe(200);
    for (const probe of ['/healthz', '/readyz', '/-/healthy', '/-/ready'])
      expect((await guarded.inject(probe)).statusCode, probe).toBe(200);
    await guarded.close();
  });

  it('leaves /metrics open when no credentials are configured', async () => {
    expect((await app.inject('/metrics')).statusCode).toBe(200);
  });
});

describe('error replies', () => {
  it.each([
    {
      name: 'an upstream failure',
      error: new HttpStatusError({ operation: 'op', path: '/p', status: 500 }, ''),
      status: 502,
      text: 'Bad Gateway',
      code: 'BM_ERR_HTTP_STATUS',
    },
    {
      name: 'a journal failure',
      error: new JournalError('disk full'),
      status: 503,
      text: 'Service Unavailable',
      code: 'BM_ERR_JOURNAL',
    },
    {
      name: 'a reused idempotency key',
      error: new IdempotencyMismatchError('reused'),
      status: 422,
      text: 'Unprocessable Entity',
      code: 'BM_ERR_IDEMPOTENCY_MISMATCH',
    },
    {
      name: 'a bug',
      error: new TypeError('x is undefined'),
      status: 500,
      text: 'Internal Server Error',
      code: INTERNAL_ERROR_CODE,
    },
  ])('answer $name with the standard reason phrase of $status', async ({ error, status, text, code }) => {
    app.get('/fails', async () => {
      throw error;
    });
    const res = await app.inject('/fails');
    expect(res.statusCode).toBe(status);
    expect(res.json()).toMatchObject({ statusCode: status, error: text, code });
  });
});
