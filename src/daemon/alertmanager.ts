/**
 * The daemon's one Alertmanager client (`remediation.alertmanager`), counted in `baremetal_alertmanager_up` and
 * `baremetal_alertmanager_requests_total`; undefined when none is configured (nothing then calls Alertmanager,
 * and neither metric is exposed).
 */
import type { Logger } from 'pino';
import { ALERTMANAGER_OPERATIONS, AlertmanagerClient } from '../alertmanager/client.js';
import type { Config } from '../config/types.js';
import type { Metrics } from '../metrics/definitions.js';

export function alertmanagerClient(config: Config, metrics: Metrics, logger: Logger): AlertmanagerClient | undefined {
  const am = config.remediation.alertmanager;
  if (am === undefined) return undefined;
  // Exposed from 0, so that rate() and increase() see the first failure after a start.
  for (const operation of ALERTMANAGER_OPERATIONS)
    for (const outcome of ['success', 'failure']) metrics.alertmanagerRequests.inc({ operation, outcome }, 0);
  return new AlertmanagerClient({
    config: am,
    logger,
    onOutcome: (operation, ok) => {
      metrics.alertmanagerRequests.inc({ operation, outcome: ok ? 'success' : 'failure' });
      metrics.alertmanagerUp.set({ url: am.url }, ok ? 1 : 0);
    },
  });
}
