import { Counter, Gauge, Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { trackChanges } from '../../../src/metrics/changes.js';
import { ExpositionCache } from '../../../src/metrics/exposition-cache.js';
import { SeriesFamily } from '../../../src/metrics/series.js';

/** Label values prom-client must escape or write as they are. */
const AWKWARD = ['plain', 'quote " in it', 'back\\slash', 'new\nline', '', 'ünïcode ✓', 'all \\ " \n three'];

/** The same calls on a gauge and a counter, whatever their class: sets, increments, removals, re-creations. */
type L = { a: string; b: string };
/** What `drive` calls: the labelled forms only, which prom-client's Gauge and Counter and SeriesFamily share. */
interface Settable {
  set(labels: L, value: number): void;
  remove(labels: L): void;
}
interface Incrementable {
  inc(labels: L, by: number): void;
  remove(labels: L): void;
}
function drive(gauge: Settable, counter: Incrementable, n: number) {
  for (let i = 0; i < n; i++) {
    const labels = { a: AWKWARD[i % AWKWARD.length]!, b: String(i) };
    gauge.set(labels, i / 7);
    counter.inc(labels, 0);
    if (i % 3 === 0) counter.inc(labels, i);
  }
  for (const [i, value] of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY, -0.5, 1e21].entries())
    gauge.set({ a: 'special', b: String(i) }, value);
  // Removed, then back: it goes to the end, as in prom-client.
  gauge.remove({ a: AWKWARD[1]!, b: '1' });
  gauge.set({ a: AWKWARD[1]!, b: '1' }, 42);
  counter.remove({ a: AWKWARD[2]!, b: '2' });
  // The same series named in the other label order.
  gauge.set({ b: '0', a: AWKWARD[0]! }, 5);
}

function ours(registry: Registry) {
  const registers = [registry];
  return {
    gauge: new SeriesFamily({
      type: 'gauge',
      name: 'g',
      help: 'help with \\ and\nnewline',
      labelNames: ['a', 'b'],
      registers,
    }),
    counter: new SeriesFamily({ type: 'counter', name: 'c_total', help: 'c', labelNames: ['a', 'b'], registers }),
  };
}
function theirs(registry: Registry) {
  const registers = [registry];
  return {
    gauge: new Gauge({ name: 'g', help: 'help with \\ and\nnewline', labelNames: ['a', 'b'] as const, registers }),
    counter: new Counter({ name: 'c_total', help: 'c', labelNames: ['a', 'b'] as const, registers }),
  };
}

describe('series family', () => {
  it.each([
    { name: 'a few series', n: 7 },
    { name: 'many series', n: 3000 },
  ])('renders both formats byte for byte as prom-client renders its Gauge and Counter: $name', async ({ n }) => {
    const registry = new Registry();
    const family = ours(registry);
    drive(family.gauge, family.counter, n);
    const text = new Registry();
    const reference = theirs(text);
    drive(reference.gauge, reference.counter, n);
    const om = new Registry<typeof Registry.OPENMETRICS_CONTENT_TYPE>();
    om.setContentType(Registry.OPENMETRICS_CONTENT_TYPE);
    const omReference = theirs(om as unknown as Registry);
    drive(omReference.gauge, omReference.counter, n);
    const cache = new ExpositionCache({ registry });
    const exposition = await cache.render();
    expect(exposition.bytes('text').toString()).toBe(await text.metrics());
    expect(exposition.bytes('openmetrics').toString()).toBe(await om.metrics());
    // get() reads the labels back from the texts: prom-client's own renderer writes the same bytes.
    expect(await registry.metrics()).toBe(await text.metrics());
    expect((await family.gauge.get()).values).toEqual((await reference.gauge.get()).values);
  });

  it('refuses what prom-client refuses and changes nothing', () => {
    const { gauge, counter } = ours(new Registry());
    gauge.set({ a: 'x' }, 1);
    expect(() => gauge.set({ a: 'x', c: 'y' } as never, 2)).toThrow(/"c" is not included/);
    expect(() => gauge.set({ a: 'x' }, '3' as never)).toThrow(/not a valid number/);
    expect(() => counter.inc({ a: 'x' }, -1)).toThrow(/decrease/);
    expect(() => counter.set({ a: 'x' }, 1)).toThrow(/counter/);
    expect([...gauge.series()]).toEqual([{ text: '{a="x"}', value: 1 }]);
    expect([...counter.series()]).toEqual([]);
  });

  it('sets a held series in place until it is removed, then holds it again (hold, update)', async () => {
    const registry = new Registry();
    const { gauge } = ours(registry);
    const cache = new ExpositionCache({ registry });
    trackChanges(gauge);
    const held = gauge.hold({ a: 'x', b: '1' }, 1);
    gauge.set({ a: 'y', b: '2' }, 2);
    expect(gauge.update(held, 3)).toBe(true);
    expect((await cache.render()).bytes('text').toString()).toContain('g{a="x",b="1"} 3\ng{a="y",b="2"} 2\n');
    expect(gauge.update(held, 4)).toBe(true);
    expect((await cache.render()).bytes('text').toString()).toContain('g{a="x",b="1"} 4\n');
    gauge.remove({ a: 'x', b: '1' });
    expect(gauge.update(held, 5)).toBe(false);
    const again = gauge.hold({ a: 'x', b: '1' }, 6);
    gauge.reset();
    expect(gauge.update(again, 7)).toBe(false);
    expect([...gauge.series()]).toEqual([]);
  });

  it('writes the same exposition when two families share their label texts (shareTextsWith)', async () => {
    const expositions = [];
    for (const share of [false, true]) {
      const registry = new Registry();
      const { gauge, counter } = ours(registry);
      if (share) counter.shareTextsWith(gauge);
      drive(gauge, counter, 40);
      // A series the twin lacks, and one named in the other label order.
      counter.inc({ a: 'only here', b: '1' }, 2);
      counter.inc({ b: '99', a: 'reordered' }, 1);
      gauge.set({ a: 'reordered', b: '99' }, 3);
      expositions.push(await registry.metrics());
    }
    expect(expositions[1]).toBe(expositions[0]);
  });
});
