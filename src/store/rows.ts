/**
 * The journal's rows as the rest of the code sees them, and the mapping from database rows (SQLite's, and
 * PostgreSQL's with BIGINT as strings) to them. Times are Unix milliseconds.
 */
import type { SQLInputValue } from 'node:sqlite';
import type { Decision } from './decisions.js';

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
  /** when it was approved, denied or expired (ms); null otherwise */
  approvedAt: number | null;
}

export type NewEntry = Omit<
  JournalEntry,
  'id' | 'completedAt' | 'upstreamOutcome' | 'message' | 'reason' | 'approver' | 'approvedAt'
> & {
  message?: string | null;
  reason?: string | null;
  approver?: string | null;
  approvedAt?: number | null;
};

/** How an `awaiting_approval` row is settled: approved, denied or expired, by whom and when (ms). */
export interface ApprovalSettlement {
  decision: 'approved' | 'denied_by_approver' | 'expired';
  /** null for `expired` */
  approver: string | null;
  at: number;
  message: string;
}

/** Which rows `list` returns, newest first: each given field must match; `limit` rows at most. */
export interface ListFilter {
  account?: string;
  serverId?: string;
  action?: string;
  principal?: string;
  limit: number;
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
}

/**
 * Decisions that mean an upstream call was made or may have been (they count against the budget and the
 * cooldown): a `failed` or `unknown` power cycle may still have cycled the server. As an SQL list, the same
 * in both backends.
 */
export const SENT_DECISIONS_SQL = "('executing', 'executed', 'failed', 'unknown')";

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
  approvedAt: r.approved_at === null || r.approved_at === undefined ? null : Number(r.approved_at),
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
];

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
