/**
 * The SQLite backend of the state store: the synchronous Journal (journal.ts) behind the asynchronous
 * interface, and the attack-event ids in files under state_dir. A transaction is BEGIN IMMEDIATE as before,
 * but its body is now asynchronous, so transactions and every other statement on one database file are
 * serialized in the process by a promise queue: no statement runs on a connection while a transaction of
 * that file is open (node:sqlite's busy wait would block the event loop the open transaction needs).
 */
import { resolve } from 'node:path';
import { FileEventLedger } from './event-ledger.js';
import { Journal } from './journal.js';
import { forwardQueries, type EventLedger, type StateQueries, type StateStore } from '../store.js';

/** Runs tasks one after the other. */
class Queue {
  #tail: Promise<unknown> = Promise.resolve();

  run<T>(task: () => T | Promise<T>): Promise<T> {
    const result = this.#tail.then(task);
    this.#tail = result.catch(() => undefined);
    return result;
  }
}

/**
 * One queue per database file in this process: two Journals on one file (tests, or two engines) share it.
 * Entries are never removed; a process opens a handful of files.
 */
const queues = new Map<string, Queue>();

/** The synchronous form of StateQueries: Journal must match it, checked at compile time. */
type SyncQueries = {
  [K in keyof StateQueries]: (...args: Parameters<StateQueries[K]>) => Awaited<ReturnType<StateQueries[K]>>;
};
const journalMatches: Journal extends SyncQueries ? true : false = true;
void journalMatches;

export interface SqliteStore extends StateStore {
  readonly kind: 'sqlite';
  /** the synchronous journal underneath (tests, the CLI) */
  readonly journal: Journal;
}

/**
 * Opens the SQLite store at `path` (`:memory:` for tests), or an unavailable one when the journal cannot be
 * opened (journal.ts `openOrUnavailable`: the file is left as it is; `refuse` gives a reason without trying).
 * `stateDir` holds the attack-event id files.
 */
export function openSqliteStore(path: string, stateDir: string, refuse?: string): SqliteStore {
  return sqliteStore(Journal.openOrUnavailable(path, refuse), path, stateDir);
}

/** The store over an already opened `journal` of file `path`. */
export function sqliteStore(journal: Journal, path: string, stateDir: string): SqliteStore {
  const file = path === ':memory:' ? undefined : resolve(path);
  let queue = file === undefined ? new Queue() : queues.get(file);
  if (!queue) {
    queue = new Queue();
    queues.set(file!, queue);
  }
  const gate = queue;
  const queued = forwardQueries(journal, (call) => gate.run(call));
  // Inside a transaction (which holds the queue): straight to the connection.
  const direct = forwardQueries(journal, async (call) => call());
  let closed = false;
  return {
    ...queued,
    kind: 'sqlite',
    journal,
    get unavailable() {
      return journal.unavailable;
    },
    get problem() {
      return journal.problem;
    },
    healthy: () => journal.healthy(),
    opened: Promise.resolve(journal.unavailable === undefined),
    transaction: <T>(_account: string, fn: (tx: StateQueries) => Promise<T>) =>
      // BEGIN IMMEDIATE takes the file's write lock (other processes wait); the queue keeps this process's
      // other statements out until COMMIT or ROLLBACK.
      gate.run(() => journal.transactionAsync(() => fn(direct))),
    eventLedger: (account: string): EventLedger => new FileEventLedger(stateDir, account),
    close: async () => {
      if (closed) return;
      closed = true;
      // After the statements already queued.
      await gate.run(() => journal.close());
    },
  };
}
