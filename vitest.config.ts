import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Builds dist/ when it is older than src/, so the CLI tests never run a stale build.
    globalSetup: ['test/global-setup.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // e2e tests start real Prometheus processes: keep files from competing on a 2-core machine.
    fileParallelism: true,
    maxWorkers: 2,
    reporters: ['default', ['json', { outputFile: '.vitest-report.json' }]],
  },
});
