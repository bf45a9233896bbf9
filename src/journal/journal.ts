/**
 * The remediation journal: SQLite through Node's built-in `node:sqlite`, WAL mode, in `<state_dir>/journal.db`.
 * Every action request is written before its upstream call and completed after it; deliveries already
 * acted on (idempotency keys) and the desired firewall state per IP live here too, so all of it
 * survives restarts. Every method is synchronous: a check and the write it guards cannot interleave
 * with another request.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { DatabaseSync, type SQLInputValue } from 'node:sqlite';
import { JournalError } from '../errors.js';

/** Decisions, as journaled and counted in `baremetal_action_requests_total{decision}`. */
export const DECISIONS = ['executed', 'dry_run', 'denied_unknown_target', 'denied_budget', 'cooldown', 'duplicate', 'deferred', 'failed'] as const;
export type Decision = (typeof DECISIONS)[number];

/** A journal row. Times are Unix milliseconds. `decision` is `executing` while the upstream call runs. */
export interface JournalEntry {
  id: number;
  createdAt: number;
  completedAt: number | null;
  /** `alert` (Alertmanager), `operator` (action endpoint), `pending` (a deferred firewall change applied) or `cli` (`api` command) */
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
}

export type NewEntry = Omit<JournalEntry, 'id' | 'completedAt' | 'upstreamOutcome' | 'message'> & { message?: string | null };

/** The desired firewall state of one IP, with what was last applied. */
export interface DesiredFirewall {
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
}

const MIGRATIONS = [
  `CREATE TABLE actions (
     id INTEGER PRIMARY KEY AUTOINCREMENT,
     created_at INTEGER NOT NULL,
     completed_at INTEGER,
     source TEXT NOT NULL,
     action TEXT NOT NULL,
     server_id TEXT NOT NULL,
     ip TEXT,
     value TEXT,
     alertname TEXT,
     fingerprint TEXT,
     starts_at TEXT,
     decision TEXT NOT NULL,
     upstream_outcome TEXT,
     message TEXT
   );
   CREATE INDEX actions_target ON actions (action, server_id, ip, created_at);
   CREATE INDEX actions_created ON actions (created_at);
   CREATE TABLE deliveries (key TEXT PRIMARY KEY, action_id INTEGER NOT NULL, created_at INTEGER NOT NULL);
   CREATE TABLE firewall_desired (
     server_id TEXT NOT NULL,
     ip TEXT NOT NULL,
     desired_state TEXT NOT NULL,
     due_at INTEGER NOT NULL,
     pending INTEGER NOT NULL,
     attempts INTEGER NOT NULL DEFAULT 0,
     applied_state TEXT,
     applied_at INTEGER,
     cooldown_ms INTEGER NOT NULL,
     PRIMARY KEY (server_id, ip)
   );`,
];

/** Decisions that mean an upstream call was made (they count against the budget and the cooldown). */
const SENT = "('executing', 'executed', 'failed')";

type Row = Record<string, SQLInputValue>;

const toEntry = (r: Row): JournalEntry => ({
  id: Number(r.id),
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
});

const toDesired = (r: Row): DesiredFirewall => ({
  serverId: String(r.server_id),
  ip: String(r.ip),
  desiredState: r.desired_state as '0' | '1',
  dueAt: Number(r.due_at),
  pending: Number(r.pending) === 1,
  attempts: Number(r.attempts),
  appliedState: r.applied_state as '0' | '1' | null,
  appliedAt: r.applied_at === null ? null : Number(r.applied_at),
  cooldownMs: Number(r.cooldown_ms),
});

export class Journal {
  readonly #db: DatabaseSync;

  private constructor(db: DatabaseSync) {
    this.#db = db;
  }

  /** Opens (creating and migrating) the journal at `path` (`:memory:` for tests). Throws JournalError. */
  static open(path: string): Journal {
    try {
      if (path !== ':memory:') mkdirSync(dirname(path), { recursive: true });
      const db = new DatabaseSync(path);
      db.exec('PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; PRAGMA busy_timeout = 5000;');
      const version = Number((db.prepare('PRAGMA user_version').get() as Row).user_version);
      for (let v = version; v < MIGRATIONS.length; v++) {
        db.exec('BEGIN');
        db.exec(MIGRATIONS[v]!);
        db.exec(`PRAGMA user_version = ${v + 1}`);
        db.exec('COMMIT');
      }
      return new Journal(db);
    } catch (error) {
      throw new JournalError(`cannot open the journal at ${path}: ${(error as Error).message}`, { cause: error });
    }
  }

