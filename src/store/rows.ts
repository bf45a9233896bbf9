/**
 * The journal's rows as the rest of the code sees them, and the mapping from database rows (SQLite's, and
 * PostgreSQL's with BIGINT as strings) to them. Times are Unix milliseconds.
 */
import { createHash } from 'node:crypto';
import type { SQLInputValue } from 'node:sqlite';
import { POWER_ACTIONS } from '../config/actions.js';
import type { Decision } from './decisions.js';
import { byCodeUnits } from '../order.js';

/** A journal row. Times are Unix milliseconds. `decision` is `executing` while the upstream call runs. */
export interface JournalEntry {
  id: number;
  /** the account whose server this is (server ids are per account) */
  account: string;
  createdAt: number;
  completedAt: number | null;
  /** `alert` (Alertmanager), `operator` (action endpoint or console download), `pending` (a deferred firewall change applied) or `cli` (`api` command) */
  source: 'alert' | 'operator' | 'pending' | 'cli';
  action: string;
  serverId: string;
  ip: string | null;
  /** firewall state or sensitivity asked for */
  value: string | null;
  alertname: string | null;
  fingerprint: string | null;
  startsAt: string | null;
  decision: Decision | 'executing';
  /** `success` or the upstream error code */
  upstreamOutcome: string | null;
  message: string | null;
  /**
   * who asked: the webhook principal's name (alerts), the operator principal's, `cli:<login name>` (`api`
   * command), the requester of a deferred change (source `pending`); null on rows written before principals
   */
  principal: string | null;
  /** why, as the operator said it (`"reason"`, at most 200 characters); null when none was given */
  reason: string | null;
  /** the principal that approved or denied the request (require_approval); null when none did */
  approver: string | null;
  /**
   * why, as the approver or denier said it (`"reason"` of approve and deny, at most 200 characters), on the
   * awaiting row and on an approval's execution; null when none was given (`reason` stays the requester's)
   */
  approverReason: string | null;
  /** when it was approved or denied (ms); null otherwise, an expired row included */
  approvedAt: number | null;
  /**
   * An alert's labels as JSON (`labelsJson`: at most MAX_LABELS_JSON characters, else their SHA-256 digest),
   * what its episode is matched on and `remediation replay` decides on again; null for other sources and for
   * rows written before they were kept
   */
  labels: string | null;
  /** an alert's status as delivered (`firing`, `resolved`); null as `labels` */
  alertStatus: 'firing' | 'resolved' | null;
  /**
   * an operator's power call past the attack guard (`"force": true`): its approval decides on it forced too;
   * or an `api` power write with `--force` (source `cli`), sent even if the breaker was open or the cap reached;
   * false for every other row and for rows written before it was kept
   */
  forced: boolean;
  /**
   * The remediation rule an alert's request was made under: its position in `remediation.rules` (0-based) when
   * the request was made; null for other sources and for rows written before the request was recorded
   */
  ruleIndex: number | null;
  /** a digest of that rule's content (remediation/rules.ts `ruleDigest`): an approval tells when it changed; null as `ruleIndex` */
  ruleDigest: string | null;
  /**
   * The request's resolved parameters, what its approval runs again (remediation/request.ts): the cooldown and
   * the hold (ms) and whether the IP must be the server's. Null on rows that are no request (a breaker's close, a
   * console download, a deferred change applied) and on rows written before the request was recorded.
   */
  cooldownMs: number | null;
  holdMs: number | null;
  requireOwnedIp: boolean | null;
  /**
   * How long after its call the alert that caused it must have resolved (the rule's `verify_within`), ms; null
   * when the request is not verified (today's behaviour), and on rows written before it was kept
   */
  verifyWithinMs: number | null;
  /** the step of its rule's escalation ladder (0-based; remediation/ladder.ts); null when the rule has none */
  ladderStep: number | null;
  /**
   * Whether the action helped (remediation/verify.ts): `verifying` while an executed action with
   * `verifyWithinMs` waits for its alert to resolve, then `verified` (it resolved in time) or `ineffective`
   * (still firing at the deadline); null for every other row
   */
  verification: Verification | null;
  /** when the verification ended (ms): the alert's resolution, or the deadline; null while verifying */
  verifiedAt: number | null;
  /**
   * What the verification settled on, a sentence (remediation/verify.ts): the resolved delivery's row (`its alert
   * resolved at T (journal entry N, delivered by P)`), Alertmanager's list (the instance's start and when it no
   * longer listed the episode), the deadline, or the attack data; null while verifying, for rows not verified,
   * and for rows settled before it was kept
   */
  verificationEvidence: string | null;
  /**
   * What the outage gate (`remediation.safety.block_while_firing`, remediation/outage-gate.ts) read when it ran
   * for this row's decision: `remediation replay` reads it again instead of asking an Alertmanager. Null when the
   * gate did not run for the row (no gate configured, not a power action, a guard before it decided) and for
   * rows written before it was kept.
   */
  gate: GateRead | null;
}

