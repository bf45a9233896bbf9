/**
 * A family whose series are a function of state, the way a Go exporter's `Collector` emits const metrics at
 * collection time: declared once here (name, help, type, labels) and bound by the composition root to a
 * source that walks the accounts' state when the exposition is rendered (collectors/families.ts). Nothing sets
 * or removes one of its series: a thing gone from the state has none at the next rendering. Registered in the
 * prom-client registry like any metric, so that it keeps its place in the exposition and `registry.metrics()`
 * renders it (from `get()`) byte for byte as metrics/exposition-format.ts does.
 */

/** Which accounts' series to render, by name (undefined: every account). */
export type KeepAccount = (account: string) => boolean;

/**
 * One sample: its label values in the family's `labelNames` order (`account` first), its value and, for an
 * event counter, the Unix time in seconds at which its series was created (OpenMetrics `_created`).
 */
export type Emit = (labelValues: readonly string[], value: number, createdSeconds?: number) => void;

/** Where a family's samples come from (collectors/families.ts builds one per family). */
export interface FamilySource {
  /**
   * What the family reads of the kept accounts' state, as values compared one by one with `===` (a state's own
   * change counter, an immutable snapshot, a switch): while they are the same, the last rendering's bytes stand.
   */
  version(keep?: KeepAccount): unknown[];
  /**
   * Emits the samples of the kept accounts in exposition order, yielding (no value) between items so that a
   * rendering can give the event loop a turn (slices.ts).
   */
  collect(emit: Emit, keep?: KeepAccount): Iterable<void>;
}

/** Two versions (FamilySource.version, AccountState.servicesVersion) are the same: the same values, one by one (`===`). */
export function sameVersion(a: readonly unknown[], b: readonly unknown[]): boolean {
  return a.length === b.length && a.every((value, i) => value === b[i]);
}

export interface StateFamilyOptions<L extends string> {
  name: string;
  help: string;
  type: 'gauge' | 'counter';
  labelNames: readonly L[];
  registers?: Array<{ registerMetric(metric: never): void }>;
}

/** A gauge or counter family rendered from state (see the module doc); no series before `bind`. */
export class StateFamily<L extends string = string> {
  readonly name: string;
  readonly help: string;
  readonly type: 'gauge' | 'counter';
  readonly labelNames: readonly L[];
  readonly aggregator = 'sum';
  #source: FamilySource | undefined;

  constructor(options: StateFamilyOptions<L>) {
    this.name = options.name;
    this.help = options.help;
    this.type = options.type;
    this.labelNames = options.labelNames;
    for (const registry of options.registers ?? []) registry.registerMetric(this as never);
  }

  /** Where the samples come from from now on (the composition root's accounts). */
  bind(source: FamilySource): void {
    this.#source = source;
  }

  get source(): FamilySource | undefined {
    return this.#source;
  }

  /** prom-client's `get()` shape (for `registry.metrics()` and tests): every account's samples. */
  async get() {
    const values: Array<{ value: number; labels: Record<string, string> }> = [];
    const emit: Emit = (labelValues, value) => {
      const labels: Record<string, string> = {};
      this.labelNames.forEach((name, i) => {
        labels[name] = labelValues[i]!;
      });
      values.push({ value, labels });
    };
    if (this.#source) for (const _ of this.#source.collect(emit));
    return { name: this.name, help: this.help, type: this.type, values, aggregator: this.aggregator };
  }
}
