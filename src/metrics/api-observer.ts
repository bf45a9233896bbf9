/**
 * Turns the upstream client's request events into the `baremetal_api_*` metrics. Each series is held per
 * (operation, outcome) and updated in place (metrics/held-series.ts): a 10,000-server poll would otherwise
 * validate and hash the same label objects 20,000 times.
 *
 * `baremetal_api_up` is judged per cycle, not per request: a cycle is the requests since the last
 * `servers` poll finished. When a poll run ends, the API is down if that servers poll failed, or if the
 * cycle has requests and every one of them failed; one failing server among many leaves it up (that
 * failure shows in `baremetal_firewall_history_up` and `baremetal_poll_items_failed`). Cancelled
 * requests (a run's deadline, shutdown) say nothing about the API and are not counted.
 */
import type { JobName } from '../config/schema.js';
import type { RequestEvent } from '../upstream/request.js';
import { scopeOf, type Metrics, type RunOutcome } from './definitions.js';
import { HeldCounterSeries, HeldHistogramSeries } from './held-series.js';

/** The request outcome that says nothing about the API's health. */
const NEUTRAL_OUTCOMES = new Set(['cancelled']);

export interface ApiObserver {
  /** the upstream client's `onRequest` */
  onRequest: (event: RequestEvent) => void;
  /** a poll run ended: a `servers` run starts a new cycle; every run updates `baremetal_api_up` */
  onPollFinished: (job: JobName, outcome: RunOutcome) => void;
}

export function createApiObserver(metrics: Metrics, onChange: () => void): ApiObserver {
  const scope = scopeOf(metrics);
  const account = scope.account === undefined ? {} : { account: scope.account };
  /** by operation: its duration series and its request series by outcome */
  const series = new Map<string, { duration: HeldHistogramSeries; requests: Map<string, HeldCounterSeries> }>();
  /** undefined until the first servers poll has finished */
  let serversOk: boolean | undefined;
  let succeeded = 0;
  let failed = 0;
  return {
    onRequest: ({ operation, outcome, durationSeconds }) => {
      let held = series.get(operation);
      if (!held) {
        held = {
          duration: new HeldHistogramSeries(scope.metrics.apiRequestDuration, { ...account, operation }),
          requests: new Map(),
        };
        series.set(operation, held);
      }
      let counter = held.requests.get(outcome);
      if (!counter) {
        counter = new HeldCounterSeries(scope.metrics.apiRequests, { ...account, operation, outcome });
        held.requests.set(outcome, counter);
      }
      counter.inc();
      held.duration.observe(durationSeconds);
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
      metrics.apiUp.set(serversOk && !(failed > 0 && succeeded === 0) ? 1 : 0);
      onChange();
    },
  };
}
