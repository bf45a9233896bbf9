import { Counter, Gauge, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { changeVersion, trackChanges } from '../../../src/metrics/changes.js';
import { ExpositionCache } from '../../../src/metrics/exposition-cache.js';
import { freshMetrics } from '../../helpers/metrics.js';

/** A tracked gauge and counter on a fresh registry, with a cache rendering it. */
function setup() {
  const registry = new Registry();
  const gauge = trackChanges(new Gauge({ name: 'g', help: 'g', labelNames: ['a'], registers: [registry] }));
  const counter = trackChanges(new Counter({ name: 'c_total', help: 'c', labelNames: ['a'], registers: [registry] }));
  gauge.set({ a: 'x' }, 1);
  counter.inc({ a: 'x' });
  return { registry, gauge, counter, cache: new ExpositionCache({ registry }) };
}

describe('change tracking: a rendering reuses the bytes of a metric only while it is unchanged', () => {
  // Every way prom-client offers to change a gauge's or a counter's series.
  it.each([
    { name: 'gauge set', change: ({ gauge }: ReturnType<typeof setup>) => gauge.set({ a: 'x' }, 2) },
    { name: 'gauge inc', change: ({ gauge }: ReturnType<typeof setup>) => gauge.inc({ a: 'x' }) },
    { name: 'gauge dec', change: ({ gauge }: ReturnType<typeof setup>) => gauge.dec({ a: 'x' }) },
    { name: 'gauge remove', change: ({ gauge }: ReturnType<typeof setup>) => gauge.remove({ a: 'x' }) },
    { name: 'gauge reset', change: ({ gauge }: ReturnType<typeof setup>) => gauge.reset() },
    { name: 'gauge labels().set', change: ({ gauge }: ReturnType<typeof setup>) => gauge.labels({ a: 'y' }).set(5) },
    { name: 'gauge labels().inc', change: ({ gauge }: ReturnType<typeof setup>) => gauge.labels('x').inc(3) },
    { name: 'gauge startTimer', change: ({ gauge }: ReturnType<typeof setup>) => gauge.startTimer({ a: 'z' })() },
    {
      name: 'gauge setToCurrentTime',
      change: ({ gauge }: ReturnType<typeof setup>) => gauge.setToCurrentTime({ a: 'x' }),
    },
    { name: 'counter inc', change: ({ counter }: ReturnType<typeof setup>) => counter.inc({ a: 'x' }, 4) },
    { name: 'counter labels().inc', change: ({ counter }: ReturnType<typeof setup>) => counter.labels('y').inc() },
    { name: 'counter remove', change: ({ counter }: ReturnType<typeof setup>) => counter.remove('x') },
    { name: 'counter reset', change: ({ counter }: ReturnType<typeof setup>) => counter.reset() },
    { name: 'registry resetMetrics', change: ({ registry }: ReturnType<typeof setup>) => registry.resetMetrics() },
  ])('$name shows in the next rendering', async ({ change }) => {
    const s = setup();
    const before = await s.cache.render();
    expect(before.bytes('text').toString()).toBe(await s.registry.metrics());
    change(s);
    const after = await s.cache.render();
    expect(after.bytes('text').toString()).toBe(await s.registry.metrics());
    expect(after.bytes('text').toString()).not.toBe(before.bytes('text').toString());
  });

  it('counts the changes made through an account view (forAccount) of the daemon metrics', async () => {
    const { registry, metrics } = freshMetrics();
    const cache = new ExpositionCache({ registry });
    await cache.render();
    const registered = registry.getSingleMetric('baremetal_server_ips')!;
    const before = changeVersion(registered);
    metrics.serverIps.set({ server_id: '1' }, 2);
    expect(changeVersion(registered)).toBe((before ?? Number.NaN) + 1);
    expect((await cache.render()).bytes('text').toString()).toContain(
      'baremetal_server_ips{account="default",server_id="1"} 2\n',
    );
    // A series held through the view (SeriesFamily.hold) and set in place (update) counts too.
    const held = metrics.firewallHistoryLastSuccess.hold({ service_type: 'dedicated', service_id: '7' }, 1);
    await cache.render();
    expect(metrics.firewallHistoryLastSuccess.update(held, 2)).toBe(true);
    expect((await cache.render()).bytes('text').toString()).toContain(
      'baremetal_firewall_history_last_success_timestamp_seconds{account="default",service_type="dedicated",service_id="7"} 2\n',
    );
    // A histogram is never reused (its labels().observe goes around the tracked methods).
    expect(changeVersion(registry.getSingleMetric('baremetal_api_request_duration_seconds')!)).toBeUndefined();
  });
});
