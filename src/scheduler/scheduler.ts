/** node-cron wiring: one cron task per poll job, each on its own schedule; the job itself guards overlap. */
import cron, { type ScheduledTask } from 'node-cron';
import type { JobName } from '../config/schema.js';
import type { PollJob } from './poll-job.js';

/**
 * The period of a cron schedule: milliseconds between its next two runs. One source for the
 * `baremetal_poll_interval_seconds` gauge and for a run's deadline. Throws for an invalid expression
 * (config validation has checked it before).
 */
export function schedulePeriodMs(expression: string): number {
  const task = cron.createTask(expression, () => undefined);
  try {
    const [next, after] = task.getNextRuns(2);
    if (!next || !after) throw new TypeError(`the schedule "${expression}" has no two next runs`);
    return after.getTime() - next.getTime();
  } finally {
    void task.destroy();
  }
}

export class Scheduler {
  readonly #tasks: ScheduledTask[] = [];
  readonly #jobs: Map<JobName, PollJob>;
  readonly #schedules: Record<JobName, string>;

  readonly #onInterval: ((job: JobName, seconds: number) => void) | undefined;

  /** `onInterval` learns each job's period (seconds between its next two runs) when it starts. */
  constructor(
    jobs: Map<JobName, PollJob>,
    schedules: Record<JobName, string>,
    onInterval?: (job: JobName, seconds: number) => void,
  ) {
    this.#jobs = jobs;
    this.#schedules = schedules;
    this.#onInterval = onInterval;
  }

  /** Starts one cron task per job. */
  start(): void {
    for (const [name, job] of this.#jobs) {
      // noOverlap stays off: PollJob skips and counts an overlapping tick itself.
      const task = cron.schedule(this.#schedules[name], () => job.run(), { name: `baremetal-${name}` });
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
   * they have ended. Their unfinished items are counted as cancelled.
   */
  async stop(): Promise<void> {
    await Promise.all(this.#tasks.map((t) => t.destroy()));
    this.#tasks.length = 0;
    await Promise.allSettled([...this.#jobs.values()].map((j) => j.cancel('stop')));
  }
}
