/**
 * An account's poll jobs: one `PollJob` per poll of src/polls/index.ts `POLLS` that the account has (a poll's
 * `enabled`), each running its definition with the account's `PollContext` under the job's overlap guard and
 * deadline. What the polls learn goes to the account's state (collectors/account-state.ts), not here.
 */
import type { JobName } from '../config/schema.js';
import type { RunOutcome } from '../metrics/definitions.js';
import { POLLS } from '../polls/index.js';
import { type PollContext, type PollDefinition, runDeadlineMs, schedulePeriodMs } from '../polls/poll.js';
import { applyScope } from '../polls/servers.js';
import { leaseGated } from './lease-gate.js';
import { PollJob } from './poll-job.js';

/** The polls, each as any definition (POLLS keeps each one's own type for its compile-time check). */
const DEFINITIONS: readonly PollDefinition[] = POLLS;

/** The account's parts the polls work with (`now` defaults to `Date.now`), and who learns each run's end. */
export type PollJobsDeps = Omit<PollContext, 'now'> & {
  now?: () => number;
  /**
   * with the accounts shared among replicas: whether this replica still leads the account, asked before each
   * request of a poll (lease-gate.ts); when it says false the request is not sent and the runs are cancelled
   */
  leads?: () => boolean;
  /**
   * a run ended (not a tick skipped for overlap); `run.afterServerList`: it began once the account had read a
   * server list (AccountState `serversKnown`): before it, a run has no server to poll
   */
  onFinished?: (
    job: JobName,
    outcome: RunOutcome,
    problem: string | undefined,
    run: { afterServerList: boolean },
  ) => void;
};

/** The poll jobs of one account. */
export class PollJobs {
  /**
   * the jobs; `firewall_under_attack` only when its schedule differs from `firewall`'s (otherwise the
   * firewall job polls every service)
   */
  readonly jobs: Map<JobName, PollJob>;
  readonly #context: PollContext;

  constructor(deps: PollJobsDeps) {
    const { onFinished, leads, ...parts } = deps;
    const client = leads ? leaseGated(parts.client, leads, () => this.#cancel()) : parts.client;
    const context: PollContext = { ...parts, client, now: deps.now ?? Date.now };
    this.#context = context;
    this.jobs = new Map(
      DEFINITIONS.filter((poll) => poll.enabled?.(deps.config) ?? true).map((poll) => {
        // Whether the job's run in progress began after a server list was read: one variable per job, whose
        // runs never overlap (PollJob's guard).
        let afterServerList = false;
        const job = new PollJob({
          name: poll.name,
          work: (signal) => {
            afterServerList = context.state.serversKnown;
            return poll.run(context, signal);
          },
          account: deps.account,
          metrics: deps.metrics,
          logger: deps.logger,
          now: context.now,
          // Read per run: a config reload may change the schedule.
          deadlineMs: () => runDeadlineMs(schedulePeriodMs(deps.config.schedules[poll.name])),
          failuresOf: (signal) => context.client.failuresOf(signal),
          onFinished: (outcome, problem) => onFinished?.(poll.name, outcome, problem, { afterServerList }),
        });
        return [poll.name, job] as const;
      }),
    );
  }

  /** Cancels every run in progress: the account's lease is no longer trusted (they are not waited for). */
  #cancel(): void {
    for (const job of this.jobs.values()) void job.cancel('lease');
  }

  /** Runs one job now (through its overlap guard); `skipped` for a job that does not exist (see `jobs`). */
  run(job: JobName): Promise<RunOutcome> {
    return this.jobs.get(job)?.run() ?? Promise.resolve('skipped');
  }

  /**
   * Applies the scope in force to the latest server list again, without a request (a reload changed the
   * scope; polls/servers.ts `applyScope`).
   */
  applyScope(): Promise<void> {
    return applyScope(this.#context);
  }

  /**
   * Applies the collectors switched off, at once (a reload): for graphs, the held images are dropped without
   * waiting for the job's next run. Their series are not rendered from then on (collectors/families.ts). A run
   * of theirs in progress is cancelled and waited for first: its replies would write into what is dropped.
   */
  async dropSwitchedOff(): Promise<void> {
    const collectors = this.#context.config.collectors;
    const off = DEFINITIONS.filter(
      (poll) => collectors?.[(poll.collector ?? poll.name) as keyof typeof collectors] === false,
    );
    await Promise.all(off.map((poll) => this.jobs.get(poll.name)?.cancel('switched_off')));
    for (const poll of off) await poll.switchedOff?.(this.#context);
  }
}
