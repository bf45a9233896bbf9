/**
 * The second signal of a firewall action's verification (issue 41): the attack data. A firewall change made on
 * an IP under attack helped when the IP had no new attack event from the call to the deadline (`verify_within`
 * after it), even while the alert that caused it still fires (an alert may outlive the attack it reported).
 * Read from the account's attack state (the same the power guard reads, collectors/account-state.ts), only at
 * or past the deadline: the quiet window must be whole, and seen by a firewall history read at or after it.
 */
import { STALE_AFTER_FIREWALL_PERIODS } from '../collectors/firewall.js';
import { ACTION_SPECS, type ActionSpec } from '../config/actions.js';
import type { JournalEntry, VerificationRecord } from '../store/rows.js';
import type { TargetDirectory } from './types.js';

/** What the attack data says of a firewall row at its deadline: verified, ineffective, or wait (undefined). */
export type AttackSignal = 'verified' | 'ineffective' | undefined;

/**
 * The attack data's answer for `row` (a firewall action still verifying, its alert still firing) at `now`, ms,
 * `deadline` its verification's deadline (≤ now): an attack event on its IP (any IP of the server for a row
 * without one) after the call — the attack went on: `ineffective`; none, in a history read at or after the
 * deadline — `verified`; none, in a history read before it — wait for the next read (undefined), unless the
 * state is unknown or stays unread for STALE_AFTER_FIREWALL_PERIODS firewall periods past the deadline: then
 * only the alert speaks, and it still fires: `ineffective`.
 */
export function attackSignal(
  targets: TargetDirectory | undefined,
  row: JournalEntry,
  deadline: number,
  now: number,
  firewallPeriodMs: number,
): AttackSignal {
  const state = targets?.attackState?.(row.serverId);
  if (state === undefined || !state.known) return 'ineffective';
  const calledAt = row.completedAt ?? row.createdAt;
  const times = row.ip !== null ? [state.lastEventAt.get(row.ip)] : [...state.lastEventAt.values()];
  if (times.some((at) => at !== undefined && at > calledAt)) return 'ineffective';
  if (state.readAt >= deadline) return 'verified';
  return now - deadline > STALE_AFTER_FIREWALL_PERIODS * firewallPeriodMs ? 'ineffective' : undefined;
}

/** Whether `row`'s action is a firewall one (the attack data is its second signal). */
export const attackVerified = (row: JournalEntry): boolean => isFirewall(row.action);

const isFirewall = (action: string): boolean =>
  (ACTION_SPECS as Record<string, ActionSpec | undefined>)[action]?.kind === 'firewall';

/**
 * Whether an ended verification was verified by the attack data rather than by its alert resolving: a firewall
 * action verified as of its deadline (what `Verifier` journals for it). Its alert had not resolved, so it has no
 * recovery time. (An alert resolving at exactly the deadline's millisecond reads the same: not observed.)
 */
export const verifiedByAttack = (r: VerificationRecord): boolean =>
  r.outcome === 'verified' && isFirewall(r.action) && r.verifiedAt === r.calledAt + r.verifyWithinMs;
