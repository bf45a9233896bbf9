/**
 * The SQLite journal's queries in SQLite's dialect, mirroring postgres/queries.ts (same tables, columns and
 * method names): the action rows, delivery keys, approvals and pruning here, the circuit breakers and the
 * desired firewall state in desired-queries.ts beside this file. Every method is synchronous and runs through
 * the `SqlRunner` journal.ts gives (the connection, its failures, transactions); row shapes are in store/rows.ts.
 */
import type { Decision } from '../decisions.js';
import {
  ENTRY_COLUMNS,
  entryValues,
  settlementValues,
  toEntry,
  VERIFICATION_STATE_SQL,
  type VerificationEnd,
  VERIFYING_SQL,
  VERIFICATION_RECORD_SQL,
  verificationRecord,
  type VerificationRecord,
  type Delivery,
  type ApprovalSettlement,
  type JournalEntry,
  type ListFilter,
  type NewEntry,
  type Row,
  CAPPED_DECISIONS_SQL,
  INTERRUPTED_MESSAGE,
  POWER_ACTIONS_SQL,
  SENT_DECISIONS_SQL,
} from '../rows.js';
import { SqliteDesiredQueries } from './desired-queries.js';

/** Every query of the journal (StateQueries' synchronous form), over the runner given to the constructor. */
export class SqliteQueries extends SqliteDesiredQueries {
  /** Inserts a row and returns its id. */
  insert(entry: NewEntry): number {
    return this.sql.write((db) => {
      const result = db
        .prepare(
          `INSERT INTO actions (${ENTRY_COLUMNS})
           VALUES (${ENTRY_COLUMNS.split(',')
             .map(() => '?')
             .join(', ')})`,
        )
        .run(...entryValues(entry));
      return Number(result.lastInsertRowid);
    });
  }

  /** Completes a row after its upstream call (or a later decision). */
  complete(
    id: number,
    update: { decision: Decision; upstreamOutcome?: string | null; message?: string | null; at: number },
  ): void {
    this.sql.write((db) =>
      db
        .prepare('UPDATE actions SET decision = ?, upstream_outcome = ?, message = ?, completed_at = ? WHERE id = ?')
        .run(update.decision, update.upstreamOutcome ?? null, update.message ?? null, update.at, id),
    );
  }

  /**
   * Records that `key` was acted on by row `actionId`; false when it already was (the unique key decides).
   * Call it inside the transaction that checked `delivery(key)`, so that check and claim are one.
   */
  claimDelivery(key: string, digest: string, actionId: number, at: number): boolean {
    return this.sql.write(
      (db) =>
        db
          .prepare(
            'INSERT INTO deliveries (key, action_id, created_at, request_digest, seen_at) VALUES (?, ?, ?, ?, ?) ON CONFLICT (key) DO NOTHING',
          )
          .run(key, actionId, at, digest, at).changes === 1,
    );
  }

  /** The claim of `key`, if any; `seenAt` (ms) marks it as seen again, which keeps it from being pruned. */
  delivery(key: string, seenAt?: number): Delivery | undefined {
    const row = this.sql.read(
      (db) =>
        db.prepare('SELECT action_id, request_digest, created_at FROM deliveries WHERE key = ?').get(key) as
          | Row
          | undefined,
    );
    if (!row) return undefined;
    if (seenAt !== undefined)
      this.sql.write((db) => db.prepare('UPDATE deliveries SET seen_at = ? WHERE key = ?').run(seenAt, key));
    return {
      actionId: Number(row.action_id),
      digest: row.request_digest as string | null,
      createdAt: Number(row.created_at),
    };
  }

  /** Drops the claim of `key` if row `actionId` still holds it; false otherwise. */
  releaseDelivery(key: string, actionId: number): boolean {
    return this.sql.write(
      (db) => db.prepare('DELETE FROM deliveries WHERE key = ? AND action_id = ?').run(key, actionId).changes === 1,
    );
  }

  /** The claims of keys beginning with `prefix` held by rows of `account`, claimed or seen since `since` (ms). */
  claimsOf(account: string, prefix: string, since?: number): Array<{ actionId: number; createdAt: number }> {
    const rows = this.sql.read(
      (db) =>
        db
          .prepare(
            `SELECT d.action_id, d.created_at FROM deliveries d JOIN actions a ON a.id = d.action_id
               WHERE d.seen_at >= ? AND substr(d.key, 1, length(?)) = ? AND a.account = ? ORDER BY d.action_id`,
          )
          .all(since ?? Number.MIN_SAFE_INTEGER, prefix, prefix, account) as Row[],
    );
    return rows.map((r) => ({ actionId: Number(r.action_id), createdAt: Number(r.created_at) }));
  }

