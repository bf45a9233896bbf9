/**
 * Turns the upstream client's request events into the `baremetal_api_*` metrics. Label children are
 * cached per (operation, outcome): a 10,000-server poll would otherwise hash the same label objects
 * 20,000 times.
 *
 * `baremetal_api_up` is judged per cycle, not per request: a cycle is the requests since the last
 * `servers` poll finished. When a poll run ends, the API is down if that servers poll failed, or if the
 * cycle has requests and every one of them failed; one failing server among many leaves it up (that
 * failure shows in `baremetal_firewall_history_up` and `baremetal_poll_items_failed`). Cancelled
 * requests (a run's deadline, shutdown) say nothing about the API and are not counted.
 */
import type { JobName } from '../config/schema.js';
import type { RequestEvent } from '../upstream/request.js';
import type { Metrics, RunOutcome } from './definitions.js';

/** The request outcome that says nothing about the API's health. */
const NEUTRAL_OUTCOMES = new Set(['cancelled']);

export interface ApiObserver {
  /** the upstream client's `onRequest` */
  onRequest: (event: RequestEvent) => void;
  /** a poll run ended: a `servers` run starts a new cycle; every run updates `baremetal_api_up` */
  onPollFinished: (job: JobName, outcome: RunOutcome) => void;
}

/** The account whose requests are observed: its name (their `account` label) and the metrics they count in. */
export interface ObservedAccount {
  account: string;
  metrics: Pick<Metrics, 'apiRequests' | 'apiRequestDuration' | 'apiUp'>;
}

export function createApiObserver({ account, metrics }: ObservedAccount, onChange: () => void): ApiObserver {
  const requests = new Map<string, ReturnType<Metrics['apiRequests']['labels']>>();
  const durations = new Map<string, ReturnType<Metrics['apiRequestDuration']['labels']>>();
  /** undefined until the first servers poll has finished */
  let serversOk: boolean | undefined;
  let succeeded = 0;
  let failed = 0;
  return {
    onRequest: ({ operation, outcome, durationSeconds }) => {
      const key = `${operation}\u0000${outcome}`;
      let counter = requests.get(key);
      if (!counter) {
        counter = metrics.apiRequests.labels({ account, operation, outcome });
        requests.set(key, counter);
      }
      let histogram = durations.get(operation);
      if (!histogram) {
        histogram = metrics.apiRequestDuration.labels({ account, operation });
        durations.set(operation, histogram);
      }
      counter.inc();
      histogram.observe(durationSeconds);
      if (outcome === 'success') succeeded++;
      else if (!NEUTRAL_OUTCOMES.has(outcome)) failed++;
      onChange();
    },
    onPollFinished: (job, outcome) => {
      if (outcome === 'skipped') return;
      if (job === 'servers') {
        serversOk = outcome !== 'failure';
        succeeded = failed = 0;
      }
      if (serversOk === undefined) return;
      metrics.apiUp.set({ account }, serversOk && !(failed > 0 && succeeded === 0) ? 1 : 0);
      onChange();
    },
  };
}
