/**
 * Turns the upstream client's request events into the `baremetal_api_*` metrics. Label children are
 * cached per (operation, outcome): a 10,000-server poll would otherwise hash the same label objects
 * 20,000 times.
 */
import type { RequestEvent } from '../upstream/client.js';
import type { Metrics } from './definitions.js';

export function createApiObserver(metrics: Metrics, onChange: () => void): (event: RequestEvent) => void {
  const requests = new Map<string, ReturnType<Metrics['apiRequests']['labels']>>();
  const durations = new Map<string, ReturnType<Metrics['apiRequestDuration']['labels']>>();
  return ({ operation, outcome, durationSeconds }) => {
    const key = `${operation}\u0000${outcome}`;
    let counter = requests.get(key);
    if (!counter) requests.set(key, (counter = metrics.apiRequests.labels({ operation, outcome })));
    let histogram = durations.get(operation);
    if (!histogram) durations.set(operation, (histogram = metrics.apiRequestDuration.labels({ operation })));
    counter.inc();
    histogram.observe(durationSeconds);
    metrics.apiUp.set(outcome === 'success' ? 1 : 0);
    onChange();
  };
}
