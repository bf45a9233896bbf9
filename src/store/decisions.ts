/**
 * The decisions a remediation request can end in: journaled (`actions.decision`), counted in
 * `baremetal_action_requests_total{decision}` and listed in docs/remediation.md. One list; the metric help text and
 * a docs test are derived from it.
 */

/** Every decision, in the order the docs list them, with what it means. */
export const DECISION_MEANINGS = {
  executed: 'the API said it acted',
  dry_run: 'every guard allowed it; nothing was sent (remediation.dry_run)',
  denied_unknown_target: 'the server is not in the latest server list, or the IP is not its own',
  denied_under_attack:
    'a power action for a server with attack events within remediation.safety.attack_window, or whose attack state is unknown',
  denied_circuit_open: "the account's circuit breaker is open (too many servers with power actions in its window)",
  denied_blocked:
    'a power action while an alert matching remediation.safety.block_while_firing is in Alertmanager (an outage), or while Alertmanager cannot be read',
  escalated:
    "the server had remediation.safety.max_power_actions_per_server power actions in cap_window, or every step of a rule's ladder was ineffective; nothing was sent",
  circuit_closed: "an operator closed the account's circuit breaker (POST /api/v1/remediation/circuit/close)",
  denied_budget: 'the hourly budget is used up',
  cooldown: 'the same action ran on the same target within its cooldown',
  duplicate: 'this delivery (alert or Idempotency-Key) was already acted on, or the IP is already in that state',
  deferred: 'a firewall-state change waits for its hold, the 2-minute window or a retry',
  cancelled: 'a pending firewall-state change whose remediation rule a configuration reload removed; nothing was sent',
  awaiting_approval:
    'every guard allowed it and it needs a second operator (require_approval); nothing is sent until one approves',
  approved: 'a second operator approved it; the guards ran again and the row named in the message is the execution',
  denied_by_approver: 'a second operator denied it; nothing was sent',
  expired: 'no operator approved or denied it within remediation.approval_timeout; nothing was sent',
  withdrawn:
    'its requester withdrew it while it awaited approval (POST /api/v1/actions/{id}/withdraw); nothing was sent',
  resolved:
    'its alert episode resolved (a resolved delivery of the same account, fingerprint, start and labels, journaled once), or this request is of an episode that had: what awaited approval is withdrawn, nothing is sent for it any more',
  failed: 'the API said no, or the request never left',
  unknown: 'the API may have acted without saying so (timeout, connection lost or crash mid-call)',
} as const;

/** A final decision; a journal row is `executing` only while its upstream call runs. */
export type Decision = keyof typeof DECISION_MEANINGS;

export const DECISIONS = Object.keys(DECISION_MEANINGS) as Decision[];

/**
 * Decisions in which a guard refused the request: nothing was sent, and the same request later may act. Not
 * `duplicate`: for an approval's execution (its delivery key is claimed once) it means the IP is already in the
 * state asked for, which is what was wanted.
 */
export const GUARD_DENIALS: readonly Decision[] = [
  'denied_unknown_target',
  'denied_under_attack',
  'denied_circuit_open',
  'denied_blocked',
  'escalated',
  'denied_budget',
  'cooldown',
];

/** Decisions in which the API was called, or may have been (as rows.ts SENT_DECISIONS_SQL, once completed). */
export const SENT: readonly Decision[] = ['executed', 'failed', 'unknown'];
