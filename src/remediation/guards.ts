/**
 * The guards a remediation request passes before any upstream call, in the order the engine applies
 * them (see engine.ts: delivery, target, then — for actions other than firewall state — cooldown, dry run, budget). Each returns the denial (decision and message for the journal) or undefined to let it through.
 * The engine runs them and the claim of the delivery key inside one state-store transaction (`q` is its queries).
 */
import { IdempotencyMismatchError } from '../errors.js';
import type { StateQueries } from '../store/store.js';
import type { Decision } from '../store/decisions.js';
import type { ActionRequest, TargetDirectory } from './types.js';

/** A request stopped by a guard. */
export interface Denial {
  decision: Decision;
  message: string;
  /** a cooldown's start: the last send of the same action on the same target, ms since epoch */
  since?: number;
}

const HOUR = 3_600_000;

/**
 * Idempotency: the delivery (alert identity or Idempotency-Key) was already acted on. An operator's key
 * reused for a request with another action, target or value (`digest`) throws IdempotencyMismatchError:
 * a mistyped retry must not look done. (An alert's key names its fingerprint, so its target cannot change.)
 */
export async function checkDelivery(
  q: StateQueries,
  req: ActionRequest,
  digest: string,
  now: number,
): Promise<Denial | undefined> {
  if (req.idempotencyKey === undefined) return undefined;
  const first = await q.delivery(req.idempotencyKey, now);
  if (first === undefined) return undefined;
  if (req.source === 'operator' && first.digest !== null && first.digest !== digest) {
    throw new IdempotencyMismatchError(
      `Idempotency-Key was already used for a different request (journal entry ${first.actionId}); use a new key for a new request`,
    );
  }
  return { decision: 'duplicate', message: `already acted on this delivery (journal entry ${first.actionId})` };
}

/** The server is in the latest server list, and the IP (if any) belongs to it unless the rule says otherwise. */
export function checkTarget(targets: TargetDirectory, req: ActionRequest): Denial | undefined {
  if (targets.outOfScope?.(req.serverId))
    return {
      decision: 'denied_unknown_target',
      message: `server ${req.serverId} is out of scope (servers.include / servers.exclude): the daemon does not act on it`,
    };
  if (!targets.hasServer(req.serverId))
    return { decision: 'denied_unknown_target', message: `server ${req.serverId} is not in the latest server list` };
  if (req.ip !== undefined && req.requireOwnedIp && !targets.ownsIp(req.serverId, req.ip)) {
    return { decision: 'denied_unknown_target', message: `IP ${req.ip} does not belong to server ${req.serverId}` };
  }
  return undefined;
}

/** Cooldown per (action, target): the last upstream call of the same action on the same target. */
export async function checkCooldown(q: StateQueries, req: ActionRequest, now: number): Promise<Denial | undefined> {
  const last = await q.lastSent(req.account, req.action, req.serverId, req.ip ?? null);
  if (last === undefined || now - last >= req.cooldownMs) return undefined;
  const target = req.ip ? `${req.serverId}/${req.ip}` : req.serverId;
  return {
    decision: 'cooldown',
    message: `${req.action} on ${target} ran ${Math.round((now - last) / 1000)}s ago; cooldown ${req.cooldownMs / 1000}s`,
    since: last,
  };
}

/** Upstream calls still allowed to `account` in the rolling hour before `now` (the budget is per account). */
export async function budgetLeft(
  q: StateQueries,
  account: string,
  budgetPerHour: number,
  now: number,
): Promise<number> {
  return budgetPerHour - (await q.sentSince(account, now - HOUR));
}
