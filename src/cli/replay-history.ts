/**
 * What `remediation replay` reads of a journal, as a timeline: the alert deliveries (the rows one delivery wrote),
 * the human settlements of the requests that awaited approval (approved, denied, withdrawn), and the operator's
 * and the `api` command's rows, which no rule decides and which are replayed as they were recorded (they count
 * toward the cooldowns, the cap, the breaker and the budget as they did; a close of the breaker closes it).
 *
 * The row an approval wrote when it ran the approved request (its `approver` named, a decision of its own) is no
 * delivery: it is the approval's outcome, shown on the delivery it settled (replayed as recorded when that
 * delivery was before the window). Rows of source `pending` (a deferred
 * firewall change applied) are left out: the replayed engine applies its own; so are the rows of the escalation
 * ladder (a later step, the episode escalated): the replayed engine climbs its own, and replay compares the two
 * (`ladderRows`). A later step asked again by a firing delivery after it expired (`reaskedStep`) is a delivery.
 * An escalation that handed a lost climb to a person (remediation/ladder.ts `lostClimbMessage`) is a ladder row
 * too: the replayed ladder, which loses nothing, climbs instead, and both show as changed.
 */
import { withdrawnByResolution } from '../remediation/episode.js';
import type { Decision } from '../store/decisions.js';
import { type JournalEntry, keptLabels, type Verification } from '../store/rows.js';
import type { AttackState, TargetDirectory } from '../remediation/types.js';
import type { WebhookAlert } from '../remediation/webhook.js';

/** One recorded delivery: the rows one alert delivery wrote (one per matching rule). */
export interface Delivery {
  rows: JournalEntry[];
  alert: WebhookAlert | undefined;
}

/** A person's settlement of a request that awaited approval; `expired` is the clock's, not a person's. */
export type Settlement = 'approved' | 'denied_by_approver' | 'withdrawn' | 'expired';
const SETTLEMENTS: readonly string[] = ['approved', 'denied_by_approver', 'withdrawn', 'expired'];
/** The settlements a person made: a decision the new rules may overturn. */
export const HUMAN_SETTLEMENTS: readonly Settlement[] = ['approved', 'denied_by_approver', 'withdrawn'];

/** What one request came to: its decision, and for one that awaited approval how it was settled and what ran. */
export interface Outcome {
  action: string;
  decision: Decision | 'executing';
  /** `at`: when it was settled, ISO-8601 (as every time of the report) */
  settlement?: { decision: Settlement; by: string | null; at: string };
  /** the decision of the approved request's execution; absent when none is known */
  execution?: Decision | 'executing';
  /**
   * how the verification of what it sent ended (store/rows.ts `verification`): its own row's, or its approval's
   * execution's; absent when it was not verified
   */
  verification?: Verification;
}

/** One entry of the timeline, oldest first. */
export type HistoryEvent =
  | { at: number; kind: 'delivery'; delivery: Delivery; index: number }
  | { at: number; kind: 'settlement'; delivery: Delivery; index: number; row: JournalEntry }
  | { at: number; kind: 'operator'; row: JournalEntry }
  /** a verification ended at its deadline (`row`, `ineffective` or `unknown`): the verifier runs at that moment */
  | { at: number; kind: 'deadline'; row: JournalEntry; next: JournalEntry[] }
  /** a person settled a ladder step that awaited approval (`row`) */
  | { at: number; kind: 'step_settlement'; row: JournalEntry };

/**
 * The row an approval wrote when it ran the request it approved: it names an approver and has a decision of its
 * own (the awaiting row names the approver too, but its decision is the settlement).
 */
export const isApprovalExecution = (r: JournalEntry): boolean =>
  r.approver !== null && r.decision !== 'awaiting_approval' && !SETTLEMENTS.includes(r.decision);

/**
 * A row the escalation ladder wrote (a later step, or the episode escalated after the last one): no delivery —
 * the replayed engine climbs its own ladder as the verifications it replays end (remediation/ladder.ts).
 */
export const madeByLadder = (r: JournalEntry): boolean =>
  r.ladderStep !== null &&
  (r.ladderStep > 0 || (r.decision === 'escalated' && r.message?.startsWith('the ladder of') === true));

/** Whether `a` and `b` are rows of one episode: the same account, fingerprint, start and labels. */
const sameEpisodeRows = (a: JournalEntry, b: JournalEntry) =>
  a.account === b.account && a.fingerprint === b.fingerprint && a.startsAt === b.startsAt && a.labels === b.labels;

/** Whether `a` and `b` are rows of one episode (account, fingerprint, start, labels) and one ladder step. */
export const sameEpisodeStep = (a: JournalEntry, b: JournalEntry) =>
  sameEpisodeRows(a, b) && a.ladderStep === b.ladderStep;

