import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import { JOB_NAMES, type JobName } from '../../../src/config/schema.js';
import { abortable, each, runDeadlineMs, schedulePeriodMs, type WorkResult } from '../../../src/polls/poll.js';
import { PollJob } from '../../../src/scheduler/poll-job.js';
import { Scheduler } from '../../../src/scheduler/scheduler.js';
import { captureLogger } from '../../helpers/logger.js';
import { freshMetrics, seriesValue } from '../../helpers/metrics.js';

/** Resolves when `signal` aborts: work that only ends when it is cancelled (a reply dripping forever). */
const untilAborted = (signal: AbortSignal) =>
  new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));

describe('run deadline', () => {
  it.each([
    { name: 'every second', expression: '* * * * * *', period: 1000, deadline: 900 },
    { name: 'every minute (the firewall default)', expression: '30 * * * * *', period: 60_000, deadline: 59_000 },
    { name: 'every 5 minutes (the servers default)', expression: '0 */5 * * * *', period: 300_000, deadline: 299_000 },
    {
      name: 'every 6 hours (the catalog default)',
      expression: '45 7 */6 * * *',
      period: 6 * 3600_000,
      deadline: 6 * 3600_000 - 1000,
    },
  ])('$name: period $period ms, deadline $deadline ms', ({ expression, period, deadline }) => {
    expect(schedulePeriodMs(expression)).toBe(period);
    expect(runDeadlineMs(period)).toBe(deadline);
  });
});

describe('poll job deadline and cancel', () => {
  beforeEach(() => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
  });
  afterEach(() => {
    vi.useRealTimers();
  });

  it.each([
    {
      name: 'a run that reaches its deadline ends partial with its unfinished items counted',
      work: async (signal: AbortSignal): Promise<WorkResult> => {
        await untilAborted(signal);
        return { items: 10, failed: 1, cancelled: 3 };
      },
      outcome: 'partial',
      cancelled: 3,
      failed: 1,
    },
    {
      name: 'a one-item run (the server list) cancelled at its deadline is a failure with 1 cancelled',
      work: async (signal: AbortSignal): Promise<WorkResult> => {
        await untilAborted(signal);
        throw signal.reason;
      },
      outcome: 'failure',
      cancelled: 1,
      failed: 0,
    },
    {
      name: 'every item cancelled is a failure',
      work: async (signal: AbortSignal): Promise<WorkResult> => {
        await untilAborted(signal);
        return { items: 4, failed: 0, cancelled: 4 };
      },
      outcome: 'failure',
      cancelled: 4,
      failed: 0,
    },
  ])('$name', async ({ work, outcome, cancelled, failed }) => {
    const { registry, metrics } = freshMetrics();
    const { logger, lines } = captureLogger();
    const signals: AbortSignal[] = [];
    const job = new PollJob({
      name: 'firewall',
      account: 'default',
      metrics,
      logger,
      deadlineMs: 59_000,
      now: () => 0,
      work: (signal) => {
        signals.push(signal);
        return work(signal);
      },
    });
    const run = job.run();
    await vi.advanceTimersByTimeAsync(58_999);
    expect(job.running).toBe(true);
    expect(signals[0]!.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(await run).toBe(outcome);
    expect(signals[0]!.aborted).toBe(true);
    expect(job.last?.cancelled).toBe(cancelled);
    expect(await seriesValue(registry, 'baremetal_poll_items_cancelled', { poll: 'firewall' })).toBe(cancelled);
    expect(await seriesValue(registry, 'baremetal_poll_items_failed', { poll: 'firewall' })).toBe(failed);
    expect(await seriesValue(registry, 'baremetal_poll_runs_total', { poll: 'firewall', outcome })).toBe(1);
    expect(lines.some((l) => l.includes('its deadline of 59000 ms passed'))).toBe(true);
    // The next tick runs (it is not skipped), with a fresh signal.
    const next = job.run();
    expect(job.running).toBe(true);
    expect(signals[1]!.aborted).toBe(false);
    await vi.advanceTimersByTimeAsync(59_000);
    await next;
    expect(await seriesValue(registry, 'baremetal_poll_runs_total', { poll: 'firewall', outcome: 'skipped' })).toBe(0);
  });

  it('a run that finishes in time is not cancelled and leaves no timer behind', async () => {
    const { registry, metrics } = freshMetrics();
    let seen: AbortSignal | undefined;
    const job = new PollJob({
      name: 'graphs',
      account: 'default',
      metrics,
      logger: captureLogger().logger,
      deadlineMs: 1000,
      work: async (signal) => {
        seen = signal;
        return { items: 2, failed: 0 };
      },
    });
    expect(await job.run()).toBe('success');
    expect(vi.getTimerCount()).toBe(0);
    expect(seen!.aborted).toBe(false);
    expect(await seriesValue(registry, 'baremetal_poll_items_cancelled', { poll: 'graphs' })).toBe(0);
  });

  it('cancel() (shutdown) aborts the run in progress and resolves when it has ended', async () => {
    const { metrics } = freshMetrics();
    const { logger, lines } = captureLogger();
    const job = new PollJob({
      name: 'firewall',
      account: 'default',
      metrics,
      logger,
      work: async (signal) => {
        await untilAborted(signal);
        return { items: 5, failed: 0, cancelled: 2 };
      },
    });
    const run = job.run();
    await job.cancel();
    expect(job.running).toBe(false);
    expect(await run).toBe('partial');
    expect(lines.some((l) => l.includes('the daemon is stopping'))).toBe(true);
    await job.cancel();
  });
});

