/**
 * One series of a prom-client Counter or Histogram, updated in place per event. prom-client's own path
 * (`labels().inc()`, `labels().observe(v)`) validates the label object and builds its hash string on every
 * call, and a histogram's also wraps the value in an object: at 10,000 servers that is 20,000 times a
 * cycle for the same few series (`baremetal_api_*`, one per operation and outcome). A held series goes
 * through prom-client once, when the series is first touched; from then on it adds to the series state
 * prom-client keeps (its `hashMap` entry, the same object for the series' life), so the exposition is
 * prom-client's own, byte for byte.
 *
 * That state is prom-client 15's internals (lib/counter.js `setValue`, lib/histogram.js `createBaseValues`):
 * each update checks the entry is still the one prom-client holds under the series' key and has the shape
 * it expects; otherwise (a `reset`, a `remove`, another prom-client) it takes prom-client's public path again.
 */
import type { Counter, Histogram } from 'prom-client';
import { markChanged } from './changes.js';

type Labels = Record<string, string>;
interface CounterEntry {
  value: number;
}
interface HistogramEntry {
  sum: number;
  count: number;
  bucketValues: Record<string, number>;
}
/** What prom-client 15 keeps on a metric (lib/metric.js, lib/histogram.js). */
interface Internals<E> {
  hashMap: Record<string, E | undefined>;
  sortedLabelNames: readonly string[];
  upperBounds?: readonly number[];
}

/** prom-client's key of a series: util.js `hashObject(labels, metric.sortedLabelNames)`. */
function seriesKey(sortedLabelNames: readonly string[], labels: Labels): string {
  let key = '';
  for (const name of sortedLabelNames) if (labels[name] !== undefined) key += `${name}:${labels[name]},`;
  return key;
}

/** A counter series (`metric` unscoped: the labels are the whole set) incremented by 1 per `inc`. */
export class HeldCounterSeries {
  readonly #metric: Counter;
  readonly #labels: Labels;
  readonly #key: string;
  #entry: CounterEntry | undefined;

  constructor(metric: Counter, labels: Labels) {
    this.#metric = metric;
    this.#labels = labels;
    this.#key = seriesKey((metric as unknown as Internals<CounterEntry>).sortedLabelNames, labels);
  }

  inc(): void {
    const entry = this.#entry;
    if (entry !== undefined && (this.#metric as unknown as Internals<CounterEntry>).hashMap[this.#key] === entry) {
      entry.value += 1;
      markChanged(this.#metric);
      return;
    }
    this.#metric.inc(this.#labels);
    const held = (this.#metric as unknown as Internals<CounterEntry>).hashMap[this.#key];
    this.#entry = typeof held?.value === 'number' ? held : undefined;
  }
}

/** A histogram series (`metric` unscoped) observed per `observe`. */
export class HeldHistogramSeries {
  readonly #metric: Histogram;
  readonly #labels: Labels;
  readonly #key: string;
  /** the bucket bounds, and each as the property name prom-client keeps its count under */
  readonly #bounds: readonly number[];
  readonly #bucketNames: readonly string[];
  #entry: HistogramEntry | undefined;

  constructor(metric: Histogram, labels: Labels) {
    this.#metric = metric;
    this.#labels = labels;
    const internals = metric as unknown as Internals<HistogramEntry>;
    this.#key = seriesKey(internals.sortedLabelNames, labels);
    this.#bounds = internals.upperBounds ?? [];
    // A number as a property key is converted to a string at each access: done once here.
    this.#bucketNames = this.#bounds.map(String);
  }

  /** `seconds`, as prom-client's `observe`: the sum, the count and the first bucket whose bound holds it. */
  observe(seconds: number): void {
    const internals = this.#metric as unknown as Internals<HistogramEntry>;
    const entry = this.#entry;
    if (entry !== undefined && Number.isFinite(seconds) && internals.hashMap[this.#key] === entry) {
      entry.sum += seconds;
      entry.count += 1;
      const bounds = this.#bounds;
      for (let i = 0; i < bounds.length; i++) {
        if (seconds <= bounds[i]!) {
          entry.bucketValues[this.#bucketNames[i]!]! += 1;
          break;
        }
      }
      return;
    }
    this.#metric.observe(this.#labels, seconds);
    const held = internals.hashMap[this.#key];
    const usable =
      typeof held?.sum === 'number' &&
      typeof held.count === 'number' &&
      internals.upperBounds === this.#bounds &&
      this.#bucketNames.every((name) => typeof held.bucketValues?.[name] === 'number');
    this.#entry = usable ? held : undefined;
  }
}
