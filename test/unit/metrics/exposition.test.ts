import { gunzipSync } from 'node:zlib';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createMetrics, createdNames, leaderOnlyNames } from '../../../src/metrics/definitions.js';
import { ExpositionCache } from '../../../src/metrics/exposition-cache.js';
import { bindStateFamilies } from '../../../src/collectors/families.js';
import { collectFirewallHistory } from '../../../src/collectors/firewall.js';
import { stateAccount } from '../../helpers/metrics.js';

const DEDICATED = { serviceType: 'dedicated' as const, serviceId: '1' };
const LIMITS = { maxIpsPerService: 1024, ipRetentionMs: 24 * 3600_000 };

/** Label values prom-client must escape or write as they are. */
const AWKWARD = ['plain', 'quote " in it', 'back\\slash', 'new\nline', '', 'ünïcode ✓', 'all \\ " \n three'];

/** Builds the same metrics with the same values on `registry`: one for us, one for each prom-client reference. */
function populate(registry: Registry, series: number): void {
  const registers = [registry];
  const gauge = new Gauge({ name: 'g', help: 'help with \\ and\nnewline', labelNames: ['a', 'b'], registers });
  const counter = new Counter({ name: 'c_total', help: 'c', labelNames: ['a'], registers });
  const bare = new Counter({ name: 'bare', help: 'a counter not named _total', registers });
  const histogram = new Histogram({ name: 'h', help: 'h', labelNames: ['a'], buckets: [0.1, 1], registers });
  new Gauge({ name: 'empty', help: 'no series', labelNames: ['a'], registers });
  for (let i = 0; i < series; i++) gauge.set({ a: AWKWARD[i % AWKWARD.length]!, b: String(i) }, i / 7);
  for (const [i, value] of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, -0.5, 1e21].entries())
    gauge.set({ a: 'special', b: String(i) }, value);
  for (const a of AWKWARD) counter.inc({ a }, 2);
  bare.inc(3);
  for (const a of AWKWARD.slice(0, 3)) histogram.observe({ a }, 0.5);
}

