/**
 * What a poll is (`PollDefinition`) and the tools its run uses: the worker pool (`each`), `abortable`, and the
 * period and deadline of a schedule. The scheduler (scheduler/poll-job.ts) runs any definition: overlap,
 * deadline, outcome and metrics are its job.
 */
import cron from 'node-cron';
import type { Logger } from 'pino';
import type { AccountState } from '../collectors/account-state.js';
import type { JobName } from '../config/schema.js';
import type { AccountConfig, Config } from '../config/types.js';
import type { ServerScope } from '../config/scope.js';
import type { GraphStore } from '../graphs/store.js';
import type { Metrics } from '../metrics/definitions.js';
import type { EventLedger } from '../store/store.js';
import type { UpstreamClient } from '../upstream/client.js';

/** What a job's work reports: how many items it handled, how many failed, how many were cancelled. */
export interface WorkResult {
  items: number;
  failed: number;
  /** items not finished because the run's signal was aborted (deadline or stop); default 0 */
  cancelled?: number;
}

/** The configuration a poll reads, per run (a reload changes it in place). */
export type PollConfig = Pick<Config, 'graphs' | 'firewall' | 'schedules'> &
  Pick<AccountConfig, 'services'> & {
    /** the servers in scope; default every server */
    scope?: ServerScope;
    /** the polls switched on; default all */
    collectors?: Config['collectors'];
  };

/** One account's parts a poll works with; the same object for every run of every poll of the account. */
export interface PollContext {
  /** the account's name: the `account` label of every series the polls set */
  account: string;
  client: UpstreamClient;
  metrics: Metrics;
  logger: Logger;
  graphStore: GraphStore;
  /** where the event ids of the latest histories outlive the process; absent: counts restart from scratch */
  ledger?: EventLedger;
  /** read per run (a reload changes it in place); `schedules` gives each run its deadline */
  config: PollConfig;
  /** what the polls know of the account; they write it, its readers read it */
  state: AccountState;
  /** milliseconds since the epoch */
  now: () => number;
}

/** One poll: its name (its `schedules` key), its default schedule, and its run. */
export interface PollDefinition {
  name: JobName;
  /** node-cron, six fields (seconds first); the `schedules` key's default (config/schema.ts DEFAULT_SCHEDULES) */
  defaultSchedule: string;
  /**
   * One run: every upstream call carries `signal`, and once it aborts no new item is taken. Throws when its
   * one item fails (a job of one item).
   */
  run(context: PollContext, signal: AbortSignal): Promise<WorkResult>;
  /**
   * the `collectors` switch this poll follows when it is not its own name (firewall_under_attack: `firewall`);
   * a reload switching it off cancels the poll's run in progress (scheduler/jobs.ts `dropSwitchedOff`)
   */
  collector?: keyof NonNullable<Config['collectors']>;
  /** whether the account has this job (read when the account starts); absent: always */
  enabled?(config: PollConfig): boolean;
  /**
   * its collector is switched off by a reload: what it read goes at once — its part of the account's state (so
   * that nothing read before the switch is rendered when it is switched on again) and the data it holds besides
   * (graph images); absent: nothing. Its series need nothing: they follow the state (collectors/families.ts).
   */
  switchedOff?(context: PollContext): Promise<void> | void;
}

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

/**
 * The deadline of a run for a job scheduled every `periodMs`: the period less a margin (a tenth of it, at
 * most one second) so the run has ended and released its overlap guard when the next tick comes.
 */
export function runDeadlineMs(periodMs: number): number {
  return Math.max(1, periodMs - Math.min(1000, Math.floor(periodMs / 10)));
}

/**
 * Settles as `promise` does, or rejects with the signal's reason as soon as it aborts. The promise is
 * left to settle by itself (its rejection is handled): the caller stops waiting, not the work.
 */
export function abortable<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  promise.catch(() => undefined);
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error as Error);
      },
    );
  });
}

/**
 * Runs `fn` over `items` with `width` workers pulling from one cursor; counts failures. A worker pool
 * rather than one promise per item: 10,000 servers would otherwise hold 10,000 pending closures (and
 * their garbage) while the client's shared limit lets only a few through. Once `signal` aborts, no new
 * item is taken and the items in flight are no longer waited for: they and the items never started are
 * counted as cancelled (each in-flight one is passed to `onError` with the abort reason).
 */
export async function each<T>(
  items: readonly T[],
  width: number,
  signal: AbortSignal,
  fn: (item: T) => Promise<void>,
  onError: (item: T, error: unknown) => void,
): Promise<WorkResult> {
  let cursor = 0;
  let failed = 0;
  let cancelled = 0;
  const worker = async () => {
    while (cursor < items.length && !signal.aborted) {
      const item = items[cursor++]!;
      try {
        await abortable(fn(item), signal);
      } catch (error) {
        if (signal.aborted) cancelled++;
        else failed++;
        onError(item, error);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, worker));
  return { items: items.length, failed, cancelled: cancelled + items.length - cursor };
}
