/**
 * A high-cardinality family (per IP, per server) kept once: each series is its label text, formatted once
 * when the series is created (`{a="x",b="y"}`, exactly as prom-client writes it), and its value. The way a
 * Go exporter emits const metrics from a Collector: no second copy in prom-client's per-series map (its
 * sorted-label hash key, its label object) and no label cache beside it. Registered in the prom-client
 * registry like any metric (`get()` gives prom-client's shape, so `registry.metrics()` renders it byte for
 * byte as a Gauge or Counter would); metrics/exposition-format.ts renders it straight from the label texts.
 */

/**
 * One series: its label text, in the order the labels were given (a counter's first call, a gauge's latest
 * `set`, as prom-client keeps them), and its value. The object is kept for the series' life.
 */
export interface Series {
  text: string;
  value: number;
}

const NEEDS_ESCAPE = /[\\\n"]/;
/** prom-client's label value escaping. */
function escapeLabelValue(value: unknown): string {
  const text = String(value);
  if (!NEEDS_ESCAPE.test(text)) return text;
  return text.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
}
const unescapeLabelValue = (text: string): string => text.replace(/\\(.)/g, (_, c: string) => (c === 'n' ? '\n' : c));

export interface SeriesFamilyOptions<L extends string> {
  name: string;
  help: string;
  type: 'gauge' | 'counter';
  labelNames: readonly L[];
  registers?: Array<{ registerMetric(metric: never): void }>;
}

type Labels<L extends string> = Partial<Record<L, string | number>>;

/**
 * A gauge or counter family whose series are label texts and values (see the module doc). Supports what the
 * collectors call on prom-client's Gauge and Counter: `set`, `inc`, `remove`, `reset`; labels are checked
 * against `labelNames` and values must be numbers, as prom-client checks them (it throws the same way).
 */
export class SeriesFamily<L extends string = string> {
  readonly name: string;
  readonly help: string;
  readonly type: 'gauge' | 'counter';
  readonly labelNames: readonly L[];
  readonly aggregator = 'sum';
  /** the series by their label text in `labelNames` order, in creation order (the exposition's order) */
  readonly #series = new Map<string, Series>();
  /** the series removed, which a caller may still hold (`hold`, `update`) */
  readonly #gone = new WeakSet<Series>();

  constructor(options: SeriesFamilyOptions<L>) {
    this.name = options.name;
    this.help = options.help;
    this.type = options.type;
    this.labelNames = options.labelNames;
    for (const registry of options.registers ?? []) registry.registerMetric(this as never);
  }

  /** Sets a gauge series (creating it). */
  set(labels: Labels<L>, value: number): void {
    if (this.type !== 'gauge') throw new Error(`${this.name} is a counter: use inc`);
    if (typeof value !== 'number') throw new TypeError(`Value is not a valid number: ${value}`);
    const series = this.#entry(labels);
    series.value = value;
    // prom-client's Gauge keeps the label object of the latest set, so its label order.
    if (series.text !== this.#lastText) series.text = this.#lastText;
  }

  /**
   * Sets a gauge series (creating it) and returns it, for the caller to keep and `update`: a series set once per
   * item and poll (a service's last success) is then not looked up by its labels again.
   */
  hold(labels: Labels<L>, value: number): Series {
    this.set(labels, value);
    return this.#series.get(this.#key(labels).key)!;
  }

  /**
   * Sets a series `hold` returned, in place; false (nothing set) when it has been removed since (`remove`,
   * `reset`): then `hold` it again.
   */
  update(series: Series, value: number): boolean {
    if (typeof value !== 'number') throw new TypeError(`Value is not a valid number: ${value}`);
    if (this.#gone.has(series)) return false;
    series.value = value;
    return true;
  }

  /** Adds `by` (default 1, never negative for a counter) to a series, creating it at 0 first. */
  inc(labels: Labels<L>, by = 1): void {
    if (typeof by !== 'number' || Number.isNaN(by)) throw new TypeError(`Value is not a valid number: ${by}`);
    if (this.type === 'counter' && by < 0) throw new Error('It is not possible to decrease a counter');
    this.#entry(labels).value += by;
  }

  /** Removes a series; nothing when it does not exist. */
  remove(labels: Labels<L>): void {
    const { key } = this.#key(labels);
    const series = this.#series.get(key);
    if (series) this.#gone.add(series);
    this.#series.delete(key);
  }

  /** Removes every series. */
  reset(): void {
    for (const series of this.#series.values()) this.#gone.add(series);
    this.#series.clear();
  }

  /** The series, in creation order; the objects live as long as their series (a removed one that comes back is new). */
  series(): IterableIterator<Series> {
    return this.#series.values();
  }

  /** prom-client's `get()` shape, labels read back from each label text (for prom-client's renderer and tests). */
  async get() {
    const values = [...this.#series.values()].map(({ text, value }) => {
      const labels: Record<string, string> = {};
      for (const [, name, raw] of text.matchAll(/([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"/g))
        labels[name!] = unescapeLabelValue(raw!);
      return { value, labels };
    });
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }

  /** the label text of the latest #entry call (its labels' given order) */
  #lastText = '';

  #entry(labels: Labels<L>): Series {
    const { key, text } = this.#key(labels);
    this.#lastText = text;
    let series = this.#series.get(key);
    if (!series) {
      // The twin's string when it has a series of the same label set: one copy of the text for both families.
      const family = this.#twin;
      const twin = key === text && family ? family.#series.get(key) : undefined;
      const shared = twin?.text === text ? twin.text : text;
      series = { text: shared, value: 0 };
      this.#series.set(key === text ? shared : key, series);
    }
    return series;
  }

  /** a family whose series have the same label sets as this one's (`shareTextsWith`) */
  #twin: SeriesFamily<L> | undefined;

  /**
   * Series of this family and of `other` with the same label set share one label text (at 10,000 servers the
   * attack series per IP are 20,000 in each of two families: ~1.8 MiB of texts written twice). Only memory:
   * each family keeps its own series.
   */
  shareTextsWith(other: SeriesFamily<L>): void {
    this.#twin = other;
    other.#twin ??= this;
  }

  /** The series' key (label text in `labelNames` order) and its text in the order given (prom-client's). */
  #key(labels: Labels<L>): { key: string; text: string } {
    const given: string[] = [];
    for (const name of Object.keys(labels)) {
      if (!this.labelNames.includes(name as L))
        throw new Error(`Added label "${name}" is not included in initial labelset: ${this.labelNames.join(', ')}`);
      given.push(`${name}="${escapeLabelValue(labels[name as L])}"`);
    }
    // Joined, not concatenated: a flat string (a template would keep a rope of three strings per series).
    const text = given.length > 0 ? ['{', given.join(','), '}'].join('') : '';
    const ordered: string[] = [];
    for (const name of this.labelNames)
      if (labels[name] !== undefined) ordered.push(`${name}="${escapeLabelValue(labels[name])}"`);
    const key = ordered.length > 0 ? ['{', ordered.join(','), '}'].join('') : '';
    // Usually the same text: keep one string, not two.
    return { key, text: key === text ? key : text };
  }
}
