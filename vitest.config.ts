import { defineConfig } from 'vitest/config';

/**
 * The suite in tiers (vitest projects), run one group after another (`groupOrder`) so that the fast ones fail
 * first and each tier's duration is its own (printed by test/setup/tier-durations.ts); e2e and smoke share the
 * last group, side by side:
 * - `unit`: test/unit/, no process, no socket but to an in-process server, no binary, no build (enforced by
 *   test/setup/unit-guard.ts) — `npm run test:unit`, the inner loop;
 * - `integration`: test/integration/, the daemon and the CLI as processes, the simulator, faults;
 * - `postgres`: test/postgres/, everything that needs Debian's PostgreSQL: one cluster for the whole run
 *   (test/setup/postgres.ts), a database per file;
 * - `e2e`: test/e2e/, Debian's Prometheus, Alertmanager and Chromium;
 * - `smoke`: test/smoke/, the package (npm pack, a global install, the demo) and the bench's smoke run.
 * Every tier but `unit` runs the build first when dist/ is stale (test/global-setup.ts).
 */
const BUILD = 'test/global-setup.ts';
const POSTGRES = 'test/setup/postgres.ts';

function tier(name: string, order: number, setup: string[], extra: Record<string, unknown> = {}) {
  return {
    extends: true as const,
    test: {
      name,
      include: [`test/${name}/**/*.test.ts`],
      globalSetup: setup,
      sequence: { groupOrder: order },
      ...extra,
    },
  };
}

export default defineConfig({
  test: {
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // e2e tests start real Prometheus processes: keep files from competing on a 2-core machine.
    fileParallelism: true,
    maxWorkers: 2,
    reporters: ['default', './test/setup/tier-durations.ts', ['json', { outputFile: '.vitest-report.json' }]],
    projects: [
      // Unit files share their worker's modules (no process, no global state of ours): 4× less CPU than isolation.
      tier('unit', 0, [], { setupFiles: ['test/setup/unit-guard.ts'], isolate: false }),
      // Their files mostly wait (on daemons, leases, processes): a third worker uses the idle core time.
      tier('integration', 1, [BUILD], { maxWorkers: 3 }),
      tier('postgres', 2, [BUILD, POSTGRES], { maxWorkers: 3 }),
      // e2e and smoke run side by side (one group): the bench smoke is one long file that mostly waits on
      // replicas and cycles, beside which the e2e files take the other workers.
      tier('e2e', 3, [BUILD, POSTGRES], { maxWorkers: 3 }),
      tier('smoke', 3, [BUILD, POSTGRES], { maxWorkers: 3 }),
    ],
  },
});