/**
 * Whether `r` is a later step asked again by a firing delivery after that step expired unapproved
 * (remediation/episode.ts `expiredStep`): a delivery's row, not the ladder's climb — replayed as that delivery. `rows`: the journal,
 * oldest first.
 */
export const reaskedStep = (r: JournalEntry, rows: readonly JournalEntry[]): boolean =>
  r.ladderStep !== null &&
  r.ladderStep > 0 &&
  r.decision !== 'escalated' &&
  !isApprovalExecution(r) &&
  rows.some((x) => x.id < r.id && x.decision === 'expired' && sameEpisodeStep(x, r));

/**
 * The rows the escalation ladder wrote (its later steps, the escalation), an approval's execution, a step asked
 * again by a delivery and a climb decided twice (a `duplicate`: another replica's, no step of its own) left out.
 * `rows`: the journal, oldest first.
 */
export const ladderRows = (rows: readonly JournalEntry[]): JournalEntry[] =>
  rows.filter((r) => madeByLadder(r) && r.decision !== 'duplicate' && !isApprovalExecution(r) && !reaskedStep(r, rows));

/** Whether `r` is `row`'s ladder's next row: the same episode (account, fingerprint, start, labels), one step on. */
export const nextStepOf = (r: JournalEntry, row: JournalEntry): boolean =>
  sameEpisodeRows(r, row) &&
  r.ladderStep !== null &&
  row.ladderStep !== null &&
  (r.decision === 'escalated' ? r.ladderStep === row.ladderStep : r.ladderStep === row.ladderStep + 1);

/** The decisions in which the request went ahead: sent, decided in dry run, or made desired firewall state. */
const WENT_AHEAD: readonly string[] = ['executed', 'failed', 'unknown', 'executing', 'dry_run', 'deferred'];

/** Whether an outcome acted (or, in dry run, would have): the execution's decision when it was approved. */
export const wentAhead = (o: Outcome | undefined): boolean =>
  o !== undefined &&
  (o.settlement
    ? o.settlement.decision === 'approved' && WENT_AHEAD.includes(o.execution ?? '')
    : WENT_AHEAD.includes(o.decision));

/** An outcome as one line shows it: `powercycle: awaiting_approval → approved by bob → executed`. */
export function outcomeText(o: Outcome): string {
  const verified = o.verification ? ` (${o.verification})` : '';
  if (!o.settlement) return `${o.action}: ${o.decision}${verified}`;
  const by = o.settlement.by ? ` by ${o.settlement.by}` : '';
  const ran = o.execution ? ` → ${o.execution}` : '';
  return `${o.action}: awaiting_approval → ${o.settlement.decision}${by}${ran}${verified}`;
}

/** `r`'s verification as an Outcome field: none when it was not verified. */
const verificationOf = (r: JournalEntry): Pick<Outcome, 'verification'> =>
  r.verification ? { verification: r.verification } : {};

/** When a settled row was settled (ms): the approval time, else its completion. */
const settledAt = (r: JournalEntry): number => r.approvedAt ?? r.completedAt ?? r.createdAt;

/** Whether `e` is the execution the approval recorded on `row` ran: its account, action, server and approval. */
export const executedBy = (e: JournalEntry, row: JournalEntry): boolean =>
  e.account === row.account &&
  e.action === row.action &&
  e.serverId === row.serverId &&
  e.approver === row.approver &&
  e.approvedAt === row.approvedAt;

/** A recorded row's outcome, its approval's execution (among `executions`) included. */
export function recordedOutcome(r: JournalEntry, executions: readonly JournalEntry[]): Outcome {
  if (!SETTLEMENTS.includes(r.decision)) return { action: r.action, decision: r.decision, ...verificationOf(r) };
  const decision = r.decision as Settlement;
  // A withdrawal names its operator as approver when it was not the requester's (an alert's request).
  const by = decision === 'withdrawn' ? (r.approver ?? r.principal) : r.approver;
  const ran = decision === 'approved' ? executions.find((e) => executedBy(e, r)) : undefined;
  return {
    action: r.action,
    decision: 'awaiting_approval',
    settlement: { decision, by, at: new Date(settledAt(r)).toISOString() },
    ...(ran ? { execution: ran.decision, ...verificationOf(ran) } : {}),
  };
}

/** Groups alert rows (oldest first) into deliveries: one alert's rows written within a second. */
function deliveries(rows: JournalEntry[]): Delivery[] {
  const out: Delivery[] = [];
  for (const row of rows) {
    const last = out.at(-1)?.rows[0];
    const same =
      last !== undefined &&
      last.fingerprint === row.fingerprint &&
      last.startsAt === row.startsAt &&
      last.alertStatus === row.alertStatus &&
      row.createdAt - last.createdAt < 1000;
    if (same) {
      out.at(-1)!.rows.push(row);
      continue;
    }
    // Labels kept as their digest (longer than the row keeps) cannot be decided again: not replayable.
    const labels = keptLabels(row.labels);
    const alert =
      labels && row.alertStatus && row.fingerprint && row.startsAt && typeof labels.alertname === 'string'
        ? ({ status: row.alertStatus, labels, fingerprint: row.fingerprint, startsAt: row.startsAt } as WebhookAlert)
        : undefined;
    out.push({ rows: [row], alert });
  }
  return out;
}

