/**
 * What the request budget allows, for `check-config`: per run of the firewall poll, how many history
 * requests fit in its period at `upstream.max_requests_per_second`, and a warning when the requests known
 * from the config alone (colocation and transit services) already do not fit. The server count is known
 * only at runtime: the daemon warns after its first server list (scheduler/jobs.ts).
 */
import type { Config } from '../config/schema.js';
import { runDeadlineMs } from './poll-job.js';
import { runCapacity } from './round-robin.js';
import { schedulePeriodMs } from './scheduler.js';

/**
 * Lines for the operator, per account (each has its own budget): `notes` always, `warnings` when a run cannot
 * cover what the config lists.
 */
export function budgetPlan(config: Pick<Config, 'accounts' | 'schedules'>): { notes: string[]; warnings: string[] } {
  const periodMs = schedulePeriodMs(config.schedules.firewall);
  const notes: string[] = [];
  const warnings: string[] = [];
  for (const account of config.accounts) {
    const at = config.accounts.length > 1 ? `account ${account.name}: ` : '';
    const rate = account.upstream.maxRequestsPerSecond;
    const capacity = runCapacity(rate, runDeadlineMs(periodMs));
    const known = account.services.colocationIds.length + account.services.transitIds.length;
    notes.push(
      `${at}budget: ${rate} requests/s; a firewall run every ${periodMs / 1000}s polls at most ${capacity} services (servers, colocation and transit together); more are covered round-robin over several runs`,
    );
    if (known > capacity) {
      warnings.push(
        `${at}the firewall poll's ${known} colocation and transit requests alone do not fit in its period of ${periodMs / 1000}s at ${rate} requests/s (at most ${capacity} a run): every service is polled once every ${Math.ceil(known / capacity)} runs or more`,
      );
    }
  }
  return { notes, warnings };
}
