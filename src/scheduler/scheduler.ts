/** node-cron wiring: one cron task per poll job, each on its own schedule; the job itself guards overlap. */
import cron, { type ScheduledTask } from 'node-cron';
import type { JobName } from '../config/schema.js';
import type { PollJob } from './poll-job.js';

export class Scheduler {
  readonly #tasks: ScheduledTask[] = [];
  readonly #jobs: Map<JobName, PollJob>;
  readonly #schedules: Record<JobName, string>;

  readonly #onInterval: ((job: JobName, seconds: number) => void) | undefined;

  /** `onInterval` learns each job's period (seconds between its next two runs) when it starts. */
  constructor(jobs: Map<JobName, PollJob>, schedules: Record<JobName, string>, onInterval?: (job: JobName, seconds: number) => void) {
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
      const [next, after] = task.getNextRuns(2);
      if (next && after) this.#onInterval?.(name, (after.getTime() - next.getTime()) / 1000);
    }
  }

  /** Stops the cron tasks and waits for runs in progress to finish. */
  async stop(): Promise<void> {
    await Promise.all(this.#tasks.map((t) => t.destroy()));
    this.#tasks.length = 0;
    await Promise.allSettled([...this.#jobs.values()].map((j) => j.current));
  }
}
