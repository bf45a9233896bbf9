/**
 * The one way out: every upstream call the daemon or the `api` command makes for a journaled row — a request
 * the guards allowed (engine.ts), a desired firewall change that came due (desired-firewall.ts), the console
 * descriptor (operator.ts), a CLI write (cli/api/write.ts) — is made by `callAndComplete`: the row was written
 * `executing` before the call; the call is made; its reply judged (`executed` only on an explicit success,
 * `failed` when the API said no, `unknown` when it may have acted without saying so: outcome.ts); the row
 * completed with what the API said. `execute` adds what the daemon does with the outcome: the log line and the
 * count.
 */
import type { Logger } from 'pino';
import type { Sensitivity } from '../config/api-terms.js';
import type { ActionName } from '../config/actions.js';
import type { Decision } from '../store/decisions.js';
import type { StateStore } from '../store/store.js';
import type { UpstreamClient } from '../upstream/client.js';
import { power } from '../upstream/dedicated.js';
import { setFirewallSensitivity, setFirewallState } from '../upstream/firewall.js';
import { failureDecision, failureOutcome } from './outcome.js';
import type { ActionDecision, ActionRequest } from './types.js';

/** How a journal row is completed after its call; `at` in ms since epoch. */
export interface Completion {
  decision: Decision;
  upstreamOutcome: string;
  message: string;
  at: number;
}

/** How a failed call is judged: its decision and the journal's `upstream_outcome`. */
export type Judge = (error: unknown) => { decision: Decision; upstreamOutcome: string };

/** The default judgement: `unknown` when the API may have acted, else `failed` (outcome.ts). */
export const judgeWrite: Judge = (error) => ({
  decision: failureDecision(error),
  upstreamOutcome: failureOutcome(error),
});

/** One call of a journaled row: the call, how its reply reads, how a failure is judged, how the row is completed. */
export interface Call<T> {
  call: () => Promise<T>;
  /** the row's message on success */
  message: (result: T) => string;
  /** default `judgeWrite` */
  judge?: Judge;
  /** completes the row (e.g. `store.complete(id, …)`; desired firewall state saves its own state in the same transaction) */
  complete: (done: Completion) => Promise<void>;
  /** ms since epoch */
  now: () => number;
}

/**
 * Makes `c.call()`, judges it and completes the row: the completion and the result, or the error. Never throws
 * for the call's failure (it is the completion); throws what `complete` throws (JournalError).
 */
export async function callAndComplete<T>(
  c: Call<T>,
): Promise<{ done: Completion; result: T } | { done: Completion; error: unknown }> {
  let outcome: { done: Completion; result: T } | { done: Completion; error: unknown };
  try {
    const result = await c.call();
    outcome = {
      result,
      done: { decision: 'executed', upstreamOutcome: 'success', message: c.message(result), at: c.now() },
    };
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    outcome = { error, done: { ...(c.judge ?? judgeWrite)(error), message, at: c.now() } };
  }
  await c.complete(outcome.done);
  return outcome;
}

/** What executing needs: the store, the log, the clock (ms since epoch), and how a finished decision is counted. */
export interface ExecuteDeps {
  store: StateStore;
  logger: Logger;
  now: () => number;
  /** counts a finished decision; `failedAt` (ms) marks a failed or unknown one */
  record: (action: string, result: ActionDecision, failedAt?: number) => Promise<ActionDecision>;
}

/** A call the daemon makes for journal row `id`: counted under `action`, logged with `log`'s fields. */
export interface Execution<T> extends Omit<Call<T>, 'complete' | 'now'> {
  id: number;
  action: string;
  /** fields of the error line logged when the call failed or its outcome is unknown */
  log: Record<string, unknown>;
  /** default `store.complete(id, done)`; may return more fields for the error line */
  complete?: (done: Completion) => Promise<Record<string, unknown> | undefined>;
  /** the error line's message when the call failed (default: remediation action failed) */
  failedMessage?: string;
}

/**
 * Makes the call of an Execution through `callAndComplete`, logs a failed or unknown outcome, and counts the
 * decision. Returns the decision with the call's result or error. Throws JournalError.
 */
export async function execute<T>(
  deps: ExecuteDeps,
  x: Execution<T>,
): Promise<ActionDecision & ({ result: T } | { error: unknown })> {
  const { store, logger, now, record } = deps;
  let extra: Record<string, unknown> | undefined;
  const outcome = await callAndComplete({
    ...x,
    now,
    complete: async (done) => {
      if (x.complete) extra = await x.complete(done);
      else await store.complete(x.id, done);
    },
  });
  const { decision, message, at } = outcome.done;
  const failed = decision === 'failed' || decision === 'unknown';
  if (failed)
    logger.error(
      {
        action: x.action,
        journal_id: x.id,
        decision,
        ...x.log,
        ...extra,
        err: 'error' in outcome ? outcome.error : undefined,
      },
      decision === 'unknown'
        ? 'remediation action outcome unknown: the API may have acted'
        : (x.failedMessage ?? 'remediation action failed'),
    );
  const counted = await record(x.action, { id: x.id, decision, message }, failed ? at : undefined);
  return { ...counted, ...outcome };
}

/** What a sender reads of a request: its target and value. */
export type SendTarget = Pick<ActionRequest, 'serverId' | 'ip' | 'value'>;

/**
 * How each action is sent upstream: one entry per action of config/actions.ts (`ACTION_SPECS`; a `Record` over
 * its names, so an action without a sender does not compile). The API's reply is judged by the upstream
 * function (its decoder: success, or an UpstreamError whose `outcomeUnknown` says whether it may have acted).
 * The requests decided here and the desired firewall state that comes due (desired-firewall.ts) both leave
 * through these. Throws UpstreamError.
 */
export const SENDERS: Record<ActionName, (client: UpstreamClient, req: SendTarget) => Promise<{ message: string }>> = {
  powercycle: (client, req) => power(client, 'powercycle', req.serverId),
  poweron: (client, req) => power(client, 'poweron', req.serverId),
  poweroff: (client, req) => power(client, 'poweroff', req.serverId),
  firewall_state: (client, req) =>
    setFirewallState(client, { serverId: req.serverId, ip: req.ip!, state: req.value as '0' | '1' }),
  firewall_sensitivity: (client, req) =>
    setFirewallSensitivity(client, { serverId: req.serverId, ip: req.ip!, sensitivity: req.value as Sensitivity }),
};
