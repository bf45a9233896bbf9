/** node-cron wiring: one cron task per poll job, each on its own schedule; the job itself guards overlap. */
import cron, { type Logger as CronLogger, type ScheduledTask } from 'node-cron';
import type { Logger } from 'pino';
import type { JobName } from '../config/schema.js';
import { schedulePeriodMs } from '../polls/poll.js';
import type { CancelReason, PollJob } from './poll-job.js';

/**
 * node-cron's own messages (a missed execution when the loop was blocked, a task that failed) as structured
 * lines of `logger`, `component: node-cron`, instead of its ANSI-coloured `WARN` lines on stdout.
 */
export function cronLogger(logger: Pick<Logger, 'debug' | 'info' | 'warn' | 'error'>): CronLogger {
  const fields = { component: 'node-cron' };
  const withError = (level: 'error' | 'debug') => (message: string | Error, err?: Error) =>
    message instanceof Error
      ? logger[level]({ ...fields, err: message }, message.message)
      : logger[level]({ ...fields, ...(err ? { err } : {}) }, message);
  return {
    info: (message) => logger.info(fields, message),
    warn: (message) => logger.warn(fields, message),
    error: withError('error'),
    debug: withError('debug'),
  };
}

export class Scheduler {
  readonly #tasks: ScheduledTask[] = [];
  readonly #jobs: Map<JobName, PollJob>;
  readonly #schedules: Record<JobName, string>;

  readonly #onInterval: ((job: JobName, seconds: number) => void) | undefined;
  readonly #cronLogger: CronLogger | undefined;
  readonly #mayRun: (() => boolean) | undefined;

  /**
   * `onInterval` learns each job's period (seconds between its next two runs) when it starts; `logger`
   * receives node-cron's own warnings and errors (see cronLogger); a tick when `mayRun` says false starts no
   * run (the replica lost the account's lease and its scheduler is about to stop: a process woken from a pause
   * runs its overdue timers, the cron ticks among them, before it has stopped anything).
   */
  constructor(
    jobs: Map<JobName, PollJob>,
    schedules: Record<JobName, string>,
    onInterval?: (job: JobName, seconds: number) => void,
    logger?: Pick<Logger, 'debug' | 'info' | 'warn' | 'error'>,
    mayRun?: () => boolean,
  ) {
    this.#jobs = jobs;
    this.#schedules = schedules;
    this.#onInterval = onInterval;
    this.#cronLogger = logger && cronLogger(logger);
    this.#mayRun = mayRun;
  }

  /** Starts one cron task per job. */
  start(): void {
    for (const [name, job] of this.#jobs) {
      // noOverlap stays off: PollJob skips and counts an overlapping tick itself.
      const task = cron.schedule(this.#schedules[name], () => (this.#mayRun?.() === false ? undefined : job.run()), {
        name: `baremetal-${name}`,
        ...(this.#cronLogger ? { logger: this.#cronLogger } : {}),
      });
      this.#tasks.push(task);
      this.#onInterval?.(name, schedulePeriodMs(this.#schedules[name]) / 1000);
    }
  }

  /**
   * Replaces the cron tasks with ones on the current schedules (a config reload changed them in place);
   * runs in progress go on. Does nothing when the schedule was never started.
   */
  async restart(): Promise<void> {
    if (this.#tasks.length === 0) return;
    await Promise.all(this.#tasks.map((t) => t.destroy()));
    this.#tasks.length = 0;
    this.start();
  }

  /**
   * Stops the cron tasks and cancels the runs in progress (scheduled or started by hand); resolves when
   * they have ended. Their unfinished items are counted as cancelled; `reason` is what their log line says
   * (`lease`: this replica no longer leads the account, the daemon goes on).
   */
  async stop(reason: CancelReason = 'stop'): Promise<void> {
    await Promise.all(this.#tasks.map((t) => t.destroy()));
    this.#tasks.length = 0;
    await Promise.allSettled([...this.#jobs.values()].map((j) => j.cancel(reason)));
  }
}
