/**
 * The checks behind the guards of decide.ts `GUARDS` (the list and its order live there, once): delivery,
 * target, attack corroboration, circuit breaker, cooldown, cap per server, budget. Each returns the denial
 * (decision and message for the journal) or undefined to let the request through. They run inside one
 * state-store transaction with the claim of the delivery key (`q` is its queries).
 */
import { STALE_AFTER_FIREWALL_PERIODS } from '../collectors/firewall.js';
import { breakerLimit, type RemediationSafety } from '../config/types.js';
import { IdempotencyMismatchError, NoLeaderError } from '../errors.js';
import { climbMarkKey } from './ladder.js';
import type { CircuitState, DesiredFirewall } from '../store/rows.js';
import type { StateQueries } from '../store/store.js';
import type { Decision } from '../store/decisions.js';
import { type ActionRequest, type AttackState, POWER_ACTIONS, type TargetDirectory } from './types.js';

/** A request stopped by a guard. */
export interface Denial {
  decision: Decision;
  message: string;
  /** a cooldown's start: the last send of the same action on the same target, ms since epoch */
  since?: number;
  /** the cap per server's count: power actions the server already had within the cap window */
  count?: number;
}

const HOUR = 3_600_000;

/**
 * Idempotency: the delivery (alert identity, or an operator's Idempotency-Key of the same account and principal)
 * was already acted on — unless it was an alert's request that expired awaiting approval, which a repeat of the
 * alert asks again. An operator's key
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
  const first = (await q.delivery(req.idempotencyKey, now)) ?? (await legacyClaim(q, req, now));
  if (first === undefined) return takeClimbMark(q, req);
  if (req.source === 'operator' && first.digest !== null && first.digest !== digest) {
    throw new IdempotencyMismatchError(
      `Idempotency-Key was already used for a different request (journal entry ${first.actionId}); use a new key for a new request`,
    );
  }
  // An alert's request that expired unapproved did nothing: the alert, delivered again while it still fires,
  // asks again through every guard (issue 40), its claim given up in this transaction. A denial stays final.
  if (req.source === 'alert' && (await q.get(first.actionId))?.decision === 'expired') {
    if (await q.releaseDelivery(req.idempotencyKey, first.actionId)) return undefined;
  }
  return { decision: 'duplicate', message: `already acted on this delivery (journal entry ${first.actionId})` };
}

/**
 * A ladder's climb (ActionRequest `climbOf`) takes the mark that its step's verification owes one (ladder.ts
 * `climbMarkKey`), in the decision's transaction, whatever the decision: a climb whose mark is gone was decided
 * already (by another replica, or a guard's denial, which stops the ladder) — a duplicate.
 */
async function takeClimbMark(q: StateQueries, req: ActionRequest): Promise<Denial | undefined> {
  if (req.climbOf === undefined || (await q.releaseDelivery(climbMarkKey(req.climbOf), req.climbOf))) return undefined;
  return {
    decision: 'duplicate',
    message: `what follows journal entry ${req.climbOf} (ineffective) was already decided`,
  };
}

/**
 * The claim an earlier version made of `req`'s operator key unscoped (ActionRequest `legacyIdempotencyKey`),
 * when the row that holds it is of the same account and principal: another principal's is not this request.
 */
