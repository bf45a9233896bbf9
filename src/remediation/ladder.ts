/**
 * The escalation ladder (a rule's `steps`, issue 41), as medik8s's escalating remediations: when a step's
 * verification ends `ineffective`, the next step is asked for as a new request of the same alert episode,
 * through every guard (a guard's denial stops the ladder with that decision); after the last step — or when the
 * rule was changed or removed since, so the next step is not known as it was — the episode is `escalated` to a
 * person, the message naming the rule and the steps tried. Run by whoever ends the verification (verify.ts).
 */
import type { RemediationRule } from '../config/types.js';
import { type JournalEntry, journalRow, type NewEntry } from '../store/rows.js';
import { makeRequest, ruleDigest } from './request.js';
import type { ActionDecision, ActionRequest } from './types.js';

export interface LadderDeps {
  /** today's rules (a reload may change them) */
  rules: () => readonly RemediationRule[];
  /** decides on a request (the engine's, every guard) */
  request: (req: ActionRequest) => Promise<ActionDecision>;
  /** journals `row`'s episode as escalated with `message` */
  escalate: (row: JournalEntry, message: string) => Promise<void>;
}

/** After `row` (a ladder's step) ended ineffective: the next step's decision, or undefined once escalated. */
export async function climb(deps: LadderDeps, row: JournalEntry): Promise<ActionDecision | undefined> {
  if (row.ladderStep === null || row.ruleDigest === null) return undefined;
  const rule = deps.rules().find((r) => r.steps !== undefined && ruleDigest(r) === row.ruleDigest);
  const which = `the ladder of remediation.rules[${row.ruleIndex}] (${row.alertname})`;
  if (rule === undefined) {
    await deps.escalate(
      row,
      `${which} was changed or removed after step ${row.ladderStep + 1} (${row.action}, journal entry ${row.id}) was ineffective: nothing more is sent, a person must look at it`,
    );
    return undefined;
  }
  const steps = rule.steps!;
  if (row.ladderStep + 1 < steps.length) return deps.request(makeRequest({ kind: 'ladder', row, steps }));
  await deps.escalate(
    row,
    `${which}: every step was ineffective (${steps.map((s) => s.action).join(' → ')}; the last, journal entry ${row.id}): nothing more is sent, a person must look at it`,
  );
  return undefined;
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