/**
 * What the outage gate read for one decision, as a journal row keeps it (JSON text in the `gate` column):
 * no alert matching the gate fired (`none_firing`); the first alert that did (`blocked`: its name, Alertmanager's
 * fingerprint, its labels as `labelsJson` bounds them, null beyond; `more`, how many others matched); or why
 * Alertmanager's alerts were not known (`unknown`: the reason, scrubbed where it was read, at most
 * MAX_GATE_REASON characters). Everything in it comes from Alertmanager through its scrubbing client.
 */
export type GateRead =
  | { read: 'none_firing' }
  | {
      read: 'blocked';
      alert: { alertname: string | null; fingerprint: string; labels: Record<string, string> | null };
      more: number;
    }
  | { read: 'unknown'; reason: string };

/** The longest reason a `gate` of `unknown` keeps, characters (cut beyond, with `…`). */
export const MAX_GATE_REASON = 1000;

/** A GateRead as the `gate` column holds it (JSON text). */
export const gateJson = (gate: GateRead): string => JSON.stringify(gate);

/**
 * The `gate` column read back: a GateRead, or null for NULL and for a text that is not one (never thrown: a row
 * is always readable; replay then infers the reading as for rows written before the column existed).
 */
export function parseGate(text: unknown): GateRead | null {
  if (typeof text !== 'string') return null;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return null;
  }
  if (value === null || typeof value !== 'object') return null;
  const v = value as Record<string, unknown>;
  if (v.read === 'none_firing') return { read: 'none_firing' };
  if (v.read === 'unknown' && typeof v.reason === 'string') return { read: 'unknown', reason: v.reason };
  if (v.read !== 'blocked' || v.alert === null || typeof v.alert !== 'object') return null;
  const a = v.alert as Record<string, unknown>;
  if (typeof a.fingerprint !== 'string' || (a.alertname !== null && typeof a.alertname !== 'string')) return null;
  const labels =
    a.labels !== null &&
    typeof a.labels === 'object' &&
    !Array.isArray(a.labels) &&
    Object.values(a.labels as object).every((x) => typeof x === 'string')
      ? (a.labels as Record<string, string>)
      : null;
  return {
    read: 'blocked',
    alert: { alertname: (a.alertname as string | null) ?? null, fingerprint: a.fingerprint, labels },
    more: typeof v.more === 'number' && Number.isSafeInteger(v.more) && v.more >= 0 ? v.more : 0,
  };
}

/** A verification's states: its outcomes (VERIFICATION_OUTCOMES in remediation/verify.ts) and the state before. */
export const VERIFICATIONS = ['verifying', 'verified', 'ineffective', 'unknown'] as const;
/** A verification's outcome, and the state before it. */
export type Verification = (typeof VERIFICATIONS)[number];
/** An ended verification's outcome: every state but `verifying`. */
export type VerificationEnd = Exclude<Verification, 'verifying'>;