/** The timeline of `rows` (oldest first), and the approvals' executions the deliveries' outcomes name. */
export function history(rows: readonly JournalEntry[]): { events: HistoryEvent[]; executions: JournalEntry[] } {
  const executions = rows.filter(isApprovalExecution);
  const alerts = rows.filter(
    (r) => r.source === 'alert' && !isApprovalExecution(r) && (!madeByLadder(r) || reaskedStep(r, rows)),
  );
  const events: HistoryEvent[] = [];
  deliveries(alerts).forEach((delivery, index) => {
    events.push({ at: delivery.rows[0]!.createdAt, kind: 'delivery', delivery, index });
    // A withdrawal by the episode's resolution is no person's: the replayed resolved delivery makes it again.
    for (const row of delivery.rows)
      if ((HUMAN_SETTLEMENTS as readonly string[]).includes(row.decision) && !withdrawnByResolution(row))
        events.push({ at: settledAt(row), kind: 'settlement', delivery, index, row });
  });
  for (const row of rows)
    if (row.source === 'operator' || row.source === 'cli') events.push({ at: row.createdAt, kind: 'operator', row });
  // An approval's execution whose request was made before the window: no delivery nor ladder row shows it, so it
  // is replayed as recorded (it counts toward the cooldowns, the cap and the breaker as it did). One of a ladder
  // step is the replayed step's approval's own (`step_settlement`): not inserted again.
  const ladder = ladderRows(rows);
  const settles = (e: JournalEntry) => (r: JournalEntry) => recordedOutcome(r, [e]).execution !== undefined;
  for (const e of executions)
    if (e.source === 'alert' && !alerts.some(settles(e)) && !ladder.some(settles(e)))
      events.push({ at: e.createdAt, kind: 'operator', row: e });
  // A verification that ended at its deadline: the replayed verifier runs at that moment, the outage gate reading
  // what the next step's row recorded (the ladder climbs then), so that it settles on the recorded evidence. Its
  // `verifiedAt` is the deadline even when the tick that saw it ran later (remediation/verify.ts `#settle`): the ladder
  // climbed when its next row was journaled, and the replayed one climbs then too.
  for (const row of rows)
    if ((row.verification === 'ineffective' || row.verification === 'unknown') && row.verifiedAt !== null) {
      const next = rows.filter((r) => nextStepOf(r, row));
      const climbed = Math.min(...next.map((r) => r.createdAt));
      events.push({
        at: next.length > 0 ? Math.max(row.verifiedAt, climbed) : row.verifiedAt,
        kind: 'deadline',
        row,
        next,
      });
    }
  for (const row of ladder)
    if ((HUMAN_SETTLEMENTS as readonly string[]).includes(row.decision) && !withdrawnByResolution(row))
      events.push({ at: settledAt(row), kind: 'step_settlement', row });
  // Stable: at one moment a delivery comes before its own settlement, as it did.
  events.sort((a, b) => a.at - b.at);
  return { events, executions };
}

/** The world as the journal saw it, for one account, at the fake clock `now()`. */
export function journalDirectory(rows: readonly JournalEntry[], now: () => number): TargetDirectory {
  const servers = new Map<string, Set<string>>();
  const attacks: Array<{ serverId: string; ip: string; at: number }> = [];
  for (const r of rows) {
    if (r.decision === 'denied_unknown_target' || r.action === 'circuit_close') continue;
    const ips = servers.get(r.serverId) ?? new Set<string>();
    if (r.ip !== null) ips.add(r.ip);
    servers.set(r.serverId, ips);
    const attacked = (r.action === 'firewall_state' && r.value === '1') || r.action === 'firewall_sensitivity';
    if (attacked && r.source === 'alert' && r.ip !== null)
      attacks.push({ serverId: r.serverId, ip: r.ip, at: r.createdAt });
  }
  return {
    serversKnown: true,
    hasServer: (id) => servers.has(id),
    ownsIp: (id, ip) => servers.get(id)?.has(ip) ?? false,
    serversInScope: () => servers.size,
    attackState: (id): AttackState => {
      const lastEventAt = new Map<string, number>();
      for (const a of attacks)
        if (a.serverId === id && a.at <= now() && a.at >= (lastEventAt.get(a.ip) ?? 0)) lastEventAt.set(a.ip, a.at);
      return { known: true, readAt: now(), lastEventAt };
    },
  };
}