  /** Upstream calls made for `account` since `since` (ms), all actions together: the account's budget use. */
  sentSince(account: string, since: number): number {
    return this.sql.read((db) =>
      Number(
        (
          db
            .prepare(
              `SELECT count(*) AS n FROM actions WHERE account = ? AND created_at >= ? AND decision IN ${SENT_DECISIONS_SQL}`,
            )
            .get(account, since) as Row
        ).n,
      ),
    );
  }

  /** Time (ms) of the last upstream call of `action` on the target, if any. */
  lastSent(account: string, action: string, serverId: string, ip: string | null): number | undefined {
    const row = this.sql.read(
      (db) =>
        db
          .prepare(
            `SELECT max(created_at) AS at FROM actions WHERE account = ? AND action = ? AND server_id = ? AND ip IS ? AND decision IN ${SENT_DECISIONS_SQL}`,
          )
          .get(account, action, serverId, ip) as Row,
    );
    return row.at === null ? undefined : Number(row.at);
  }

  /** Distinct servers of `account` with power requests (any decision but `duplicate`) since `since` (ms). */
  powerServersSince(account: string, since: number): string[] {
    return this.sql.read((db) =>
      (
        db
          .prepare(
            `SELECT DISTINCT server_id FROM actions WHERE account = ? AND created_at >= ? AND action IN ${POWER_ACTIONS_SQL} AND decision != 'duplicate'`,
          )
          .all(account, since) as Row[]
      ).map((r) => String(r.server_id)),
    );
  }

  /** Power actions on the server sent, maybe sent or decided in dry run since `since` (ms). */
  powerActionsOn(account: string, serverId: string, since: number): number {
    return this.sql.read((db) =>
      Number(
        (
          db
            .prepare(
              `SELECT count(*) AS n FROM actions WHERE account = ? AND server_id = ? AND created_at >= ? AND action IN ${POWER_ACTIONS_SQL} AND decision IN ${CAPPED_DECISIONS_SQL}`,
            )
            .get(account, serverId, since) as Row
        ).n,
      ),
    );
  }

  get(id: number): JournalEntry | undefined {
    const row = this.sql.read((db) => db.prepare('SELECT * FROM actions WHERE id = ?').get(id) as Row | undefined);
    return row ? toEntry(row) : undefined;
  }

  /** Settles row `id` if it is still awaiting approval; false when it is not (settled before). */
  settleApproval(id: number, s: ApprovalSettlement): boolean {
    return this.sql.write(
      (db) =>
        db
          .prepare(
            "UPDATE actions SET decision = ?, approver = ?, approver_reason = ?, approved_at = ?, completed_at = ?, message = ? WHERE id = ? AND decision = 'awaiting_approval'",
          )
          .run(...settlementValues(s), id).changes === 1,
    );
  }

  /** Row `row.id` back to awaiting approval if still approved by `approver` at `approvedAt` (store.ts). */
  reopenApproval(
    row: Pick<JournalEntry, 'id' | 'message' | 'completedAt'>,
    approver: string,
    approvedAt: number,
  ): boolean {
    return this.sql.write(
      (db) =>
        db
          .prepare(
            "UPDATE actions SET decision = 'awaiting_approval', approver = NULL, approver_reason = NULL, approved_at = NULL, completed_at = ?, message = ? WHERE id = ? AND decision = 'approved' AND approver = ? AND approved_at = ?",
          )
          .run(row.completedAt, row.message, row.id, approver, approvedAt).changes === 1,
    );
  }

  /** The rows of `account` awaiting approval, oldest first (at most 1000). */
  awaitingApproval(account: string): JournalEntry[] {
    return this.sql.read((db) =>
      (
        db
          .prepare("SELECT * FROM actions WHERE account = ? AND decision = 'awaiting_approval' ORDER BY id LIMIT 1000")
          .all(account) as Row[]
      ).map(toEntry),
    );
  }

  /** The executed rows of `account` still verifying, oldest first (at most 1000). */
  verifying(account: string): JournalEntry[] {
    return this.sql.read((db) =>
      (
        db
          .prepare(`SELECT * FROM actions WHERE account = ? AND ${VERIFYING_SQL} ORDER BY id LIMIT 1000`)
          .all(account) as Row[]
      ).map(toEntry),
    );
  }

  /** Ends row `id`'s verification if it is still verifying; false when it is not. */
  settleVerification(id: number, outcome: VerificationEnd, at: number, evidence: string): boolean {
    return this.sql.write(
      (db) =>
        db
          .prepare(
            `UPDATE actions SET verification = ?, verified_at = ?, verification_evidence = ? WHERE id = ? AND ${VERIFYING_SQL}`,
          )
          .run(outcome, at, evidence, id).changes === 1,
    );
  }

