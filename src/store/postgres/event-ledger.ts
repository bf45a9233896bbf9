/**
 * The attack-event ids of one account in PostgreSQL (table `event_ids`, one row per service), used instead of
 * the file ledger when the state is shared by replicas: the replica that polls next reads what the previous
 * one saved. `load()` only reads.
 */
import type { Run } from './queries.js';
import type { EventLedger } from '../store.js';

/** What the ledger needs of the PostgreSQL store. */
export interface LedgerDatabase {
  run: Run;
  /** runs `fn` in one transaction */
  transaction<T>(fn: (run: Run) => Promise<T>): Promise<T>;
  /** why the store is not open, if it is not */
  unavailable(): string | undefined;
}

export class PostgresEventLedger implements EventLedger {
  readonly #account: string;
  readonly #db: LedgerDatabase;

  constructor(account: string, db: LedgerDatabase) {
    this.#account = account;
    this.#db = db;
  }

  async load(): Promise<{ services: Map<string, Set<string>>; problem?: string }> {
    const unavailable = this.#db.unavailable();
    if (unavailable !== undefined)
      return { services: new Map(), problem: `the state database is unavailable: ${unavailable}` };
    try {
      const { rows } = await this.#db.run('SELECT service_key, ids FROM event_ids WHERE account = $1', [this.#account]);
      const services = new Map<string, Set<string>>();
      for (const r of rows) {
        const ids = r.ids as unknown;
        if (typeof r.service_key !== 'string' || !Array.isArray(ids) || !ids.every((id) => typeof id === 'string'))
          return { services: new Map(), problem: `the event_ids rows of account ${this.#account} are malformed` };
        services.set(r.service_key, new Set(ids));
      }
      return { services };
    } catch (error) {
      return { services: new Map(), problem: (error as Error).message };
    }
  }

  async save(services: ReadonlyMap<string, ReadonlySet<string>>): Promise<void> {
    const doc: Record<string, string[]> = {};
    for (const [key, ids] of services) if (ids.size > 0) doc[key] = [...ids];
    await this.#db.transaction(async (run) => {
      await run('DELETE FROM event_ids WHERE account = $1', [this.#account]);
      await run(
        `INSERT INTO event_ids (account, service_key, ids)
         SELECT $1, key, ARRAY(SELECT jsonb_array_elements_text(value)) FROM jsonb_each($2::jsonb)`,
        [this.#account, JSON.stringify(doc)],
      );
    });
  }
}
