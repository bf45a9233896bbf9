import { gunzipSync } from 'node:zlib';
import Fastify from 'fastify';
import { Counter, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { acceptsGzip, metricsRoutes, negotiateFormat } from '../../../src/http/routes/metrics.js';
import { ExpositionCache } from '../../../src/metrics/exposition-cache.js';

const PROMETHEUS_ACCEPT =
  'application/openmetrics-text;version=1.0.0,application/openmetrics-text;version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1';

describe('negotiateFormat', () => {
  it.each([
    { name: 'no Accept', accept: undefined, format: 'text' },
    { name: 'curl', accept: '*/*', format: 'text' },
    { name: "Prometheus 2.x's header", accept: PROMETHEUS_ACCEPT, format: 'openmetrics' },
    { name: 'OpenMetrics 1.0.0 alone', accept: 'application/openmetrics-text; version=1.0.0', format: 'openmetrics' },
    {
      name: 'only OpenMetrics 0.0.1 (not served)',
      accept: 'application/openmetrics-text; version=0.0.1',
      format: 'text',
    },
    {
      name: 'text preferred over OpenMetrics',
      accept: 'text/plain;q=1, application/openmetrics-text;q=0.5',
      format: 'text',
    },
    { name: 'OpenMetrics refused with q=0', accept: 'application/openmetrics-text;q=0', format: 'text' },
  ] as const)('$name → $format', ({ accept, format }) => expect(negotiateFormat(accept)).toBe(format));
});

describe('acceptsGzip', () => {
  it.each([
    { name: 'absent', header: undefined, gzip: false },
    { name: 'gzip', header: 'gzip', gzip: true },
    { name: "Go's default", header: 'gzip', gzip: true },
    { name: 'identity only', header: 'identity', gzip: false },
    { name: 'gzip;q=0', header: 'gzip;q=0, *', gzip: false },
    { name: 'any coding', header: 'br, *;q=0.1', gzip: true },
  ] as const)('$name → $gzip', ({ header, gzip }) => expect(acceptsGzip(header)).toBe(gzip));
});

describe('GET /metrics', () => {
  const setup = async () => {
    const registry = new Registry();
    new Counter({ name: 'demo_requests_total', help: 'Requests.', labelNames: ['code'], registers: [registry] }).inc(
      { code: '200' },
      3,
    );
    const exposition = new ExpositionCache({ registry });
    const app = Fastify();
    metricsRoutes(app, { exposition });
    await exposition.render();
    return { app, exposition };
  };

  it.each([
    {
      name: 'text, plain',
      headers: {},
      type: 'text/plain; version=0.0.4; charset=utf-8',
      gzip: false,
      family: '# TYPE demo_requests_total counter',
    },
    {
      name: 'text, gzip',
      headers: { 'accept-encoding': 'gzip' },
      type: 'text/plain; version=0.0.4; charset=utf-8',
      gzip: true,
      family: '# TYPE demo_requests_total counter',
    },
    {
      name: 'OpenMetrics, plain',
      headers: { accept: PROMETHEUS_ACCEPT },
      type: 'application/openmetrics-text; version=1.0.0; charset=utf-8',
      gzip: false,
      family: '# TYPE demo_requests counter',
    },
    {
      name: 'OpenMetrics, gzip',
      headers: { accept: PROMETHEUS_ACCEPT, 'accept-encoding': 'gzip, deflate' },
      type: 'application/openmetrics-text; version=1.0.0; charset=utf-8',
      gzip: true,
      family: '# TYPE demo_requests counter',
    },
  ])('$name', async ({ headers, type, gzip, family }) => {
    const { app } = await setup();
    const res = await app.inject({ url: '/metrics', headers });
    expect(res.headers['content-type']).toBe(type);
    expect(res.headers['content-encoding']).toBe(gzip ? 'gzip' : undefined);
    expect(res.headers.vary).toBe('Accept, Accept-Encoding');
    const body = gzip ? gunzipSync(res.rawPayload).toString('utf8') : res.body;
    expect(body).toContain(`${family}\ndemo_requests_total{code="200"} 3\n`);
    await app.close();
  });

  it('compresses once per rendering', async () => {
    const { exposition } = await setup();
    const first = await exposition.get();
    expect(await first.gzipped('text')).toBe(await first.gzipped('text'));
    const next = await exposition.render();
    expect(await next.gzipped('text')).not.toBe(await first.gzipped('text'));
  });
});
