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
  failed: 'the API said no, or the request never left',
  unknown: 'the API may have acted without saying so (timeout, connection lost or crash mid-call)',
} as const;

/** A final decision; a journal row is `executing` only while its upstream call runs. */
export type Decision = keyof typeof DECISION_MEANINGS;

export const DECISIONS = Object.keys(DECISION_MEANINGS) as Decision[];
