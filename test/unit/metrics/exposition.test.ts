import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../../src/metrics/definitions.js';
import { ExpositionCache } from '../../../src/metrics/exposition.js';

describe('exposition cache', () => {
  it('renders exactly the bytes prom-client renders, with the rendering time set', async () => {
    const registry = new Registry();
    const metrics = createMetrics(registry, { defaultMetrics: true, version: '9.9.9' });
    metrics.servers.set(3);
    metrics.attackEvents.set({ service_type: 'dedicated', service_id: '1', ip: '192.0.2.1' }, 4);
    metrics.apiRequestDuration.observe({ operation: 'list_servers' }, 0.2);
    const cache = new ExpositionCache({
      registry,
      now: () => 1_700_000_000_000,
      beforeRender: (ms) => metrics.renderedAt.set(ms / 1000),
    });
    const exposition = await cache.render();
    // Process metrics move between two renderings; compare without them.
    const ours = exposition.body
      .toString()
      .split('\n\n')
      .filter((b) => !/process_|nodejs_/.test(b));
    const theirs = (await registry.metrics()).split('\n\n').filter((b) => !/process_|nodejs_/.test(b));
    expect(ours).toEqual(theirs);
    expect(exposition.body.toString()).toContain('\nbaremetal_metrics_rendered_timestamp_seconds 1700000000\n');
    expect(exposition.body.toString().endsWith('\n')).toBe(true);
    expect(exposition.renderedAt).toBe(1_700_000_000_000);
  });

  it('serves the last rendering until the next one, and renders once at first use', async () => {
    const registry = new Registry();
    const metrics = createMetrics(registry);
    const cache = new ExpositionCache({ registry });
    metrics.servers.set(1);
    expect((await cache.get()).body.toString()).toContain('\nbaremetal_servers 1\n');
    metrics.servers.set(2);
    expect((await cache.get()).body.toString()).toContain('\nbaremetal_servers 1\n');
    await cache.render();
    expect((await cache.get()).body.toString()).toContain('\nbaremetal_servers 2\n');
  });
});