async function legacyClaim(q: StateQueries, req: ActionRequest, now: number) {
  if (req.legacyIdempotencyKey === undefined) return undefined;
  const claim = await q.delivery(req.legacyIdempotencyKey);
  if (claim === undefined) return undefined;
  const row = await q.get(claim.actionId);
  if (row?.account !== req.account || row.principal !== req.principal) return undefined;
  // Seen again, as a claim of the key itself is (kept from being pruned while it is retried).
  await q.delivery(req.legacyIdempotencyKey, now);
  return claim;
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

/**
 * Cooldown per (action, target): the last upstream call of the same action on the same target. For desired
 * firewall state (`desired`), the window (its `cooldownMs`, the longest any request of the IP asked for) counts
 * from its last call or its last applied state, whichever is later.
 */
export async function checkCooldown(
  q: StateQueries,
  req: ActionRequest,
  now: number,
  desired?: Pick<DesiredFirewall, 'appliedAt' | 'cooldownMs'>,
): Promise<Denial | undefined> {
  const sent = await q.lastSent(req.account, req.action, req.serverId, req.ip ?? null);
  const last = Math.max(sent ?? -Infinity, desired?.appliedAt ?? -Infinity);
  const cooldownMs = desired?.cooldownMs ?? req.cooldownMs;
  if (last === -Infinity || now - last >= cooldownMs) return undefined;
  const target = req.ip ? `${req.serverId}/${req.ip}` : req.serverId;
  return {
    decision: 'cooldown',
    message: `${req.action} on ${target} ran ${Math.round((now - last) / 1000)}s ago; cooldown ${cooldownMs / 1000}s`,
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

const iso = (ms: number) => new Date(ms).toISOString();

/**
 * Attack corroboration of a power action (`remediation.safety.deny_power_when_attacked`): denied when an IP of
 * the server has an attack event within `attackWindowMs` before `now`, or when its attack state is unknown
 * (no state from the directory, the firewall collector off, its history failed, or read longer ago than
 * STALE_AFTER_FIREWALL_PERIODS × `firewallPeriodMs`, the period of `schedules.firewall`). The message names
 * the IP and its last event's time, or why the state is unknown. Throws NoLeaderError (no decision) when the
 * state is unknown only here: a leader that has read the history will know (AttackState `undecided`).
 */
export function checkAttack(
  targets: TargetDirectory,
  req: ActionRequest,
  safety: RemediationSafety,
  now: number,
  firewallPeriodMs: number,
): Denial | undefined {
  if (!safety.denyPowerWhenAttacked || req.force) return undefined;
  const unknown = (why: string): Denial => ({
    decision: 'denied_under_attack',
    message: `attack state of server ${req.serverId} unknown: ${why}; power actions need it (remediation.safety.deny_power_when_attacked)`,
  });
  const state = targets.attackState?.(req.serverId);
  if (state === undefined) return unknown('no attack data in this process');
  // A leader will know: no decision yet, nothing journaled (the transaction rolls back), 503 for a retry.
  throwIfUndecided(req.serverId, state);
  if (!state.known) return unknown(state.reason);
  const staleAfter = STALE_AFTER_FIREWALL_PERIODS * firewallPeriodMs;
  if (now - state.readAt > staleAfter)
    return unknown(
      `its firewall history was last read at ${iso(state.readAt)}, more than ${STALE_AFTER_FIREWALL_PERIODS} firewall periods (${staleAfter / 1000}s) ago`,
    );
  const since = now - safety.attackWindowMs;
  const recent = [...state.lastEventAt].filter(([, at]) => at >= since).sort((a, b) => b[1] - a[1]);
  if (recent.length === 0) return undefined;
  const [ip, at] = recent[0]!;
  const others = recent.length > 1 ? ` (and ${recent.length - 1} more of its IPs)` : '';
  return {
    decision: 'denied_under_attack',
    message: `server ${req.serverId} is under attack: IP ${ip} had its last attack event at ${iso(at)}, within ${safety.attackWindowMs / 1000}s${others}`,
  };
}

/**
 * Throws NoLeaderError when checkAttack could not decide on `req` here yet (a power action, the attack guard on
 * and not forced, the server's attack state `undecided`): what an approval checks before it settles its row
 * (approvals.ts), so that an approval the engine cannot decide yet is not spent.
 */
export function requireDecidable(
  targets: TargetDirectory,
  req: Pick<ActionRequest, 'action' | 'serverId' | 'force'>,
  safety: RemediationSafety,
): void {
  if (!safety.denyPowerWhenAttacked || req.force || !POWER_ACTIONS.has(req.action)) return;
  throwIfUndecided(req.serverId, targets.attackState?.(req.serverId));
}

/** Throws NoLeaderError when `state` (server `serverId`'s, as read once by the caller) is known only to a leader. */
function throwIfUndecided(serverId: string, state: AttackState | undefined): void {
  if (state !== undefined && !state.known && state.undecided)
    throw new NoLeaderError(
      `attack state of server ${serverId} not known here yet: ${state.reason}; retry later (remediation.safety.deny_power_when_attacked)`,
    );
}

// The limit is the config's (check-config warns when it can never be exceeded): one formula, in config/.
export { breakerLimit };

const CLOSE = 'an operator closes it: POST /api/v1/remediation/circuit/close';

/** The denial while `circuit` (the breaker of `account`) is open; undefined while it is closed. */
function openBreaker(account: string, circuit: CircuitState): Denial | undefined {
  if (circuit.openedAt === null) return undefined;
  return {
    decision: 'denied_circuit_open',
    message: `the circuit breaker of account ${account} is open since ${iso(circuit.openedAt)} (${circuit.message ?? ''}); power actions are denied until ${CLOSE}`,
  };
}

/**
 * The breaker of `account` read, never opened: denied while it is open. What the `api` command checks before a
 * power write (cli/api/power-guard.ts); the daemon's guard is checkCircuit, which also opens it.
 */
export async function checkCircuitOpen(q: StateQueries, account: string): Promise<Denial | undefined> {
  return openBreaker(account, await q.circuit(account));
}

/**
 * The circuit breaker of `req.account`: denied while it is open; opened (and this request denied) when the
 * request would make more distinct servers with power requests (every decision but `duplicate`) within the
 * window, since the breaker was last closed, than `breakerLimit`. Opening writes the breaker's state.
 */
export async function checkCircuit(
  q: StateQueries,
  req: ActionRequest,
  safety: RemediationSafety,
  serversInScope: number,
  now: number,
): Promise<Denial | undefined> {
  const circuit = await q.circuit(req.account);
  const open = openBreaker(req.account, circuit);
  if (open) return open;
  // Requests made after the close count (a close is a new window), none made at or before it.
  const since = Math.max(now - safety.circuitBreaker.windowMs, (circuit.closedAt ?? -1) + 1);
  const servers = new Set(await q.powerServersSince(req.account, since));
  servers.add(req.serverId);
  const limit = breakerLimit(safety, serversInScope);
  if (servers.size <= limit) return undefined;
  const shown = [...servers].slice(0, 10).join(', ');
  const reason = `power actions asked for ${servers.size} servers within ${safety.circuitBreaker.windowMs / 1000}s, more than ${limit}: ${shown}${servers.size > 10 ? ', …' : ''}`;
  await q.openCircuit(req.account, now, reason);
  return {
    decision: 'denied_circuit_open',
    message: `the circuit breaker of account ${req.account} opened: ${reason}; power actions are denied until ${CLOSE}`,
  };
}

/**
 * The cap per server: `escalated` when the server already had `maxPowerActionsPerServer` power actions sent
 * (or decided in dry run) within the cap window: a person must look at it.
 */
export async function checkCap(
  q: StateQueries,
  req: Pick<ActionRequest, 'account' | 'serverId'>,
  safety: RemediationSafety,
  now: number,
): Promise<Denial | undefined> {
  const done = await q.powerActionsOn(req.account, req.serverId, now - safety.capWindowMs);
  if (done < safety.maxPowerActionsPerServer) return undefined;
  return {
    decision: 'escalated',
    count: done,
    message: `server ${req.serverId} already had ${done} power actions within ${safety.capWindowMs / 1000}s (remediation.safety.max_power_actions_per_server: ${safety.maxPowerActionsPerServer}); nothing sent: a person must look at it`,
  };
}
