import { describe, expect, it } from 'vitest';
import { buildConfig } from '../../../src/config/load.js';
import { budgetPlan, firewallCoverage } from '../../../src/polls/budget-plan.js';

/** 20 requests/s, a firewall run every 10 s (deadline 9 s): 162 histories a run. */
const config = (extra: Record<string, unknown>) =>
  buildConfig({
    upstream: { base_url: 'https://api.provider.test', api_key: 'k', max_requests_per_second: 20 },
    schedules: { firewall: '*/10 * * * * *' },
    ...extra,
  });
const ids = (n: number) => Array.from({ length: n }, (_, i) => ({ id: String(100001 + i) }));

describe('the budget plan of check-config', () => {
  it.each([
    {
      name: 'servers known only at runtime: the bound for up to 3 periods',
      extra: { services: { colocation_ids: ['colo-1', 'colo-2'] } },
      notes: [
        'budget: 20 requests/s; a firewall run every 10s reads at most 162 service histories',
        "every service's firewall history is read every 10s up to 162 services, and within 3 firewall periods (30s) up to 486",
        "every service's firewall history is read every 10s (1 run) for the 2 colocation and transit services alone",
      ],
      warning: undefined,
    },
    {
      name: '400 servers in scope by id: every 3 runs, no warning',
      extra: { servers: { include: ids(400) } },
      notes: ["every service's firewall history is read every 30s (3 runs) for 400 services"],
      warning: undefined,
    },
    {
      name: '600 servers in scope by id: every 4 runs, more than 3 periods',
      extra: { servers: { include: ids(600) } },
      notes: ["every service's firewall history is read every 40s (4 runs) for 600 services"],
      warning:
        '600 services are read every 40s (4 runs), more than 3 firewall periods (30s): attacks are seen late and power actions are denied as stale; raise upstream.max_requests_per_second',
    },
  ])('$name', ({ extra, notes, warning }) => {
    const plan = budgetPlan(config(extra));
    for (const note of notes)
      expect(
        plan.notes.some((line) => line.startsWith(note)),
        note,
      ).toBe(true);
    if (warning === undefined) expect(plan.warnings).toEqual([]);
    else expect(plan.warnings).toEqual([expect.stringContaining(warning)]);
  });

  it.each([
    { services: 0, perRun: 10, runs: 1, stale: false },
    { services: 30, perRun: 10, runs: 3, stale: false },
    { services: 31, perRun: 10, runs: 4, stale: true },
  ])('$services services at $perRun a run: every $runs runs', ({ services, perRun, runs, stale }) => {
    expect(firewallCoverage(services, perRun, 10_000)).toEqual({ runs, everyMs: runs * 10_000, stale });
  });
});
