/**
 * One poll job: runs its work, never two runs at once (a tick that finds the previous run still going is
 * skipped and counted), and reports on itself: duration, outcome, last success, failed items.
 */
import type { Logger } from 'pino';
import type { Metrics } from '../metrics/definitions.js';

/** What a job's work reports: how many items it handled and how many of them failed. */
export interface WorkResult {
  items: number;
  failed: number;
}

export type RunOutcome = 'success' | 'partial' | 'failure' | 'skipped';

export interface PollJobOptions {
  name: string;
  work: () => Promise<WorkResult>;
  metrics: Metrics;
  logger: Logger;
  /** milliseconds since the epoch; injectable for tests */
  now?: () => number;
  /** called after every finished (not skipped) run, e.g. to re-render the exposition */
  onFinished?: (outcome: RunOutcome) => void;
}

/** The last finished run of a job (for the status page and readiness). */
export interface LastRun {
  outcome: Exclude<RunOutcome, 'skipped'>;
  /** ms since epoch */
  finishedAt: number;
  durationMs: number;
}

export class PollJob {
  readonly name: string;
  /** the last finished run, if any */
  last: LastRun | undefined;
  /** ms since epoch of the last run with outcome success or partial */
  lastSuccessAt: number | undefined;
  #running: Promise<RunOutcome> | undefined;
  readonly #options: PollJobOptions;

  constructor(options: PollJobOptions) {
    this.name = options.name;
    this.#options = options;
  }

  /** True while a run is in progress. */
  get running(): boolean {
    return this.#running !== undefined;
  }

  /** The run in progress, if any (for graceful shutdown). */
  get current(): Promise<RunOutcome> | undefined {
    return this.#running;
  }

  /** Runs the job unless a run is in progress, in which case it returns `skipped` at once. */
  run(): Promise<RunOutcome> {
    const { metrics, name, logger } = this.#options;
    if (this.#running) {
      metrics.pollRuns.inc({ poll: name, outcome: 'skipped' });
      logger.warn({ poll: name }, 'poll skipped: previous run still in progress');
      return Promise.resolve('skipped');
    }
    this.#running = this.#execute().finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  async #execute(): Promise<RunOutcome> {
    const { metrics, name, logger, work, onFinished } = this.#options;
    const now = this.#options.now ?? Date.now;
    const started = now();
    let outcome: RunOutcome;
    let result: WorkResult = { items: 0, failed: 0 };
    try {
      result = await work();
      outcome = result.failed === 0 ? 'success' : result.failed < result.items ? 'partial' : 'failure';
    } catch (error) {
      outcome = 'failure';
      logger.error({ poll: name, err: error }, 'poll failed');
    }
    const finished = now();
    metrics.pollDuration.set({ poll: name }, (finished - started) / 1000);
    metrics.pollRuns.inc({ poll: name, outcome });
    metrics.pollItemsFailed.set({ poll: name }, outcome === 'failure' && result.items === 0 ? 1 : result.failed);
    if (outcome !== 'failure') metrics.pollLastSuccess.set({ poll: name }, finished / 1000);
    this.last = { outcome, finishedAt: finished, durationMs: finished - started };
    if (outcome !== 'failure') this.lastSuccessAt = finished;
    logger.info({ poll: name, outcome, items: result.items, failed: result.failed, ms: finished - started }, 'poll finished');
    onFinished?.(outcome);
    return outcome;
  }
}
