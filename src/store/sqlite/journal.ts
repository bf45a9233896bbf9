/**
 * The remediation journal: SQLite through Node's built-in `node:sqlite`, WAL mode, in `<state_dir>/journal.db`.
 * This file holds the connection (opening, transactions, failures, health); the queries are in queries.ts and
 * desired-queries.ts beside it, the row shapes in store/rows.ts, opening and migrations in database.ts.
 * Every action request is written before its upstream call and completed after it; deliveries already
 * acted on (idempotency keys) and the desired firewall state per IP live here too, so all of it
 * survives restarts. Every method is synchronous; the daemon uses it through the asynchronous state store
 * (store.ts beside this file), the CLI directly.
 */
import type { DatabaseSync } from 'node:sqlite';
import { JournalError } from '../../errors.js';
import { openDatabase } from './database.js';
import type { SqlRunner } from './desired-queries.js';
import { SqliteQueries } from './queries.js';

/** The open database (or why it did not open) and the last write's failure: the runner of every query. */
class Connection implements SqlRunner {
  readonly db: DatabaseSync | undefined;
  /** why the journal did not open: remediation stays disabled until a restart */
  readonly openFailure: string | undefined;
  /** the last write's failure (disk full, read-only file), cleared by the next write that succeeds */
  writeFailure: string | undefined;

  constructor(db: DatabaseSync | undefined, openFailure: string | undefined) {
    this.db = db;
    this.openFailure = openFailure;
  }

  open(): DatabaseSync {
    if (!this.db) throw new JournalError(`the journal is unavailable: ${this.openFailure ?? 'not open'}`);
    return this.db;
  }

  /** Runs `fn` on the open database; any failure becomes a JournalError. */
  read<T>(fn: (db: DatabaseSync) => T): T {
    const db = this.open();
    try {
      return fn(db);
    } catch (error) {
      if (error instanceof JournalError) throw error;
      throw new JournalError(`journal write or read failed: ${(error as Error).message}`, { cause: error });
    }
  }

  /** A write: its failure (disk full, read-only file) makes the journal unhealthy until a write succeeds. */
  write<T>(fn: (db: DatabaseSync) => T): T {
    try {
      const result = this.read(fn);
      this.writeFailure = undefined;
      return result;
    } catch (error) {
      if (this.db) this.writeFailure = (error as Error).message;
      throw error;
    }
  }
}

export class Journal extends SqliteQueries {
  readonly #connection: Connection;

  private constructor(db: DatabaseSync | undefined, openFailure?: string) {
    const connection = new Connection(db, openFailure);
    super(connection);
    this.#connection = connection;
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
    return this.#connection.openFailure;
  }

  /** What is wrong with the journal now (it did not open, or its last write failed), for /readyz. */
  get problem(): string | undefined {
    return (
      this.#connection.openFailure ??
      (this.#connection.writeFailure === undefined
        ? undefined
        : `its last write failed: ${this.#connection.writeFailure}`)
    );
  }

  /**
   * Runs `fn` in one transaction, which holds the database's write lock from its start (BEGIN IMMEDIATE):
   * a check and the write it guards cannot interleave with another process's. While `fn`'s promise is
   * pending, nothing else may use this connection (store.ts beside this file queues every other statement). Rolled back
   * when `fn` rejects. Throws JournalError.
   */
  async transactionAsync<T>(fn: () => Promise<T>): Promise<T> {
    const db = this.#connection.open();
    this.#connection.write(() => db.exec('BEGIN IMMEDIATE'));
    try {
      const result = await fn();
      this.#connection.write(() => db.exec('COMMIT'));
      return result;
    } catch (error) {
      if (db.isTransaction) db.exec('ROLLBACK');
      throw error;
    }
  }

  /** True while the journal is open, answers a trivial query and its last write succeeded (readiness). */
  healthy(): boolean {
    const { db, writeFailure } = this.#connection;
    if (!db || writeFailure !== undefined) return false;
    try {
      db.prepare('SELECT 1').get();
      return true;
    } catch {
      return false;
    }
  }

  close(): void {
    if (this.#connection.db?.isOpen) this.#connection.db.close();
  }
}