/** The parameters a request row records (JournalEntry), null where it has none. */
export const RECORDED_FIELDS = [
  'ruleIndex',
  'ruleDigest',
  'cooldownMs',
  'holdMs',
  'requireOwnedIp',
  'verifyWithinMs',
  'ladderStep',
] as const;

export type NewEntry = Omit<
  JournalEntry,
  | 'id'
  | 'completedAt'
  | 'upstreamOutcome'
  | 'message'
  | 'reason'
  | 'approver'
  | 'approverReason'
  | 'approvedAt'
  | 'labels'
  | 'alertStatus'
  | 'forced'
  | 'verification'
  | 'verifiedAt'
  | 'verificationEvidence'
  | 'gate'
  | (typeof RECORDED_FIELDS)[number]
> & {
  message?: string | null;
  reason?: string | null;
  approver?: string | null;
  approverReason?: string | null;
  approvedAt?: number | null;
  labels?: string | null;
  alertStatus?: 'firing' | 'resolved' | null;
  forced?: boolean;
  /** what the outage gate read, when it ran for this row's decision */
  gate?: GateRead | null;
} & Partial<Pick<JournalEntry, (typeof RECORDED_FIELDS)[number]>>;

/** What a row must say; the alert's identity, IP and value default to none (an operator's or the CLI's row). */
export type RowFields = Pick<
  NewEntry,
  'account' | 'createdAt' | 'source' | 'action' | 'serverId' | 'decision' | 'principal'
> &
  Partial<NewEntry>;

/**
 * A journal row, the one way one is assembled (remediation's requests, the operator's own actions, desired
 * firewall changes, the `api` command): `fields` over "none" for what the source has not (IP, value, the
 * alert's name, fingerprint and start).
 */
export function journalRow(fields: RowFields): NewEntry {
  return { ip: null, value: null, alertname: null, fingerprint: null, startsAt: null, ...fields };
}

/** How an `awaiting_approval` row is settled: approved, denied, expired or withdrawn, by whom, why and when (ms). */
export interface ApprovalSettlement {
  decision: 'approved' | 'denied_by_approver' | 'expired' | 'withdrawn';
  /**
   * null for `expired`, and for `withdrawn` by the row's principal; for an alert's request `withdrawn` by an
   * operator, that operator (who settled it)
   */
  approver: string | null;
  /** the approver's or denier's reason, journaled as `approverReason`; absent for none (and for `expired`) */
  reason?: string;
  at: number;
  message: string;
}

/**
 * The values a settlement writes, in the order of both backends' UPDATE (decision, approver, approver_reason,
 * approved_at, completed_at, message): an expired or withdrawn row gets no reason and no approval time (a
 * withdrawal's reason is in its message), and an approver only when an operator withdrew an alert's request.
 */
export const settlementValues = (s: ApprovalSettlement) => {
  const expired = s.decision === 'expired' || s.decision === 'withdrawn';
  return [
    s.decision,
    s.decision === 'expired' ? null : s.approver,
    expired ? null : (s.reason ?? null),
    expired ? null : s.at,
    s.at,
    s.message,
  ];
};

/** Which rows `list` returns, newest first: each given field must match; `limit` rows at most. */
export interface ListFilter {
  account?: string;
  serverId?: string;
  action?: string;
  principal?: string;
  /** a decision, or `executing` */
  decision?: string;
  /** the principal that approved or denied the request (the awaiting row and its execution both name it) */
  approver?: string;
  /** rows created at or after this time (ms) */
  since?: number;
  /** the verification's state: `verifying` (an executed row with a deadline and no outcome yet) or its outcome */
  verification?: Verification;
  limit: number;
}

/**
 * A label name as Prometheus allows it (its data model); a key beyond it is refused where the webhook payload
 * enters (remediation/webhook.schema.ts), so no label can be named as a journal row's digest of the labels
 * (`labelsJson`) or anything else.
 */
