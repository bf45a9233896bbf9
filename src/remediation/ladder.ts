/**
 * The escalation ladder (a rule's `steps`, issue 41), as medik8s's escalating remediations: when a step's
 * verification ends `ineffective`, the next step is asked for as a new request of the same alert episode,
 * through every guard (a guard's denial stops the ladder with that decision); after the last step — or when the
 * rule was changed or removed since, so the next step is not known as it was — the episode is `escalated` to a
 * person, the message naming the rule and the steps tried. It says what follows (`nextStep`); the engine's tick,
 * having ended the verification (verify.ts), decides it.
 *
 * That a climb is owed is a fact in the store, not an inference from the journal: the verifier marks a step's
 * row (`climbMarkKey`, a delivery key) before it settles it `ineffective`, and whatever decides the climb takes
 * the mark in the same transaction — the next step's decision (any, a guard's denial included: guards.ts
 * `checkDelivery`) or the escalation. A mark still held means the climb was lost (the climb failed, or the
 * process stopped or lost the lead between the two): the leader hands the episode to a person
 * (`lostClimbMessage`, lost-climbs.ts) — never a step sent late, when the on-call, paged since the step's
 * silence expired, may be at the server. Only a mark is evidence: a ladder whose later rows the journal pruned
 * holds none, and a mark pruned with the delivery keys leaves nothing to follow.
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
  if (row.ladderStep + 1 < steps.length) return { request: makeRequest({ kind: 'ladder', row, steps, climb: true }) };
  return {
    escalate: `${which}: every step was ineffective (${steps.map((s) => s.action).join(' → ')}; the last, journal entry ${row.id}): nothing more is sent, a person must look at it`,
  };
}

/** How every climb mark's delivery key begins. */
export const CLIMB_MARK_PREFIX = 'climb:';

/** The delivery key that marks the climb journal row `rowId` (a ladder step settled `ineffective`) is owed. */
export const climbMarkKey = (rowId: number): string => `${CLIMB_MARK_PREFIX}${rowId}`;

/**
 * How long after a climb was marked owed the leader finds it lost, ms: a tick climbs right after it settles
 * (engine.ts `#verify`); a mark this old that another replica left (it stopped leading in between) was left by
 * a climb that did not happen.
 */
export const CLIMB_GRACE_MS = 60_000;

/**
 * The message of the escalation that hands `row`'s episode to a person because its climb was lost: `row` was
 * marked `ineffective` at `markedAt` (ms) and nothing decided what follows by `now` (ms).
 */
export function lostClimbMessage(row: JournalEntry, markedAt: number, now: number): string {
  const iso = (ms: number) => new Date(ms).toISOString();
  return `the ladder of remediation.rules[${row.ruleIndex}] (${row.alertname}): step ${row.ladderStep! + 1} (${row.action}, journal entry ${row.id}) was ineffective at ${iso(markedAt)} and what follows it was not decided by ${iso(now)} (the climb failed, or the daemon stopped or lost the lead in between): nothing is sent so late, a person must look at it`;
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
