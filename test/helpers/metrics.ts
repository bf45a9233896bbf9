import { Registry } from 'prom-client';
import { createMetrics, forAccount, type Metrics } from '../../src/metrics/definitions.js';

/** Fresh metrics on a fresh registry (never the global one), as the account `default` sees them. */
export function freshMetrics(): { registry: Registry; metrics: Metrics } {
  const registry = new Registry();
  return { registry, metrics: forAccount(createMetrics(registry), 'default') };
}

/** Value of one series, or undefined when the series does not exist. */
export async function seriesValue(
  registry: Registry,
  name: string,
  labels: Record<string, string> = {},
): Promise<number | undefined> {
  const metric = registry.getSingleMetric(name);
  if (!metric) throw new Error(`no metric ${name}`);
  const { values } = await metric.get();
  const found = values.find(
    (v) =>
      Object.entries(labels).every(([k, l]) => String((v.labels as Record<string, unknown>)[k]) === l) &&
      Object.keys(v.labels).length >= Object.keys(labels).length,
  );
  return found?.value;
}

/** Label sets of every series of a metric. */
export async function seriesOf(registry: Registry, name: string): Promise<Array<Record<string, string | number>>> {
  const { values } = await registry.getSingleMetric(name)!.get();
  // The account label is the same on every series of a test's metrics view: left out for brevity.
  return values.map(({ labels: { account: _account, ...rest } }) => rest as Record<string, string | number>);
}
