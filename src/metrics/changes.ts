/**
 * Which metrics changed since a rendering. At 10,000 servers most of the 80,000 series (server info, IPs,
 * attack counts, history_up) are the same poll after poll; a rendering that knows a family did not change
 * reuses its bytes instead of collecting and formatting it again (metrics/exposition-cache.ts).
 */

/**
 * prom-client's (15) methods that change a Gauge's or a Counter's series; `labels()` and `startTimer()` bind
 * or call these instance methods (test/unit/metrics/changes.test.ts checks every path). Not for a Histogram,
 * whose `labels().observe` goes around them. `hold` and `update` are a SeriesFamily's (metrics/series.ts).
 */
const MUTATORS = [
  'set',
  'inc',
  'dec',
  'observe',
  'remove',
  'reset',
  'zero',
  'setToCurrentTime',
  'hold',
  'update',
] as const;

const versions = new WeakMap<object, { version: number }>();

/**
 * Counts the changes of `metric`: each of its mutators bumps a version that `changeVersion` reads. Wraps
 * the instance's own methods, so every way to a change (`labels().inc`, a `forAccount` view, `startTimer`)
 * passes through the count. Returns the metric itself.
 */
export function trackChanges<M extends object>(metric: M): M {
  const state = { version: 0 };
  const target = metric as Record<string, unknown>;
  for (const name of MUTATORS) {
    const method = target[name];
    if (typeof method !== 'function') continue;
    target[name] = function (this: unknown, ...args: unknown[]) {
      state.version++;
      return method.apply(this, args);
    };
  }
  versions.set(metric, state);
  return metric;
}

/** The change count of a metric built with `trackChanges`; undefined for any other (always re-rendered). */
export function changeVersion(metric: object): number | undefined {
  return versions.get(metric)?.version;
}
