/**
 * The SQLite journal's queries on the circuit breakers and the desired firewall state per IP (PostgreSQL's are
 * in postgres/queries.ts, same tables and columns). Every method is synchronous and runs through a `SqlRunner`,
 * which journal.ts gives: it owns the connection, its failures and its transactions.
 */
import type { DatabaseSync } from 'node:sqlite';
import { desiredValues, toDesired, type DesiredFirewall, type Row, toCircuit, type CircuitState } from '../rows.js';

/**
 * Runs statements on the open database: `read` turns any failure into a JournalError (and throws one when
 * the journal is unavailable), `write` also records the failure of a write, which makes the journal unhealthy.
 */
export interface SqlRunner {
  read<T>(fn: (db: DatabaseSync) => T): T;
  write<T>(fn: (db: DatabaseSync) => T): T;
}

/** The circuit-breaker and desired-state queries, over `sql`. */
export class SqliteDesiredQueries {
  protected readonly sql: SqlRunner;

  constructor(sql: SqlRunner) {
    this.sql = sql;
  }

  circuit(account: string): CircuitState {
    return toCircuit(
      this.sql.read(
        (db) => db.prepare('SELECT * FROM circuit_breakers WHERE account = ?').get(account) as Row | undefined,
      ),
    );
  }

  openCircuit(account: string, at: number, message: string): void {
    this.sql.write((db) =>
      db
        .prepare(
          `INSERT INTO circuit_breakers (account, opened_at, message) VALUES (?, ?, ?)
           ON CONFLICT (account) DO UPDATE SET opened_at = excluded.opened_at, message = excluded.message`,
        )
        .run(account, at, message),
    );
  }

  closeCircuit(account: string, at: number): boolean {
    return this.sql.write((db) => {
      const was = this.circuit(account).openedAt !== null;
      db.prepare(
        `INSERT INTO circuit_breakers (account, closed_at) VALUES (?, ?)
         ON CONFLICT (account) DO UPDATE SET opened_at = NULL, closed_at = excluded.closed_at`,
      ).run(account, at);
      return was;
    });
  }

  desired(account: string, serverId: string, ip: string): DesiredFirewall | undefined {
    const row = this.sql.read(
      (db) =>
        db
          .prepare('SELECT * FROM firewall_desired WHERE account = ? AND server_id = ? AND ip = ?')
          .get(account, serverId, ip) as Row | undefined,
    );
    return row ? toDesired(row) : undefined;
  }

  /** Every IP of `account` with a desired state (for the desired-state gauge after a restart). */
  allDesired(account: string): DesiredFirewall[] {
    return this.sql.read((db) =>
      (db.prepare('SELECT * FROM firewall_desired WHERE account = ?').all(account) as Row[]).map(toDesired),
    );
  }

  /** Pending changes of `account` due at or before `at`, oldest due first. */
  dueDesired(account: string, at: number): DesiredFirewall[] {
    return this.sql.read((db) =>
      (
        db
          .prepare('SELECT * FROM firewall_desired WHERE account = ? AND pending = 1 AND due_at <= ? ORDER BY due_at')
          .all(account, at) as Row[]
      ).map(toDesired),
    );
  }

  pendingCount(account: string): number {
    return this.sql.read((db) =>
      Number(
        (db.prepare('SELECT count(*) AS n FROM firewall_desired WHERE account = ? AND pending = 1').get(account) as Row)
          .n,
      ),
    );
  }

  saveDesired(d: DesiredFirewall): void {
    this.sql.write((db) =>
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
    return this.sql.write((db) => {
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
}
