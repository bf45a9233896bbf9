/**
 * What the request budget allows, for `check-config` and the daemon's warning after its first server list:
 * per run of the firewall poll, how many history requests fit in its period at
 * `upstream.max_requests_per_second`, and so how often every service's history is read. The firewall polls
 * go before graphs and catalog in the budget (upstream/request-budget.ts): a firewall run may spend the
 * whole budget of its deadline less the margin (round-robin.ts), the services under attack's own job
 * taking its share first (firewall.ts); graphs and catalog use what the firewall runs leave. A reading interval
 * over STALE_AFTER_FIREWALL_PERIODS firewall periods is warned about: attacks are then seen late and power
 * actions are denied as stale.
 */
import { STALE_AFTER_FIREWALL_PERIODS } from '../collectors/firewall.js';
import type { Config } from '../config/types.js';
import type { ServerScope } from '../config/scope.js';
import { runDeadlineMs, schedulePeriodMs } from './poll.js';
import { runCapacity } from './round-robin.js';

/** How often every service's firewall history is read. */
export interface FirewallCoverage {
  /** runs of the firewall poll a round takes: every service is read once every this many runs */
  runs: number;
  /** ms between two reads of the same service: `runs` periods of the firewall schedule */
  everyMs: number;
  /** more than STALE_AFTER_FIREWALL_PERIODS periods: the coverage alert fires, power actions are denied as stale */
  stale: boolean;
}

/** Coverage of `services` histories read at most `perRun` a run, one run every `periodMs`. Pure. */
export function firewallCoverage(services: number, perRun: number, periodMs: number): FirewallCoverage {
  const runs = Math.max(1, Math.ceil(services / perRun));
  return { runs, everyMs: runs * periodMs, stale: runs > STALE_AFTER_FIREWALL_PERIODS };
}

/** What an operator changes when the coverage is stale (the runbook's BaremetalFirewallCoverageStale says more). */
export const COVERAGE_REMEDY =
  'raise upstream.max_requests_per_second (within the provider limit), narrow servers.include, or lengthen schedules.firewall';

/** Servers in scope known from the config alone: a scope that includes servers by id only; undefined otherwise. */
function serversByIdOnly(scope: ServerScope | undefined): number | undefined {
  if (!scope || scope.include.length === 0 || !scope.include.every((s) => 'id' in s)) return undefined;
  return new Set(scope.include.map((s) => ('id' in s ? s.id : ''))).size;
}

/**
 * Lines for the operator, per account (each has its own budget): `notes` always (the run capacity and how
 * often every service's history is read), `warnings` when the services the config alone names (colocation,
 * transit, and the servers of a scope that includes them by id) are read less often than every
 * STALE_AFTER_FIREWALL_PERIODS firewall periods. The server count is otherwise known only at runtime: the
 * daemon warns after its first server list (polls/firewall.ts).
 */
export function budgetPlan(config: Pick<Config, 'accounts' | 'schedules'>): { notes: string[]; warnings: string[] } {
  const periodMs = schedulePeriodMs(config.schedules.firewall);
  const period = `${periodMs / 1000}s`;
  const notes: string[] = [];
  const warnings: string[] = [];
  for (const account of config.accounts) {
    const at = config.accounts.length > 1 ? `account ${account.name}: ` : '';
    const rate = account.upstream.maxRequestsPerSecond;
    const perRun = runCapacity(rate, runDeadlineMs(periodMs));
    notes.push(
      `${at}budget: ${rate} requests/s; a firewall run every ${period} reads at most ${perRun} service histories (servers, colocation and transit together; the firewall polls go before graphs and catalog, which use what is left); more are read round-robin over several runs`,
    );
    const servers = serversByIdOnly(account.scope);
    const others = account.services.colocationIds.length + account.services.transitIds.length;
    const stale = STALE_AFTER_FIREWALL_PERIODS;
    if (servers === undefined) {
      notes.push(
        `${at}every service's firewall history is read every ${period} up to ${perRun} services, and within ${stale} firewall periods (${(stale * periodMs) / 1000}s) up to ${stale * perRun}; the server count is known once the daemon lists them (it warns then)`,
      );
    }
    const known = (servers ?? 0) + others;
    const coverage = firewallCoverage(known, perRun, periodMs);
    const what = servers === undefined ? `the ${others} colocation and transit services alone` : `${known} services`;
    if (servers !== undefined || others > 0)
      notes.push(
        `${at}every service's firewall history is read every ${coverage.everyMs / 1000}s (${coverage.runs} run${coverage.runs === 1 ? '' : 's'}) for ${what}`,
      );
    if (coverage.stale) {
      warnings.push(
        `${at}${what} are read every ${coverage.everyMs / 1000}s (${coverage.runs} runs), more than ${stale} firewall periods (${(stale * periodMs) / 1000}s): attacks are seen late and power actions are denied as stale; ${COVERAGE_REMEDY}`,
      );
    }
  }
  return { notes, warnings };
}
