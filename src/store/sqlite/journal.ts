/**
 * The remediation journal: SQLite through Node's built-in `node:sqlite`, WAL mode, in `<state_dir>/journal.db`.
 * The queries live here; the row shapes in store/rows.ts, opening and migrations in database.ts.
 * Every action request is written before its upstream call and completed after it; deliveries already
 * acted on (idempotency keys) and the desired firewall state per IP live here too, so all of it
 * survives restarts. Every method is synchronous; the daemon uses it through the asynchronous state store
 * (store.ts beside this file), the CLI directly.
 */
import type { DatabaseSync } from 'node:sqlite';
import { JournalError } from '../../errors.js';
import type { Decision } from '../decisions.js';
import {
  desiredValues,
  entryValues,
  toDesired,
  toEntry,
  type DesiredFirewall,
  type Delivery,
  type ApprovalSettlement,
  type JournalEntry,
  type ListFilter,
  type NewEntry,
  type Row,
  toCircuit,
  type CircuitState,
  CAPPED_DECISIONS_SQL,
  INTERRUPTED_MESSAGE,
  POWER_ACTIONS_SQL,
  SENT_DECISIONS_SQL,
} from '../rows.js';
import { openDatabase } from './database.js';

export class Journal {
  readonly #db: DatabaseSync | undefined;
  /** why the journal did not open: remediation stays disabled until a restart */
  readonly #openFailure: string | undefined;
  /** the last write's failure (disk full, read-only file), cleared by the next write that succeeds */
  #writeFailure: string | undefined;

  private constructor(db: DatabaseSync | undefined, openFailure?: string) {
    this.#db = db;
    this.#openFailure = openFailure;
  }

  /** Opens (creating and migrating) the journal at `path` (`:memory:` for tests). Throws JournalError. */
  static open(path: string): Journal {
    try {
      return new Journal(openDatabase(path));
    } catch (error) {
      throw new JournalError(`cannot open the journal at ${path}: ${(error as Error).message}`, { cause: error });
    }
  }

  /**
   * Opens the journal at `path`, or returns an unavailable journal when it cannot be opened: every method
   * of that one throws JournalError naming the reason (the action endpoints answer 503), the rest of the
   * daemon runs on. The file is left as it is. `refuse` makes it unavailable without trying (a reason).
   */
  static openOrUnavailable(path: string, refuse?: string): Journal {
    if (refuse !== undefined) return new Journal(undefined, refuse);
    try {
      return Journal.open(path);
    } catch (error) {
      return new Journal(undefined, (error as Error).message);
    }
  }

  /** Why the journal could not be opened (remediation is disabled), or undefined when it is open. */
  get unavailable(): string | undefined {
    return this.#openFailure;
  }

