import { afterEach, describe, expect, it, vi } from 'vitest';
import { JOB_NAMES, type JobName } from '../../../src/config/schema.js';
import type { PollJob } from '../../../src/scheduler/poll-job.js';
import { Scheduler } from '../../../src/scheduler/scheduler.js';
import { captureLogger } from '../../helpers/logger.js';

afterEach(() => {
  vi.useRealTimers();
  vi.restoreAllMocks();
});

describe('Scheduler', () => {
  it("routes node-cron's missed-execution warning through the logger, nothing on the console", async () => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
    const console = { warn: vi.spyOn(globalThis.console, 'warn').mockImplementation(() => undefined) };
    const { logger, lines } = captureLogger();
    const runs: string[] = [];
    // A job as the scheduler sees it: run() per tick, cancel() on stop.
    const job = { run: async () => void runs.push('run'), cancel: async () => undefined } as unknown as PollJob;
    const every = '* * * * * *';
    const scheduler = new Scheduler(
      new Map<JobName, PollJob>([['servers', job]]),
      Object.fromEntries(JOB_NAMES.map((name) => [name, every])) as Record<JobName, string>,
      undefined,
      logger,
    );
    scheduler.start();
    // The event loop "blocked" for 10 s: node-cron's next beat finds the slots in between missed.
    vi.setSystemTime(Date.now() + 10_000);
    await vi.advanceTimersToNextTimerAsync();
    await scheduler.stop();
    const missed = lines
      .map((l) => JSON.parse(l) as { level: string; component?: string; msg: string })
      .filter((l) => l.msg.startsWith('missed execution'));
    expect({
      logged: missed.length > 0,
      fields: missed.map((l) => ({ level: l.level, component: l.component }))[0],
      console: console.warn.mock.calls.length,
    }).toEqual({ logged: true, fields: { level: 'warn', component: 'node-cron' }, console: 0 });
  });
});

describe('Scheduler mayRun', () => {
  it.each([
    { name: 'a tick while the replica leads the account runs the job', leads: true, runs: 1 },
    { name: 'a tick after it lost the account (its scheduler not yet stopped) runs nothing', leads: false, runs: 0 },
  ])('$name', async ({ leads, runs }) => {
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'] });
    let count = 0;
    const job = { run: async () => void count++, cancel: async () => undefined } as unknown as PollJob;
    const every = '* * * * * *';
    const scheduler = new Scheduler(
      new Map<JobName, PollJob>([['servers', job]]),
      Object.fromEntries(JOB_NAMES.map((name) => [name, every])) as Record<JobName, string>,
      undefined,
      captureLogger().logger,
      () => leads,
    );
    scheduler.start();
    // node-cron's beat: the next second's tick, once
    await vi.advanceTimersByTimeAsync(1_000);
    await scheduler.stop();
    expect(count > 0 ? 1 : 0).toBe(runs);
  });
});

describe('Scheduler stop', () => {
  it.each([
    { name: 'the daemon stopping', reason: undefined, expected: 'stop' },
    { name: 'the account led elsewhere now', reason: 'lease' as const, expected: 'lease' },
  ])('cancels every job with the reason given: $name', async ({ reason, expected }) => {
    const reasons: string[] = [];
    const job = {
      run: async () => undefined,
      cancel: async (why: string) => void reasons.push(why),
    } as unknown as PollJob;
    const scheduler = new Scheduler(
      new Map<JobName, PollJob>([
        ['servers', job],
        ['firewall', job],
      ]),
      Object.fromEntries(JOB_NAMES.map((name) => [name, '0 0 0 * * *'])) as Record<JobName, string>,
      undefined,
      captureLogger().logger,
    );
    scheduler.start();
    await scheduler.stop(reason);
    expect(reasons).toEqual([expected, expected]);
  });
});