export const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/**
 * The longest labels JSON a journal row keeps, characters; an alert with more is kept as the digest of its
 * labels (`labelsJson`): still one episode, matched exactly, but not replayable and not silenced.
 */
export const MAX_LABELS_JSON = 4096;

/**
 * The one key of the labels a row keeps for an alert whose labels are longer than MAX_LABELS_JSON: no alert's
 * labels spell it (a Prometheus label name is `[a-zA-Z_][a-zA-Z0-9_]*`, which the webhook's schema checks:
 * LABEL_NAME; and every delivered alert has an `alertname` besides).
 */
export const LABELS_DIGEST_KEY = 'sha256 of the labels';

/**
 * An alert's labels as a row keeps them, what an episode's rows are matched on (remediation/episode.ts
 * `sameEpisode`): JSON with sorted keys; beyond MAX_LABELS_JSON characters `{"sha256 of the labels": "<hex>"}`,
 * the SHA-256 of that whole JSON, so that two alerts whose long labels differ anywhere never match and the same
 * alert always does (the digest form is its own `labelsJson`). Null without labels.
 */
export function labelsJson(labels: Readonly<Record<string, string>> | undefined): string | null {
  if (labels === undefined) return null;
  const json = JSON.stringify(Object.fromEntries(Object.entries(labels).sort(([a], [b]) => byCodeUnits(a, b))));
  if (json.length <= MAX_LABELS_JSON) return json;
  return JSON.stringify({ [LABELS_DIGEST_KEY]: createHash('sha256').update(json).digest('hex') });
}

/** Whether an alert's labels are too long for a row to keep (`labelsJson` keeps their digest). */
export const labelsTooLong = (labels: Readonly<Record<string, string>>): boolean =>
  labelsJson(labels)?.startsWith(`{"${LABELS_DIGEST_KEY}":`) === true;

/**
 * The labels a row kept (its `labels` column), or undefined when it kept none or only their digest (an alert
 * whose labels were longer than MAX_LABELS_JSON): what can be silenced, shown as labels, or decided again.
 */
export function keptLabels(json: string | null): Record<string, string> | undefined {
  if (json === null) return undefined;
  const labels: unknown = JSON.parse(json);
  if (typeof labels !== 'object' || labels === null || LABELS_DIGEST_KEY in labels) return undefined;
  return labels as Record<string, string>;
}

/** The desired firewall state of one IP, with what was last applied. */
export interface DesiredFirewall {
  account: string;
  serverId: string;
  ip: string;
  desiredState: '0' | '1';
  /** ms; the change may be applied from then on (hold, 2-minute window) */
  dueAt: number;
  pending: boolean;
  attempts: number;
  appliedState: '0' | '1' | null;
  appliedAt: number | null;
  /** minimum time between two applied changes, ms */
  cooldownMs: number;
  /** the principal of the request that set `desiredState`: its deferred change is journaled under that name */
  principal: string | null;
}

/** A claimed delivery key: the row that acted on it and a digest of the request that claimed it. */
export interface Delivery {
  actionId: number;
  /** null for keys claimed before digests were stored */
  digest: string | null;
  /** when the key was claimed, ms since epoch */
  createdAt: number;
}

/**
 * Decisions that mean an upstream call was made or may have been (they count against the budget and the
 * cooldown): a `failed` or `unknown` power cycle may still have cycled the server. As an SQL list, the same
 * in both backends.
 */
export const SENT_DECISIONS_SQL = "('executing', 'executed', 'failed', 'unknown')";

/** The power actions (config/actions.ts POWER_ACTIONS) as an SQL list: the circuit breaker and the cap count them. */
export const POWER_ACTIONS_SQL = `(${[...POWER_ACTIONS].map((a) => `'${a}'`).join(', ')})`;

/** The rows still verifying, as both backends select them (the partial index `actions_verifying` has it too). */
export const VERIFYING_SQL = "decision = 'executed' AND verify_within_ms IS NOT NULL AND verification IS NULL";

