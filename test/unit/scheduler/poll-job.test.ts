import { describe, expect, it } from 'vitest';
import { PollJob } from '../../../src/scheduler/poll-job.js';
import { captureLogger } from '../../helpers/logger.js';
import { freshMetrics, seriesValue } from '../../helpers/metrics.js';

function deferred() {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

describe('poll job', () => {
  it('skips and counts a tick that arrives while the previous run is still going, never overlapping', async () => {
    const { registry, metrics } = freshMetrics();
    const gate = deferred();
    let concurrent = 0;
    let maxConcurrent = 0;
    let clock = 1_000_000;
    const job = new PollJob({
      name: 'firewall',
      account: 'default',
      metrics,
      logger: captureLogger().logger,
      now: () => clock,
      work: async () => {
        maxConcurrent = Math.max(maxConcurrent, ++concurrent);
        await gate.promise;
        concurrent--;
        clock += 2500;
        return { items: 3, failed: 0 };
      },
    });
    const first = job.run();
    expect(job.running).toBe(true);
    expect(await job.run()).toBe('skipped');
    expect(await job.run()).toBe('skipped');
    gate.resolve();
    expect(await first).toBe('success');
    expect(maxConcurrent).toBe(1);
    expect(await seriesValue(registry, 'baremetal_poll_runs_total', { poll: 'firewall', outcome: 'skipped' })).toBe(2);
    expect(await seriesValue(registry, 'baremetal_poll_runs_total', { poll: 'firewall', outcome: 'success' })).toBe(1);
    expect(await seriesValue(registry, 'baremetal_poll_duration_seconds', { poll: 'firewall' })).toBe(2.5);
    expect(await seriesValue(registry, 'baremetal_poll_last_success_timestamp_seconds', { poll: 'firewall' })).toBe(
      1002.5,
    );
    expect(await job.run()).toBe('success');
  });

  it.each([
    {
      name: 'some items failed → partial, still a success timestamp',
      result: { items: 4, failed: 1 },
      outcome: 'partial',
      stamped: true,
    },
    {
      name: 'every item failed → failure, no success timestamp',
      result: { items: 4, failed: 4 },
      outcome: 'failure',
      stamped: false,
    },
    { name: 'nothing to do → success', result: { items: 0, failed: 0 }, outcome: 'success', stamped: true },
  ])('$name', async ({ result, outcome, stamped }) => {
    const { registry, metrics } = freshMetrics();
    const job = new PollJob({
      name: 'graphs',
      account: 'default',
      metrics,
      logger: captureLogger().logger,
      now: () => 5000,
      work: async () => result,
    });
    expect(await job.run()).toBe(outcome);
    expect(await seriesValue(registry, 'baremetal_poll_items_failed', { poll: 'graphs' })).toBe(result.failed);
    expect(await seriesValue(registry, 'baremetal_poll_last_success_timestamp_seconds', { poll: 'graphs' })).toBe(
      stamped ? 5 : undefined,
    );
  });

  it('counts a thrown error as a failure and logs it', async () => {
    const { registry, metrics } = freshMetrics();
    const { logger, lines } = captureLogger();
    const job = new PollJob({
      name: 'servers',
      account: 'default',
      metrics,
      logger,
      work: async () => Promise.reject(new Error('list_servers failed')),
    });
    expect(await job.run()).toBe('failure');
    expect(await seriesValue(registry, 'baremetal_poll_runs_total', { poll: 'servers', outcome: 'failure' })).toBe(1);
    expect(lines.some((line) => line.includes('list_servers failed'))).toBe(true);
  });
});