describe('scheduler stop', () => {
  it('cancels every run in progress, scheduled or started by hand, and resolves when they have ended', async () => {
    const { registry, metrics } = freshMetrics();
    const logger = captureLogger().logger;
    const stuck = (name: 'servers' | 'firewall') =>
      new PollJob({
        name,
        account: 'default',
        metrics,
        logger,
        work: async (signal) => {
          await untilAborted(signal);
          return { items: 3, failed: 0, cancelled: 3 };
        },
      });
    const jobs = new Map([
      ['servers', stuck('servers')],
      ['firewall', stuck('firewall')],
    ] as const);
    const scheduler = new Scheduler(
      jobs,
      Object.fromEntries(JOB_NAMES.map((job) => [job, '0 0 1 1 *'])) as Record<JobName, string>,
    );
    const runs = [jobs.get('servers')!.run(), jobs.get('firewall')!.run()];
    await scheduler.stop();
    expect([...jobs.values()].map((j) => j.running)).toEqual([false, false]);
    expect(await Promise.all(runs)).toEqual(['failure', 'failure']);
    expect(await seriesValue(registry, 'baremetal_poll_items_cancelled', { poll: 'firewall' })).toBe(3);
  });
});

describe('worker pool', () => {
  it('stops taking items once the signal aborts, stops waiting for those in flight, and counts both as cancelled', async () => {
    const controller = new AbortController();
    const started: number[] = [];
    const errors: number[] = [];
    const items = Array.from({ length: 10 }, (_, i) => i);
    const result = await each(
      items,
      2,
      controller.signal,
      async (item) => {
        started.push(item);
        if (item === 0) throw new Error('item 0 fails');
        if (item === 3) controller.abort();
        // Items in flight at the abort never settle by themselves.
        if (item >= 2) await new Promise(() => undefined);
      },
      (item) => errors.push(item),
    );
    expect(started).toEqual([0, 1, 2, 3]);
    // 1 succeeded, 0 failed, 2 and 3 were in flight, 4…9 never started.
    expect(result).toEqual({ items: 10, failed: 1, cancelled: 8 });
    expect(errors.sort()).toEqual([0, 2, 3]);
  });

  it('abortable settles like its promise when the signal stays quiet', async () => {
    const signal = new AbortController().signal;
    await expect(abortable(Promise.resolve(7), signal)).resolves.toBe(7);
    await expect(abortable(Promise.reject(new Error('no')), signal)).rejects.toThrow('no');
  });
});
