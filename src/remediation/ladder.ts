/**
 * The escalation ladder (a rule's `steps`, issue 41), as medik8s's escalating remediations: when a step's
 * verification ends `ineffective`, the next step is asked for as a new request of the same alert episode,
 * through every guard (a guard's denial stops the ladder with that decision); after the last step — or when the
 * rule was changed or removed since, so the next step is not known as it was — the episode is `escalated` to a
 * person, the message naming the rule and the steps tried. It says what follows (`nextStep`); the engine's tick,
 * having ended the verification (verify.ts), decides it.
 */
import type { RemediationRule } from '../config/types.js';
import { type JournalEntry, journalRow, type NewEntry } from '../store/rows.js';
import { makeRequest, ruleDigest } from './request.js';
import type { ActionRequest } from './types.js';

/**
 * What follows `row` (a ladder's step) that ended ineffective: the next step as a new request of the same
 * episode (`request`, for the engine to decide through every guard), or the episode handed to a person
 * (`escalate`, the message naming the ladder); undefined for a row of no ladder. Pure: the engine acts on it.
 */
export type NextStep = { request: ActionRequest } | { escalate: string } | undefined;

/** `row`'s NextStep under today's `rules` (a reload may change them). */
export function nextStep(rules: readonly RemediationRule[], row: JournalEntry): NextStep {
  if (row.ladderStep === null || row.ruleDigest === null) return undefined;
  const rule = rules.find((r) => r.steps !== undefined && ruleDigest(r) === row.ruleDigest);
  const which = `the ladder of remediation.rules[${row.ruleIndex}] (${row.alertname})`;
  if (rule === undefined)
    return {
      escalate: `${which} was changed or removed after step ${row.ladderStep + 1} (${row.action}, journal entry ${row.id}) was ineffective: nothing more is sent, a person must look at it`,
    };
  const steps = rule.steps!;
  if (row.ladderStep + 1 < steps.length) return { request: makeRequest({ kind: 'ladder', row, steps }) };
  return {
    escalate: `${which}: every step was ineffective (${steps.map((s) => s.action).join(' → ')}; the last, journal entry ${row.id}): nothing more is sent, a person must look at it`,
  };
}

/** The row that hands `from`'s episode to a person at `now` (ms): decision `escalated`, `message` naming the ladder. */
export function escalationRow(from: JournalEntry, now: number, message: string): NewEntry {
  const { account, source, action, serverId, alertname, fingerprint, startsAt, labels, alertStatus, principal } = from;
  return journalRow({
    ...{ account, source, action, serverId, alertname, fingerprint, startsAt, labels, alertStatus, principal },
    ...{ ruleIndex: from.ruleIndex, ruleDigest: from.ruleDigest, ladderStep: from.ladderStep },
    createdAt: now,
    decision: 'escalated',
    message,
  });
}
