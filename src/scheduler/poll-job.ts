/**
 * One poll job: runs its work, never two runs at once (a tick that finds the previous run still going is
 * skipped and counted), never longer than its deadline (what is unfinished then is cancelled through the
 * run's AbortSignal and counted), and reports on itself: duration, outcome, last success, failed and
 * cancelled items.
 */
import { setMaxListeners } from 'node:events';
import type { Logger } from 'pino';
import type { Metrics, RunOutcome } from '../metrics/definitions.js';
import type { WorkResult } from '../polls/poll.js';
import { byCodeUnits } from '../order.js';

/**
 * Why a run's signal was aborted: its deadline, the daemon stopping, the account's lease no longer trusted, or
 * its collector switched off by a reload.
 */
export type CancelReason = 'deadline' | 'stop' | 'lease' | 'switched_off';

const WHY: Record<Exclude<CancelReason, 'deadline'>, string> = {
  stop: 'the daemon is stopping',
  lease: 'this replica no longer leads the account',
  switched_off: 'a reload switched its collector off',
};

export interface PollJobOptions {
  name: string;
  /** the job's work; every upstream call it makes carries `signal` and it stops taking new items once aborted */
  work: (signal: AbortSignal) => Promise<WorkResult>;
  /** the account the job polls: the `account` label of its series */
  account: string;
  metrics: Pick<Metrics, 'pollRuns' | 'pollDuration' | 'pollItemsFailed' | 'pollItemsCancelled' | 'pollLastSuccess'>;
  logger: Logger;
  /** milliseconds since the epoch; injectable for tests */
  now?: () => number;
  /** a run is cancelled this many milliseconds after it started (see `runDeadlineMs`); none when undefined */
  deadlineMs?: number | (() => number);
  /**
   * the failed upstream attempts of the requests that carried the run's signal, by failure code (the upstream
   * client's `failuresOf`): a run that failed or was cut short logs them, so that a run cancelled at its
   * deadline says why (issue 38)
   */
  failuresOf?: (signal: AbortSignal) => ReadonlyMap<string, number>;
  /** called when a run ends; `problem` says why a run failed outright (the error's message, never a secret) */
  onFinished?: (outcome: RunOutcome, problem?: string) => void;
}

/** The last finished run of a job (for the status page and readiness). */
export interface LastRun {
  outcome: Exclude<RunOutcome, 'skipped'>;
  /** ms since epoch */
  finishedAt: number;
  durationMs: number;
  /** items cancelled at the deadline or by stop */
  cancelled: number;
}

export class PollJob {
  readonly name: string;
  /** the last finished run, if any */
  last: LastRun | undefined;
  /** ms since epoch of the last run with outcome success or partial */
  lastSuccessAt: number | undefined;
  #running: Promise<RunOutcome> | undefined;
  #controller: AbortController | undefined;
  #cancelReason: CancelReason | undefined;
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
    const { account, metrics, name, logger } = this.#options;
    if (this.#running) {
      metrics.pollRuns.inc({ account, poll: name, outcome: 'skipped' });
      logger.warn({ poll: name }, 'poll skipped: previous run still in progress');
      return Promise.resolve('skipped');
    }
    this.#running = this.#execute().finally(() => {
      this.#running = undefined;
    });
    return this.#running;
  }

  /** Cancels the run in progress, if any (shutdown, a lease lost, its collector switched off); resolves when it has ended. */
  async cancel(reason: CancelReason = 'stop'): Promise<void> {
    this.#abort(reason);
    await this.#running;
  }

  #abort(reason: CancelReason): void {
    if (!this.#controller || this.#controller.signal.aborted) return;
    this.#cancelReason = reason;
    this.#controller.abort();
  }

  async #execute(): Promise<RunOutcome> {
    const { account, metrics, name, logger, work, onFinished } = this.#options;
    // A function when the schedule can change (a config reload): read as each run starts.
    const deadlineMs =
      typeof this.#options.deadlineMs === 'function' ? this.#options.deadlineMs() : this.#options.deadlineMs;
    const now = this.#options.now ?? Date.now;
    const controller = new AbortController();
    this.#controller = controller;
    // Every request in flight listens on the run's signal (the worker pool and undici, one each): as many
    // as twice upstream.concurrency, above Node's leak warning at 10 but bounded by the pool's width.
    setMaxListeners(0, controller.signal);
    this.#cancelReason = undefined;
    const timer = deadlineMs === undefined ? undefined : setTimeout(() => this.#abort('deadline'), deadlineMs);
    const started = now();
    let outcome: RunOutcome;
    let result: WorkResult = { items: 0, failed: 0 };
    let problem: string | undefined;
    try {
      result = await work(controller.signal);
      const unfinished = result.failed + (result.cancelled ?? 0);
      outcome = unfinished === 0 ? 'success' : unfinished < result.items ? 'partial' : 'failure';
    } catch (error) {
      outcome = 'failure';
      // A job of one item (the server list) throws when that item was cancelled.
      if (controller.signal.aborted) result = { items: 1, failed: 0, cancelled: 1 };
      else logger.error({ poll: name, err: error }, 'poll failed');
      problem = error instanceof Error ? error.message : String(error);
    } finally {
      clearTimeout(timer);
      this.#controller = undefined;
    }
    const cancelled = result.cancelled ?? 0;
    const finished = now();
    metrics.pollDuration.set({ account, poll: name }, (finished - started) / 1000);
    metrics.pollRuns.inc({ account, poll: name, outcome });
    metrics.pollItemsFailed.set(
      { account, poll: name },
      outcome === 'failure' && result.items === 0 ? 1 : result.failed,
    );
    metrics.pollItemsCancelled.set({ account, poll: name }, cancelled);
    if (outcome !== 'failure') metrics.pollLastSuccess.set({ account, poll: name }, finished / 1000);
    this.last = { outcome, finishedAt: finished, durationMs: finished - started, cancelled };
    if (outcome !== 'failure') this.lastSuccessAt = finished;
    const failures = outcome === 'success' ? '' : formatFailures(this.#options.failuresOf?.(controller.signal));
    const fields = {
      poll: name,
      outcome,
      items: result.items,
      failed: result.failed,
      cancelled,
      ms: finished - started,
      ...(failures ? { failures } : {}),
    };
    if (cancelled > 0) {
      // Set by #abort while the work ran (the compiler's narrowing sees only the reset above).
      const reason = this.#cancelReason as CancelReason | undefined;
      const why = reason === 'deadline' ? `its deadline of ${deadlineMs} ms passed` : WHY[reason ?? 'stop'];
      const failed = failures ? `; its requests failed with ${failures}` : '; no request of it had failed';
      logger.warn(
        fields,
        `poll run cancelled: ${why}${failed}; unfinished items are counted in baremetal_poll_items_cancelled`,
      );
    } else logger.info(fields, 'poll finished');
    if (outcome === 'failure') problem ??= cancelled > 0 ? 'its run was cancelled' : `all ${result.items} items failed`;
    if (outcome === 'failure' && failures) problem = `${problem} (requests failed with ${failures})`;
    onFinished?.(outcome, problem);
    return outcome;
  }
}

/** `UND_ERR_INVALID_ARG ×16, BM_ERR_TIMEOUT ×2`: the most frequent first; empty when none. */
export function formatFailures(failures: ReadonlyMap<string, number> | undefined): string {
  if (!failures || failures.size === 0) return '';
  return [...failures]
    .sort(([a, m], [b, n]) => n - m || byCodeUnits(a, b))
    .map(([code, n]) => `${code} ×${n}`)
    .join(', ');
}