  /** What is wrong with the journal now (it did not open, or its last write failed), for /readyz. */
  get problem(): string | undefined {
    return (
      this.#openFailure ??
      (this.#writeFailure === undefined ? undefined : `its last write failed: ${this.#writeFailure}`)
    );
  }

  /**
   * Runs `fn` in one transaction, which holds the database's write lock from its start (BEGIN IMMEDIATE):
   * a check and the write it guards cannot interleave with another process's. While `fn`'s promise is
   * pending, nothing else may use this connection (store.ts beside this file queues every other statement). Rolled back
   * when `fn` rejects. Throws JournalError.
   */
  async transactionAsync<T>(fn: () => Promise<T>): Promise<T> {
    const db = this.#open();
    this.#write(() => db.exec('BEGIN IMMEDIATE'));
    try {
      const result = await fn();
      this.#write(() => db.exec('COMMIT'));
      return result;
    } catch (error) {
      if (db.isTransaction) db.exec('ROLLBACK');
      throw error;
    }
  }

  /** Inserts a row and returns its id. */
  insert(entry: NewEntry): number {
    return this.#write((db) => {
      const result = db
        .prepare(
          `INSERT INTO actions (account, created_at, source, action, server_id, ip, value, alertname, fingerprint, starts_at, decision, message, principal, reason, approver, approved_at, labels, alert_status)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
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
    this.#write((db) =>
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
    return this.#write(
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
    const row = this.#access(
      (db) => db.prepare('SELECT action_id, request_digest FROM deliveries WHERE key = ?').get(key) as Row | undefined,
    );
    if (!row) return undefined;
    if (seenAt !== undefined)
      this.#write((db) => db.prepare('UPDATE deliveries SET seen_at = ? WHERE key = ?').run(seenAt, key));
    return { actionId: Number(row.action_id), digest: row.request_digest as string | null };
  }

  /** Upstream calls made for `account` since `since` (ms), all actions together: the account's budget use. */
  sentSince(account: string, since: number): number {
    return this.#access((db) =>
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
    const row = this.#access(
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
    return this.#access((db) =>
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
    return this.#access((db) =>
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

  circuit(account: string): CircuitState {
    return toCircuit(
      this.#access(
        (db) => db.prepare('SELECT * FROM circuit_breakers WHERE account = ?').get(account) as Row | undefined,
      ),
    );
  }

  openCircuit(account: string, at: number, message: string): void {
    this.#write((db) =>
      db
        .prepare(
          `INSERT INTO circuit_breakers (account, opened_at, message) VALUES (?, ?, ?)
           ON CONFLICT (account) DO UPDATE SET opened_at = excluded.opened_at, message = excluded.message`,
        )
        .run(account, at, message),
    );
  }

  closeCircuit(account: string, at: number): boolean {
    return this.#write((db) => {
      const was = this.circuit(account).openedAt !== null;
      db.prepare(
        `INSERT INTO circuit_breakers (account, closed_at) VALUES (?, ?)
         ON CONFLICT (account) DO UPDATE SET opened_at = NULL, closed_at = excluded.closed_at`,
      ).run(account, at);
      return was;
    });
  }

  get(id: number): JournalEntry | undefined {
    const row = this.#access((db) => db.prepare('SELECT * FROM actions WHERE id = ?').get(id) as Row | undefined);
    return row ? toEntry(row) : undefined;
  }

  /** Settles row `id` if it is still awaiting approval; false when it is not (settled before). */
  settleApproval(id: number, s: ApprovalSettlement): boolean {
    return this.#write(
      (db) =>
        db
          .prepare(
            "UPDATE actions SET decision = ?, approver = ?, approved_at = ?, completed_at = ?, message = ? WHERE id = ? AND decision = 'awaiting_approval'",
          )
          .run(s.decision, s.approver, s.at, s.at, s.message, id).changes === 1,
    );
  }

  /** The rows of `account` awaiting approval, oldest first (at most 1000). */
  awaitingApproval(account: string): JournalEntry[] {
    return this.#access((db) =>
      (
        db
          .prepare("SELECT * FROM actions WHERE account = ? AND decision = 'awaiting_approval' ORDER BY id LIMIT 1000")
          .all(account) as Row[]
      ).map(toEntry),
    );
  }

  /** Newest first, optionally for one account, server and/or action; `limit` rows at most. */
  list(filter: ListFilter): JournalEntry[] {
    return this.#access((db) =>
      (
        db
          .prepare(
            'SELECT * FROM actions WHERE (? IS NULL OR account = ?) AND (? IS NULL OR server_id = ?) AND (? IS NULL OR action = ?) AND (? IS NULL OR principal = ?) ORDER BY id DESC LIMIT ?',
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
    return this.#write((db) =>
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
    return this.#access((db) =>
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

  /** Time (ms) of the latest `failed` and `unknown` row per action. */
  lastFailures(account: string): Array<{ action: string; decision: 'failed' | 'unknown'; at: number }> {
    return this.#access((db) =>
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
    return this.#write((db) => {
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

  desired(account: string, serverId: string, ip: string): DesiredFirewall | undefined {
    const row = this.#access(
      (db) =>
        db
          .prepare('SELECT * FROM firewall_desired WHERE account = ? AND server_id = ? AND ip = ?')
          .get(account, serverId, ip) as Row | undefined,
    );
    return row ? toDesired(row) : undefined;
  }

  /** Every IP of `account` with a desired state (for the desired-state gauge after a restart). */
  allDesired(account: string): DesiredFirewall[] {
    return this.#access((db) =>
      (db.prepare('SELECT * FROM firewall_desired WHERE account = ?').all(account) as Row[]).map(toDesired),
    );
  }

  /** Pending changes of `account` due at or before `at`, oldest due first. */
  dueDesired(account: string, at: number): DesiredFirewall[] {
    return this.#access((db) =>
      (
        db
          .prepare('SELECT * FROM firewall_desired WHERE account = ? AND pending = 1 AND due_at <= ? ORDER BY due_at')
          .all(account, at) as Row[]
      ).map(toDesired),
    );
  }

  pendingCount(account: string): number {
    return this.#access((db) =>
      Number(
        (db.prepare('SELECT count(*) AS n FROM firewall_desired WHERE account = ? AND pending = 1').get(account) as Row)
          .n,
      ),
    );
  }

  saveDesired(d: DesiredFirewall): void {
    this.#write((db) =>
      db
        .prepare(
          `INSERT INTO firewall_desired (account, server_id, ip, desired_state, due_at, pending, attempts, applied_state, applied_at, cooldown_ms, principal)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT (account, server_id, ip) DO UPDATE SET desired_state = excluded.desired_state, due_at = excluded.due_at,
             pending = excluded.pending, attempts = excluded.attempts, applied_state = excluded.applied_state,
             applied_at = excluded.applied_at, cooldown_ms = excluded.cooldown_ms,
             principal = excluded.principal`,
        )
        .run(...desiredValues(d)),
    );
  }

  /**
   * Marks the desired-state rows of `account` whose (server, IP) is not owned — the server not in its server
   * list, or the IP no longer its — as missing since `at` (keeping an earlier mark), clears the mark of owned
   * ones, and deletes the rows missing since before `retireBefore`. Returns the rows deleted.
   */
  retireMissing(
    account: string,
    isOwned: (serverId: string, ip: string) => boolean,
    at: number,
    retireBefore: number,
  ): Array<{ serverId: string; ip: string }> {
    return this.#write((db) => {
      const rows = db
        .prepare('SELECT server_id, ip, missing_since FROM firewall_desired WHERE account = ?')
        .all(account) as Row[];
      const mark = db.prepare(
        'UPDATE firewall_desired SET missing_since = ? WHERE account = ? AND server_id = ? AND ip = ?',
      );
      for (const r of rows) {
        const owned = isOwned(String(r.server_id), String(r.ip));
        if (owned && r.missing_since !== null) mark.run(null, account, String(r.server_id), String(r.ip));
        if (!owned && r.missing_since === null) mark.run(at, account, String(r.server_id), String(r.ip));
      }
      return (
        db
          .prepare(
            'DELETE FROM firewall_desired WHERE account = ? AND missing_since IS NOT NULL AND missing_since < ? RETURNING server_id, ip',
          )
          .all(account, retireBefore) as Row[]
      ).map((r) => ({
        serverId: String(r.server_id),
        ip: String(r.ip),
      }));
    });
  }

  /** True while the journal is open, answers a trivial query and its last write succeeded (readiness). */
  healthy(): boolean {
    if (!this.#db || this.#writeFailure !== undefined) return false;
    try {
      this.#db.prepare('SELECT 1').get();
      return true;
    } catch {
      return false;
    }
  }

  close(): void {
    if (this.#db?.isOpen) this.#db.close();
  }

  #open(): DatabaseSync {
    if (!this.#db) throw new JournalError(`the journal is unavailable: ${this.#openFailure ?? 'not open'}`);
    return this.#db;
  }

  /** Runs `fn` on the open database; any failure becomes a JournalError. */
  #access<T>(fn: (db: DatabaseSync) => T): T {
    const db = this.#open();
    try {
      return fn(db);
    } catch (error) {
      if (error instanceof JournalError) throw error;
      throw new JournalError(`journal write or read failed: ${(error as Error).message}`, { cause: error });
    }
  }

  /** A write: its failure (disk full, read-only file) makes the journal unhealthy until a write succeeds. */
  #write<T>(fn: (db: DatabaseSync) => T): T {
    try {
      const result = this.#access(fn);
      this.#writeFailure = undefined;
      return result;
    } catch (error) {
      if (this.#db) this.#writeFailure = (error as Error).message;
      throw error;
    }
  }
}