  /** Runs `fn` in one transaction. Throws JournalError when SQLite fails. */
  transaction<T>(fn: () => T): T {
    this.#guard(() => this.#db.exec('BEGIN IMMEDIATE'));
    try {
      const result = fn();
      this.#guard(() => this.#db.exec('COMMIT'));
      return result;
    } catch (error) {
      if (this.#db.isTransaction) this.#db.exec('ROLLBACK');
      throw error;
    }
  }

  /** Inserts a row and returns its id. */
  insert(entry: NewEntry): number {
    return this.#guard(() => {
      const result = this.#db
        .prepare(
          `INSERT INTO actions (created_at, source, action, server_id, ip, value, alertname, fingerprint, starts_at, decision, message)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
        )
        .run(entry.createdAt, entry.source, entry.action, entry.serverId, entry.ip, entry.value, entry.alertname, entry.fingerprint, entry.startsAt, entry.decision, entry.message ?? null);
      return Number(result.lastInsertRowid);
    });
  }

  /** Completes a row after its upstream call (or a later decision). */
  complete(id: number, update: { decision: Decision; upstreamOutcome?: string | null; message?: string | null; at: number }): void {
    this.#guard(() =>
      this.#db
        .prepare('UPDATE actions SET decision = ?, upstream_outcome = ?, message = ?, completed_at = ? WHERE id = ?')
        .run(update.decision, update.upstreamOutcome ?? null, update.message ?? null, update.at, id),
    );
  }

  /** Records that `key` was acted on; false when it already was (a duplicate delivery). */
  claimDelivery(key: string, actionId: number, at: number): boolean {
    return this.#guard(() => this.#db.prepare('INSERT OR IGNORE INTO deliveries (key, action_id, created_at) VALUES (?, ?, ?)').run(key, actionId, at).changes === 1);
  }

  /** The row that acted on `key`, if any. */
  delivery(key: string): number | undefined {
    const row = this.#guard(() => this.#db.prepare('SELECT action_id FROM deliveries WHERE key = ?').get(key) as Row | undefined);
    return row ? Number(row.action_id) : undefined;
  }

  /** Upstream calls made since `since` (ms), all actions together: the budget's use. */
  sentSince(since: number): number {
    return this.#guard(() => Number((this.#db.prepare(`SELECT count(*) AS n FROM actions WHERE created_at >= ? AND decision IN ${SENT}`).get(since) as Row).n));
  }

  /** Time (ms) of the last upstream call of `action` on the target, if any. */
  lastSent(action: string, serverId: string, ip: string | null): number | undefined {
    const row = this.#guard(
      () =>
        this.#db
          .prepare(`SELECT max(created_at) AS at FROM actions WHERE action = ? AND server_id = ? AND ip IS ? AND decision IN ('executing', 'executed')`)
          .get(action, serverId, ip) as Row,
    );
    return row.at === null ? undefined : Number(row.at);
  }

  get(id: number): JournalEntry | undefined {
    const row = this.#guard(() => this.#db.prepare('SELECT * FROM actions WHERE id = ?').get(id) as Row | undefined);
    return row ? toEntry(row) : undefined;
  }

  /** Newest first, optionally for one server and/or action; `limit` rows at most. */
  list(filter: { serverId?: string; action?: string; limit: number }): JournalEntry[] {
    return this.#guard(() =>
      (
        this.#db
          .prepare('SELECT * FROM actions WHERE (? IS NULL OR server_id = ?) AND (? IS NULL OR action = ?) ORDER BY id DESC LIMIT ?')
          .all(filter.serverId ?? null, filter.serverId ?? null, filter.action ?? null, filter.action ?? null, filter.limit) as Row[]
      ).map(toEntry),
    );
  }

  /** Rows left `executing` by a crash: their outcome is unknown; they become `failed`. Returns how many. */
  recoverInterrupted(at: number): number {
    return this.#guard(
      () =>
        Number(
          this.#db
            .prepare("UPDATE actions SET decision = 'failed', upstream_outcome = 'unknown', message = 'interrupted: the daemon stopped during the upstream call', completed_at = ? WHERE decision = 'executing'")
            .run(at).changes,
        ),
    );
  }

  desired(serverId: string, ip: string): DesiredFirewall | undefined {
    const row = this.#guard(() => this.#db.prepare('SELECT * FROM firewall_desired WHERE server_id = ? AND ip = ?').get(serverId, ip) as Row | undefined);
    return row ? toDesired(row) : undefined;
  }

  /** Every IP with a desired state (for the desired-state gauge after a restart). */
  allDesired(): DesiredFirewall[] {
    return this.#guard(() => (this.#db.prepare('SELECT * FROM firewall_desired').all() as Row[]).map(toDesired));
  }

  /** Pending changes due at or before `at`, oldest due first. */
  dueDesired(at: number): DesiredFirewall[] {
    return this.#guard(() => (this.#db.prepare('SELECT * FROM firewall_desired WHERE pending = 1 AND due_at <= ? ORDER BY due_at').all(at) as Row[]).map(toDesired));
  }

  pendingCount(): number {
    return this.#guard(() => Number((this.#db.prepare('SELECT count(*) AS n FROM firewall_desired WHERE pending = 1').get() as Row).n));
  }

  saveDesired(d: DesiredFirewall): void {
    this.#guard(() =>
      this.#db
        .prepare(
          `INSERT INTO firewall_desired (server_id, ip, desired_state, due_at, pending, attempts, applied_state, applied_at, cooldown_ms)
           VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
           ON CONFLICT (server_id, ip) DO UPDATE SET desired_state = excluded.desired_state, due_at = excluded.due_at,
             pending = excluded.pending, attempts = excluded.attempts, applied_state = excluded.applied_state,
             applied_at = excluded.applied_at, cooldown_ms = excluded.cooldown_ms`,
        )
        .run(d.serverId, d.ip, d.desiredState, d.dueAt, d.pending ? 1 : 0, d.attempts, d.appliedState, d.appliedAt, d.cooldownMs),
    );
  }

  /** True while the database answers a trivial query (for readiness). */
  healthy(): boolean {
    try {
      this.#db.prepare('SELECT 1').get();
      return true;
    } catch {
      return false;
    }
  }

  close(): void {
    if (this.#db.isOpen) this.#db.close();
  }

  #guard<T>(fn: () => T): T {
    try {
      return fn();
    } catch (error) {
      if (error instanceof JournalError) throw error;
      throw new JournalError(`journal write or read failed: ${(error as Error).message}`, { cause: error });
    }
  }
}