describe('exposition cache', () => {
  it('renders exactly the bytes prom-client renders, with the rendering time set', async () => {
    const registry = new Registry();
    const metrics = createMetrics(registry, { defaultMetrics: true, version: '9.9.9' });
    metrics.servers.set({ account: 'default' }, 3);
    const account = stateAccount('default', ['1']);
    bindStateFamilies(metrics, () => [account]);
    const events = ['a', 'b', 'c', 'd'].map((id) => ({ id, ip: '192.0.2.1', raw: '', fields: {} }));
    collectFirewallHistory(account.state.firewallState, { account: 'default', metrics }, DEDICATED, events, {
      limits: LIMITS,
      now: 0,
    });
    metrics.apiRequestDuration.observe({ account: 'default', operation: 'list_servers' }, 0.2);
    const cache = new ExpositionCache({
      registry,
      now: () => 1_700_000_000_000,
      beforeRender: (ms) => metrics.renderedAt.set(ms / 1000),
    });
    const exposition = await cache.render();
    // Process metrics move between two renderings; compare without them.
    const ours = exposition
      .bytes('text')
      .toString()
      .split('\n\n')
      .filter((b) => !/process_|nodejs_/.test(b));
    const theirs = (await registry.metrics()).split('\n\n').filter((b) => !/process_|nodejs_/.test(b));
    expect(ours).toEqual(theirs);
    expect(exposition.bytes('text').toString()).toContain(
      '\nbaremetal_metrics_rendered_timestamp_seconds 1700000000\n',
    );
    expect(exposition.bytes('text').toString().endsWith('\n')).toBe(true);
    expect(exposition.renderedAt).toBe(1_700_000_000_000);
  });

  // 3,000 series: more than one slice of samples between two looks at the clock.
  it.each([
    { name: 'a few series', series: 7 },
    { name: 'many series', series: 3000 },
  ])('renders both formats as prom-client does, twice in a row: $name', async ({ series }) => {
    const ours = new Registry();
    populate(ours, series);
    const text = new Registry();
    populate(text, series);
    const om = new Registry<typeof Registry.OPENMETRICS_CONTENT_TYPE>();
    om.setContentType(Registry.OPENMETRICS_CONTENT_TYPE);
    populate(om as unknown as Registry, series);
    const cache = new ExpositionCache({ registry: ours });
    for (let rendering = 0; rendering < 2; rendering++) {
      const exposition = await cache.render();
      expect(exposition.bytes('text').toString()).toBe(await text.metrics());
      expect(exposition.bytes('openmetrics').toString()).toBe(await om.metrics());
    }
  });

  it('serves the last rendering until the next one, and renders once at first use', async () => {
    const registry = new Registry();
    const metrics = createMetrics(registry);
    const cache = new ExpositionCache({ registry });
    metrics.servers.set({ account: 'default' }, 1);
    expect((await cache.get()).bytes('text').toString()).toContain('\nbaremetal_servers{account="default"} 1\n');
    metrics.servers.set({ account: 'default' }, 2);
    expect((await cache.get()).bytes('text').toString()).toContain('\nbaremetal_servers{account="default"} 1\n');
    await cache.render();
    expect((await cache.get()).bytes('text').toString()).toContain('\nbaremetal_servers{account="default"} 2\n');
  });

  it('serves a gzip scrape the newest rendering already compressed, never waiting for a new one', async () => {
    const registry = new Registry();
    const metrics = createMetrics(registry);
    const cache = new ExpositionCache({ registry });
    const zipped = async (format: 'text' | 'openmetrics') => gunzipSync(await cache.gzipped(format)).toString();
    metrics.servers.set({ account: 'default' }, 1);
    // The first gzip scrape of a format has nothing compressed to get: it waits for the compression.
    expect(await zipped('text')).toContain('\nbaremetal_servers{account="default"} 1\n');
    metrics.servers.set({ account: 'default' }, 2);
    const second = await cache.render();
    // The new rendering's compression started with it and needs a libuv round trip: the scrape gets the one before.
    expect(await zipped('text')).toContain('\nbaremetal_servers{account="default"} 1\n');
    expect(second.bytes('text').toString()).toContain('\nbaremetal_servers{account="default"} 2\n');
    await second.gzipped('text');
    expect(await zipped('text')).toContain('\nbaremetal_servers{account="default"} 2\n');
    expect(await cache.gzipped('text')).toBe(await second.gzipped('text'));
    // A format no gzip scrape asked for before waits for the newest rendering.
    expect(await zipped('openmetrics')).toContain('\nbaremetal_servers{account="default"} 2\n');
  });

  it('leaves out what `include` refuses, asked again at each rendering (a follower that becomes leader)', async () => {
    const registry = new Registry();
    const metrics = createMetrics(registry);
    const leaderOnly = leaderOnlyNames(metrics);
    let leading = false;
    const cache = new ExpositionCache({ registry, include: (name) => leading || !leaderOnly.has(name) });
    metrics.apiUp.set({ account: 'default' }, 0);
    metrics.leader.set(0);
    const names = async () => {
      const rendering = await cache.render();
      const of = (text: string) =>
        ['baremetal_api_up', 'baremetal_leader'].filter((n) => new RegExp(`^# TYPE ${n} `, 'm').test(text));
      return [of(rendering.bytes('text').toString()), of(rendering.bytes('openmetrics').toString())];
    };
    expect(await names()).toEqual([['baremetal_leader'], ['baremetal_leader']]);
    leading = true;
    expect(await names()).toEqual([
      ['baremetal_api_up', 'baremetal_leader'],
      ['baremetal_api_up', 'baremetal_leader'],
    ]);
    expect(leaderOnly.has('baremetal_servers')).toBe(true);
    expect(leaderOnly.has('baremetal_action_requests_total')).toBe(false);
  });

  it('follows each event counter sample with its _created time in OpenMetrics only, kept until the series goes', async () => {
    const registry = new Registry();
    const metrics = createMetrics(registry);
    const start = 1_700_000_000_000;
    let now = start;
    const cache = new ExpositionCache({ registry, now: () => now, created: createdNames(metrics) });
    const account = stateAccount('x', ['1']);
    bindStateFamilies(metrics, () => [account]);
    const ev = (id: string, ip: string) => ({ id, ip, raw: '', fields: {} });
    // Each history read at `now`, the collector's clock: a series created then has its _created then.
    const read = (...events: ReturnType<typeof ev>[]) =>
      collectFirewallHistory(account.state.firewallState, { account: 'x', metrics }, DEDICATED, events, {
        limits: LIMITS,
        now,
      });
    const a = { account: 'x', service_type: 'dedicated', service_id: '1', ip: '198.51.100.1' };
    const b = { ...a, ip: '198.51.100.2' };
    read(ev('e1', a.ip));
    metrics.apiRequests.inc({ account: 'x', operation: 'graphs', outcome: 'success' });
    await cache.render();
    now += 5000;
    read(ev('e1', a.ip), ev('e2', a.ip), ev('e3', a.ip), ev('e4', b.ip));
    const lines = (text: string) => text.split('\n').filter((line) => /attack_events_(total|created)/.test(line));
    const labels = (l: Record<string, string>) =>
      `{account="${l.account}",service_type="${l.service_type}",service_id="${l.service_id}",ip="${l.ip}"}`;
    const rendered = await cache.render();
    expect(lines(rendered.bytes('openmetrics').toString()).filter((line) => !line.startsWith('#'))).toEqual([
      `baremetal_firewall_attack_events_total${labels(a)} 3`,
      `baremetal_firewall_attack_events_created${labels(a)} 1700000000`,
      `baremetal_firewall_attack_events_total${labels(b)} 0`,
      `baremetal_firewall_attack_events_created${labels(b)} 1700000005`,
    ]);
    expect(rendered.bytes('text').toString()).not.toContain('_created');
    expect(rendered.bytes('openmetrics').toString()).not.toContain('baremetal_api_requests_created');
    // A series gone (its IP left the history) and created again starts again.
    now += 5000;
    read(ev('e4', b.ip));
    expect((await cache.render()).bytes('openmetrics').toString()).not.toContain(labels(a));
    now += 5000;
    read(ev('e4', b.ip), ev('e5', a.ip));
    expect((await cache.render()).bytes('openmetrics').toString()).toContain(
      `baremetal_firewall_attack_events_created${labels(a)} 1700000015\n`,
    );
  });
});
