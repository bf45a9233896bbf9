import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // e2e tests start real Prometheus processes: keep files from competing on a 2-core machine.
    fileParallelism: true,
    maxWorkers: 2,
    reporters: ['default', ['json', { outputFile: '.vitest-report.json' }]],
  },
});
