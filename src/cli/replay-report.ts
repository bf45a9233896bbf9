/**
 * What `remediation replay` found, as data (`-o json`, `-o yaml`) and as lines for people: per delivery the
 * outcome then and now and its verdict, the operator's rows replayed as recorded, and the counts.
 */
import { HUMAN_SETTLEMENTS, type Outcome, outcomeText, wentAhead } from './replay-history.js';

/**
 * How a delivery's outcome now compares with then: `same`; `changed`; `overturned` when a person settled one of
 * its requests (approved, denied, withdrew it) and the new rules would do the opposite without that person —
 * act where they denied or withdrew, or not act where they approved; `not_replayable` (no labels kept).
 */
export type Verdict = 'same' | 'changed' | 'overturned' | 'not_replayable';

/** One recorded delivery, decided again. */
export interface ReplayedDelivery {
  /** ISO-8601, when it was delivered */
  at: string;
  account: string;
  alertname: string | null;
  status: 'firing' | 'resolved' | null;
  serverId: string;
  ip: string | null;
  /** the journal rows it wrote then */
  journalIds: number[];
  /** what was decided then, as the journal recorded it */
  recorded: Outcome[];
  /** what the new configuration decides; absent when not replayable */
  replayed?: Outcome[];
  /** why the new configuration refused the alert (a label its rule needs), when it did */
  refused?: string;
  verdict: Verdict;
  /** the human decisions the new rules overturn (verdict `overturned`) */
  overturned?: Array<{ action: string; decision: string; by: string | null }>;
}

/** An operator's or the `api` command's row, replayed as it was recorded. */
export interface ReplayedOperatorRow {
  at: string;
  journalId: number;
  account: string;
  source: string;
  principal: string | null;
  action: string;
  /** null for a row of no server (a breaker's close): no empty-string ids */
  serverId: string | null;
  decision: string;
}

/**
 * One row of an escalation ladder (a later step, or the episode escalated), then and now: the recorded row beside
 * the replayed row of the same episode and step, or either alone when only one ladder wrote it (`changed`).
 */
export interface ReplayedLadderRow {
  /** ISO-8601, when it was written (the recorded row's, else the replayed one's) */
  at: string;
  account: string;
  alertname: string | null;
  serverId: string;
  /** the step of its ladder, 0-based (an escalation carries the last step's) */
  step: number;
  /** the episode escalated to a person after this step */
  escalated: boolean;
  /** the recorded row; absent when only the replayed ladder wrote it */
  journalId?: number;
  recorded?: Outcome;
  /** absent when the replayed ladder did not come to it */
  replayed?: Outcome;
  verdict: 'same' | 'changed';
}

export interface ReplayReport {
  deliveries: ReplayedDelivery[];
  operatorRows: ReplayedOperatorRow[];
  /** the ladders' later steps and escalations, then and now */
  ladder: ReplayedLadderRow[];
  counts: { same: number; changed: number; overturned: number; notReplayable: number };
  ladderCounts: { same: number; changed: number };
}

/** The human decisions of `recorded` that `replayed` overturns (Verdict). */
export function overturned(recorded: Outcome[], replayed: Outcome[]): NonNullable<ReplayedDelivery['overturned']> {
  const out: NonNullable<ReplayedDelivery['overturned']> = [];
  for (const t of recorded) {
    const human = t.settlement;
    if (!human || !HUMAN_SETTLEMENTS.includes(human.decision)) continue;
    const n = replayed.find((o) => o.action === t.action);
    // Asked again and settled the same way: the person decided under the new rules too.
    if (n?.settlement?.decision === human.decision) continue;
    if (wentAhead(n) !== (human.decision === 'approved'))
      out.push({ action: t.action, decision: human.decision, by: human.by });
  }
  return out;
}

/** The text of a list of outcomes. */
export const outcomesText = (outcomes: Outcome[], refused?: string): string =>
  refused ? `refused: ${refused}` : outcomes.length > 0 ? outcomes.map(outcomeText).join(', ') : 'no rule matches';

/** The lines for people: one per delivery and operator row, oldest first, then the counts and the changes. */
export function reportText(report: ReplayReport): string {
  const lines: Array<{ at: string; text: string }> = [];
  const transitions = new Map<string, number>();
  for (const d of report.deliveries) {
    const target = `server ${d.serverId}${d.ip ? ` ip ${d.ip}` : ''}`;
    const then = outcomesText(d.recorded);
    if (d.replayed === undefined) {
      lines.push({
        at: d.at,
        text: `${d.at} ${d.alertname} ${target} (journal ${d.journalIds[0]}): ${then}; not replayable (no labels kept)`,
      });
      continue;
    }
    const now = outcomesText(d.replayed, d.refused);
    const mark =
      d.verdict === 'overturned'
        ? `  (overturns ${d.overturned!.map((o) => `${o.action} ${o.decision}${o.by ? ` by ${o.by}` : ''}`).join(', ')})`
        : d.verdict === 'changed'
          ? '  (changed)'
          : '';
    if (d.verdict !== 'same') transitions.set(`${then} -> ${now}`, (transitions.get(`${then} -> ${now}`) ?? 0) + 1);
    lines.push({ at: d.at, text: `${d.at} ${d.alertname} ${d.status} ${target}: then ${then}; now ${now}${mark}` });
  }
  for (const l of report.ladder) {
    const what = l.escalated ? `escalation after step ${l.step + 1}` : `ladder step ${l.step + 1}`;
    const then = l.recorded ? outcomesText([l.recorded]) : 'not reached';
    const now = l.replayed ? outcomesText([l.replayed]) : 'not reached';
    if (l.verdict !== 'same') transitions.set(`${then} -> ${now}`, (transitions.get(`${then} -> ${now}`) ?? 0) + 1);
    const journal = l.journalId === undefined ? '' : ` (journal ${l.journalId})`;
    lines.push({
      at: l.at,
      text: `${l.at} ${l.alertname} ${what} server ${l.serverId}${journal}: then ${then}; now ${now}${l.verdict === 'changed' ? '  (changed)' : ''}`,
    });
  }
  for (const r of report.operatorRows) {
    const target = r.serverId ? ` server ${r.serverId}` : '';
    lines.push({
      at: r.at,
      text: `${r.at} ${r.source} ${r.principal ?? '-'} ${r.action}${target} (journal ${r.journalId}): ${r.decision}; replayed as recorded`,
    });
  }
  lines.sort((a, b) => (a.at < b.at ? -1 : a.at > b.at ? 1 : 0));
  const c = report.counts;
  const total = c.same + c.changed + c.overturned + c.notReplayable;
  const summary = [
    '',
    `${total} deliveries: ${c.same} same, ${c.changed} changed, ${c.overturned} overturn a human decision, ${c.notReplayable} not replayable`,
    ...(report.ladder.length > 0
      ? [
          `${report.ladder.length} ladder rows: ${report.ladderCounts.same} same, ${report.ladderCounts.changed} changed`,
        ]
      : []),
    ...(report.operatorRows.length > 0 ? [`${report.operatorRows.length} operator rows replayed as recorded`] : []),
    ...[...transitions].sort((a, b) => b[1] - a[1]).map(([t, n]) => `  ${n}× ${t}`),
  ];
  return `${[...lines.map((l) => l.text), ...summary].join('\n')}\n`;
}