/**
 * A row's verification state as both backends filter on it (`ListFilter.verification`), as `toEntry` derives it:
 * its outcome, else `verifying` for a VERIFYING_SQL row.
 */
export const VERIFICATION_STATE_SQL =
  "coalesce(verification, CASE WHEN decision = 'executed' AND verify_within_ms IS NOT NULL THEN 'verifying' END)";

/**
 * One ended verification, as the engine's counters are rebuilt from it at start (remediation/gauges.ts): the
 * action, the rule (its alertname), the outcome, when its call completed and when the verification ended, ms.
 */
export interface VerificationRecord {
  action: string;
  rule: string;
  outcome: VerificationEnd;
  calledAt: number;
  verifiedAt: number;
  verifyWithinMs: number;
}

/** The columns both backends select for a VerificationRecord (`verificationRecord` reads them). */
export const VERIFICATION_RECORD_SQL =
  "SELECT action, alertname, verification, coalesce(completed_at, created_at) AS called_at, verified_at, verify_within_ms FROM actions WHERE verification IN ('verified', 'ineffective', 'unknown') AND account = ";

/** A row of VERIFICATION_RECORD_SQL. */
export const verificationRecord = (r: Row): VerificationRecord => ({
  action: String(r.action),
  rule: r.alertname == null ? '' : String(r.alertname),
  outcome: r.verification as VerificationRecord['outcome'],
  calledAt: Number(r.called_at),
  verifiedAt: Number(r.verified_at),
  verifyWithinMs: Number(r.verify_within_ms ?? 0),
});

/** Decisions a power action counts for toward the cap per server: sent, maybe sent, or decided in dry run. */
export const CAPPED_DECISIONS_SQL = "('executing', 'executed', 'failed', 'unknown', 'dry_run')";

/** The circuit breaker of one account (remediation.safety.circuit_breaker). Times are Unix milliseconds. */
export interface CircuitState {
  /** when it opened; null while closed */
  openedAt: number | null;
  /** when an operator last closed it: servers counted before no longer count; null when never */
  closedAt: number | null;
  /** why it opened */
  message: string | null;
}

export const toCircuit = (r: Row | undefined): CircuitState => ({
  openedAt: r?.opened_at == null ? null : Number(r.opened_at),
  closedAt: r?.closed_at == null ? null : Number(r.closed_at),
  message: (r?.message as string | null | undefined) ?? null,
});

/** The message of a row left `executing` by a crash, once recovered as `unknown` (recoverInterrupted). */
export const INTERRUPTED_MESSAGE = 'interrupted: the daemon stopped during the upstream call; the API may have acted';

/** A row as node:sqlite returns it (node-postgres rows are read the same way: every field is converted). */
export type Row = Record<string, SQLInputValue>;