  /** Newest first, each field of `filter` given must match (ListFilter); `limit` rows at most. */
  list(filter: ListFilter): JournalEntry[] {
    return this.sql.read((db) =>
      (
        db
          .prepare(
            `SELECT * FROM actions WHERE (? IS NULL OR account = ?) AND (? IS NULL OR server_id = ?) AND (? IS NULL OR action = ?)
               AND (? IS NULL OR principal = ?) AND (? IS NULL OR decision = ?) AND (? IS NULL OR approver = ?)
               AND (? IS NULL OR created_at >= ?)
               AND (? IS NULL OR ${VERIFICATION_STATE_SQL} = ?)
             ORDER BY id DESC LIMIT ?`,
          )
          .all(
            filter.account ?? null,
            filter.account ?? null,
            filter.serverId ?? null,
            filter.serverId ?? null,
            filter.action ?? null,
            filter.action ?? null,
            filter.principal ?? null,
            filter.principal ?? null,
            filter.decision ?? null,
            filter.decision ?? null,
            filter.approver ?? null,
            filter.approver ?? null,
            filter.since ?? null,
            filter.since ?? null,
            filter.verification ?? null,
            filter.verification ?? null,
            filter.limit,
          ) as Row[]
      ).map(toEntry),
    );
  }

  /**
   * Rows left `executing` by a crash: the call may have reached the API and been acted on, so their
   * decision is `unknown` (they keep counting for cooldown and budget). Returns the rows changed.
   */
  recoverInterrupted(account: string, at: number, startedBefore = Number.MAX_SAFE_INTEGER): JournalEntry[] {
    return this.sql.write((db) =>
      (
        db
          .prepare(
            "UPDATE actions SET decision = 'unknown', upstream_outcome = 'interrupted', message = ?, completed_at = ? WHERE account = ? AND decision = 'executing' AND created_at < ? RETURNING *",
          )
          .all(INTERRUPTED_MESSAGE, at, account, startedBefore) as Row[]
      ).map(toEntry),
    );
  }

  /** Rows per action and decision (rows still `executing` left out), to rebuild counters at start. */
  decisionCounts(account: string): Array<{ action: string; decision: Decision; count: number }> {
    return this.sql.read((db) =>
      (
        db
          .prepare(
            "SELECT action, decision, count(*) AS n FROM actions WHERE account = ? AND decision != 'executing' GROUP BY action, decision",
          )
          .all(account) as Row[]
      ).map((r) => ({
        action: String(r.action),
        decision: r.decision as Decision,
        count: Number(r.n),
      })),
    );
  }

  /** The ended verifications (`verified`, `ineffective`), to rebuild their counter and histogram at start. */
  verificationRecords(account: string): VerificationRecord[] {
    return this.sql.read((db) =>
      (db.prepare(`${VERIFICATION_RECORD_SQL}?`).all(account) as Row[]).map(verificationRecord),
    );
  }

  /** Time (ms) of the latest `failed` and `unknown` row per action. */
  lastFailures(account: string): Array<{ action: string; decision: 'failed' | 'unknown'; at: number }> {
    return this.sql.read((db) =>
      (
        db
          .prepare(
            "SELECT action, decision, max(coalesce(completed_at, created_at)) AS at FROM actions WHERE account = ? AND decision IN ('failed', 'unknown') GROUP BY action, decision",
          )
          .all(account) as Row[]
      ).map((r) => ({ action: String(r.action), decision: r.decision as 'failed' | 'unknown', at: Number(r.at) })),
    );
  }

  /**
   * Deletes up to `batch` rows created before `before` (ms), and delivery keys not seen since then. Never
   * a row still `executing` or one a remaining delivery key points to. Returns the rows deleted; call
   * again (yielding in between) until it returns less than `batch`.
   */
  prune(before: number, batch: number): number {
    return this.sql.write((db) => {
      const keys = Number(
        db
          .prepare(
            'DELETE FROM deliveries WHERE rowid IN (SELECT rowid FROM deliveries WHERE coalesce(seen_at, created_at) < ? LIMIT ?)',
          )
          .run(before, batch).changes,
      );
      const rows = Number(
        db
          .prepare(
            `DELETE FROM actions WHERE id IN (SELECT id FROM actions WHERE created_at < ? AND decision != 'executing'
               AND NOT EXISTS (SELECT 1 FROM deliveries WHERE deliveries.action_id = actions.id) ORDER BY id LIMIT ?)`,
          )
          .run(before, batch).changes,
      );
      return Math.max(keys, rows);
    });
  }
}
