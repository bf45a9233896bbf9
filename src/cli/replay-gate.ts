/**
 * What the outage gate (`remediation.safety.block_while_firing`) read when a recorded request was decided, as
 * far as the journal says it, for `remediation replay` (issue 49): replay has no Alertmanager to ask, and the
 * Alertmanager of then is not the one of now. A row the gate ran for records what it read (its `gate`:
 * store/rows.ts GateRead), and replay reads that again. For rows written before the column existed, the reading
 * is inferred from the decision: a power row denied `denied_blocked` names the alert that blocked
 * it (`power actions are blocked while Name{label="value", …} fires`); a power row decided by a guard after the
 * gate (the breaker, the cooldown, the cap, dry run, the budget, an approval, the call) passed it: nothing
 * blocking fired. Any other row says nothing of the gate: unknown, as a daemon that cannot read Alertmanager.
 */
import type { AlertmanagerAlert, AlertmanagerSilence } from '../alertmanager/client.js';
import { AlertmanagerError } from '../errors.js';
import type { Decision } from '../store/decisions.js';
import type { GateRead, JournalEntry } from '../store/rows.js';
import { alertOf, episodeKey } from '../remediation/episode.js';
import { POWER_ACTIONS } from '../remediation/types.js';

/** The gate's reading for one decision: the alerts it saw, or why they are not known. */
export type GateReading = { alerts: AlertmanagerAlert[] } | { unknown: string };

/** Decisions made by a guard after the outage gate (remediation/decide.ts GUARDS), or by the call: the gate let it pass. */
const PAST_THE_GATE: readonly (Decision | 'executing')[] = [
  'denied_circuit_open',
  'cooldown',
  'escalated',
  'dry_run',
  'denied_budget',
  'awaiting_approval',
  'approved',
  'denied_by_approver',
  'expired',
  'withdrawn',
  'executed',
  'failed',
  'unknown',
  'executing',
];

const BLOCKED = /^power actions are blocked while ([^{\s]+)\{(.*?)\} fires/;
const LABEL = /([A-Za-z_][A-Za-z0-9_]*)=("(?:[^"\\]|\\.)*")/g;

/** A recorded GateRead as the replayed Alertmanager answers it (row `id` recorded it). */
function recorded(gate: GateRead, row: JournalEntry): GateReading {
  if (gate.read === 'none_firing') return { alerts: [] };
  if (gate.read === 'unknown') return { unknown: gate.reason };
  // Labels beyond the row's bound were not kept: the alert's name alone (a gate matching on others then lets it pass).
  const labels = gate.alert.labels ?? (gate.alert.alertname === null ? {} : { alertname: gate.alert.alertname });
  const alert = { fingerprint: gate.alert.fingerprint, labels, startsAt: new Date(row.createdAt).toISOString() };
  return { alerts: [{ ...alert, state: 'active', silencedBy: [] }] };
}

/**
 * The gate's reading behind `rows` (one delivery's rows, or an approval's execution): the first power row's
 * recorded `gate`, else inferred from its decision (rows written before the column existed).
 */
export function gateReading(rows: readonly JournalEntry[]): GateReading {
  for (const row of rows) {
    if (!(POWER_ACTIONS as ReadonlySet<string>).has(row.action)) continue;
    if (row.gate !== null) return recorded(row.gate, row);
    if (row.decision === 'denied_blocked') {
      const m = BLOCKED.exec(row.message ?? '');
      if (!m) return { unknown: `journal entry ${row.id} was denied as Alertmanager could not be read` };
      const labels: Record<string, string> = { alertname: m[1]! };
      for (const [, name, value] of m[2]!.matchAll(LABEL)) labels[name!] = JSON.parse(value!) as string;
      const alert = { fingerprint: `journal-${row.id}`, labels, startsAt: new Date(row.createdAt).toISOString() };
      return { alerts: [{ ...alert, state: 'active', silencedBy: [] }] };
    }
    // The denial guard (an approver's denial held for the labels) decides before the gate, with no approver on
    // the row: such a row says nothing of the gate.
    if (row.decision === 'denied_by_approver' && row.approver === null) continue;
    if ((PAST_THE_GATE as readonly string[]).includes(row.decision)) return { alerts: [] };
  }
  return { unknown: 'the recorded decision did not read Alertmanager' };
}

/**
 * The Alertmanager a replay reads: it answers what `reading` holds (set before each replayed decision), is up
 * since the epoch, and keeps the silences written to it in memory.
 */
export function replayedAlertmanager() {
  const silences = new Map<string, AlertmanagerSilence>();
  const am = {
    reading: { unknown: 'nothing replayed yet' } as GateReading,
    async alerts(): Promise<AlertmanagerAlert[]> {
      if ('unknown' in am.reading) throw new AlertmanagerError(`replayed: ${am.reading.unknown}`);
      return am.reading.alerts;
    },
    async status() {
      return { startedAt: 0 };
    },
    async silences() {
      return [...silences.values()];
    },
    async createSilence(silence: { createdBy: string; comment: string }) {
      const id = `replayed-${silences.size + 1}`;
      silences.set(id, { id, state: 'active', createdBy: silence.createdBy, comment: silence.comment });
      return id;
    },
    async expireSilence(id: string) {
      const s = silences.get(id);
      if (s) silences.set(id, { ...s, state: 'expired' });
    },
  };
  return am;
}

/**
 * The Alertmanager a replay's verifier reads (remediation/verify.ts), so that each replayed verification settles
 * on the evidence its recorded row settled on: it lists every episode of the history as still firing, and is up
 * since the epoch. An episode that Alertmanager's list ended was journaled as a resolution (decision `resolved`,
 * delivered by `alertmanager (alert list)`), which replay delivers again at its moment: that, not this list, ends
 * it. A verification recorded `unknown` (no evidence either way at its deadline) is replayed with `noEvidence` set
 * for that moment's tick: the status cannot be read, as then. Past its deadline, a verification still listed is
 * `ineffective`, as it was recorded.
 */
export function replayedAlertList(rows: readonly JournalEntry[]) {
  const episodes = new Map<string, AlertmanagerAlert>();
  for (const r of rows) {
    const alert = alertOf(r);
    if (alert === undefined) continue;
    const { fingerprint, labels, startsAt } = alert;
    episodes.set(episodeKey(fingerprint, startsAt), { fingerprint, labels, startsAt, state: 'active', silencedBy: [] });
  }
  const list = {
    /** set for the tick of a moment a verification was recorded `unknown` */
    noEvidence: false,
    async alerts(): Promise<AlertmanagerAlert[]> {
      return [...episodes.values()];
    },
    async status() {
      if (list.noEvidence)
        throw new AlertmanagerError('replayed: the recorded verification had no evidence either way');
      return { startedAt: 0 };
    },
  };
  return list;
}