export const toEntry = (r: Row): JournalEntry => ({
  id: Number(r.id),
  account: String(r.account),
  createdAt: Number(r.created_at),
  completedAt: r.completed_at === null ? null : Number(r.completed_at),
  source: r.source as JournalEntry['source'],
  action: String(r.action),
  serverId: String(r.server_id),
  ip: r.ip as string | null,
  value: r.value as string | null,
  alertname: r.alertname as string | null,
  fingerprint: r.fingerprint as string | null,
  startsAt: r.starts_at as string | null,
  decision: r.decision as JournalEntry['decision'],
  upstreamOutcome: r.upstream_outcome as string | null,
  message: r.message as string | null,
  // Absent before the migration that added them (a row read by a query written for the older schema).
  principal: (r.principal as string | null | undefined) ?? null,
  reason: (r.reason as string | null | undefined) ?? null,
  approver: (r.approver as string | null | undefined) ?? null,
  approverReason: (r.approver_reason as string | null | undefined) ?? null,
  approvedAt: r.approved_at === null || r.approved_at === undefined ? null : Number(r.approved_at),
  labels: (r.labels as string | null | undefined) ?? null,
  alertStatus: (r.alert_status as JournalEntry['alertStatus'] | undefined) ?? null,
  // SQLite's INTEGER 0/1 and PostgreSQL's BOOLEAN alike (Number(true) is 1); absent before the migration.
  forced: Number(r.forced) === 1,
  ruleIndex: r.rule_index == null ? null : Number(r.rule_index),
  ruleDigest: (r.rule_digest as string | null | undefined) ?? null,
  cooldownMs: r.cooldown_ms == null ? null : Number(r.cooldown_ms),
  holdMs: r.hold_ms == null ? null : Number(r.hold_ms),
  // 0/1 and BOOLEAN alike, as `forced`; null when not recorded.
  requireOwnedIp: r.require_owned_ip == null ? null : Number(r.require_owned_ip) === 1,
  verifyWithinMs: r.verify_within_ms == null ? null : Number(r.verify_within_ms),
  ladderStep: r.ladder_step == null ? null : Number(r.ladder_step),
  // An executed row with a deadline and no outcome yet is verifying: no write between the call and the verdict.
  verification:
    (r.verification as Verification | null | undefined) ??
    (r.decision === 'executed' && r.verify_within_ms != null ? 'verifying' : null),
  verifiedAt: r.verified_at == null ? null : Number(r.verified_at),
  verificationEvidence: (r.verification_evidence as string | null | undefined) ?? null,
  gate: parseGate(r.gate),
});

export const toDesired = (r: Row): DesiredFirewall => ({
  account: String(r.account),
  serverId: String(r.server_id),
  ip: String(r.ip),
  desiredState: r.desired_state as '0' | '1',
  dueAt: Number(r.due_at),
  pending: Number(r.pending) === 1,
  attempts: Number(r.attempts),
  appliedState: r.applied_state as '0' | '1' | null,
  appliedAt: r.applied_at === null ? null : Number(r.applied_at),
  cooldownMs: Number(r.cooldown_ms),
  principal: (r.principal as string | null | undefined) ?? null,
});

/** The values of a new row, in the column order of the INSERT both backends write. */
export const entryValues = (e: NewEntry) => [
  e.account,
  e.createdAt,
  e.source,
  e.action,
  e.serverId,
  e.ip,
  e.value,
  e.alertname,
  e.fingerprint,
  e.startsAt,
  e.decision,
  e.message ?? null,
  e.principal,
  e.reason ?? null,
  e.approver ?? null,
  e.approvedAt ?? null,
  e.labels ?? null,
  e.alertStatus ?? null,
  // 0/1: SQLite binds no booleans, and PostgreSQL reads '1' and '0' as a BOOLEAN.
  e.forced === true ? 1 : 0,
  e.ruleIndex ?? null,
  e.ruleDigest ?? null,
  e.cooldownMs ?? null,
  e.holdMs ?? null,
  e.requireOwnedIp == null ? null : e.requireOwnedIp ? 1 : 0,
  e.approverReason ?? null,
  e.verifyWithinMs ?? null,
  e.ladderStep ?? null,
  e.gate == null ? null : gateJson(e.gate),
];

/** The columns of `entryValues`, in its order: the INSERT of both backends names them. */
export const ENTRY_COLUMNS =
  'account, created_at, source, action, server_id, ip, value, alertname, fingerprint, starts_at, decision, message, principal, reason, approver, approved_at, labels, alert_status, forced, rule_index, rule_digest, cooldown_ms, hold_ms, require_owned_ip, approver_reason, verify_within_ms, ladder_step, gate';

/** The values of a desired state, in the column order of the upsert both backends write. */
export const desiredValues = (d: DesiredFirewall) => [
  d.account,
  d.serverId,
  d.ip,
  d.desiredState,
  d.dueAt,
  d.pending ? 1 : 0,
  d.attempts,
  d.appliedState,
  d.appliedAt,
  d.cooldownMs,
  d.principal,
];
