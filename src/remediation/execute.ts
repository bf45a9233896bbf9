/**
 * Execution, the mechanism under the guards (decide.ts): the row is journaled `executing` before the call
 * (engine.ts), then the upstream call is made and the row completed with what the API said: `executed` only on
 * an explicit success, `failed` when it said no, `unknown` when it may have acted without saying so (outcome.ts).
 */
import type { Logger } from 'pino';
import type { Sensitivity } from '../config/api-terms.js';
import type { ActionName } from '../config/actions.js';
import type { StateStore } from '../store/store.js';
import type { UpstreamClient } from '../upstream/client.js';
import { power } from '../upstream/dedicated.js';
import { setFirewallSensitivity, setFirewallState } from '../upstream/firewall.js';
import { failureDecision, failureOutcome } from './outcome.js';
import type { ActionDecision, ActionRequest } from './types.js';

/** What executing needs: the store, the log, the clock (ms since epoch), and how a finished decision is counted. */
export interface ExecuteDeps {
  store: StateStore;
  logger: Logger;
  now: () => number;
  /** counts a finished decision; `failedAt` (ms) marks a failed or unknown one */
  record: (action: string, result: ActionDecision, failedAt?: number) => Promise<ActionDecision>;
}

/** Runs the upstream call of journal row `id` (for `req`) and completes the row with what the API said. */
export async function execute(
  deps: ExecuteDeps,
  id: number,
  req: ActionRequest,
  call: () => Promise<{ message: string }>,
): Promise<ActionDecision> {
  const { action, principal } = req;
  const { store, logger, now, record } = deps;
  try {
    const result = await call();
    await store.complete(id, {
      decision: 'executed',
      upstreamOutcome: 'success',
      message: result.message,
      at: now(),
    });
    return record(action, { id, decision: 'executed', message: result.message });
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const decision = failureDecision(error);
    const at = now();
    await store.complete(id, { decision, upstreamOutcome: failureOutcome(error), message, at });
    logger.error(
      { action, journal_id: id, decision, principal, err: error },
      decision === 'unknown'
        ? 'remediation action outcome unknown: the API may have acted'
        : 'remediation action failed',
    );
    return record(action, { id, decision, message }, at);
  }
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

/** The upstream call of `req` through `client` (its action's entry in SENDERS). Throws UpstreamError. */
export function send(client: UpstreamClient, req: ActionRequest): Promise<{ message: string }> {
  return SENDERS[req.action](client, req);
}
