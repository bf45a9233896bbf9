/**
 * The attack-event ids of each service's latest firewall history, kept under
 * `<state_dir>/events/<account>.json` so that a restarted daemon does not count again the events it
 * counted before (`baremetal_firewall_attack_events_total` would otherwise jump by the whole last hour on
 * every deploy). Bounded by what the API currently reports: one entry per service whose latest history had
 * events, holding that history's ids; a removed service's entry goes with its series. Written atomically
 * (temp file, then rename) after each firewall run; read once at start.
 */
import { mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Ajv } from 'ajv';
import type { Static } from 'typebox';
import type { EventLedger } from '../store.js';
import { ledgerFileSchema } from './generated/event-ledger.js';

type LedgerFile = Static<typeof ledgerFileSchema>;
const validate = new Ajv({ strict: true }).compile<LedgerFile>(ledgerFileSchema);

export class FileEventLedger implements EventLedger {
  readonly #file: string;

  /** `stateDir`: the daemon's state directory; `account`: the account (a validated name, safe as a file name) */
  constructor(stateDir: string, account: string) {
    this.#file = join(stateDir, 'events', `${account}.json`);
  }

  /**
   * The ids the previous run left, by `type/id`. A missing file is an empty ledger; an unreadable or
   * malformed one is an empty ledger and a `problem` (the events it held count again, once).
   */
  async load(): Promise<{ services: Map<string, Set<string>>; problem?: string }> {
    let text: string;
    try {
      text = await readFile(this.#file, 'utf8');
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code;
      return code === 'ENOENT'
        ? { services: new Map() }
        : { services: new Map(), problem: `cannot read ${this.#file} (${code ?? 'error'})` };
    }
    let doc: unknown;
    try {
      doc = JSON.parse(text);
    } catch {
      return { services: new Map(), problem: `${this.#file} is not JSON` };
    }
    if (!validate(doc)) return { services: new Map(), problem: `${this.#file} is not an event ledger` };
    return { services: new Map(Object.entries(doc.services).map(([key, ids]) => [key, new Set(ids)])) };
  }

  /** Replaces the ledger with `services` (`type/id` → ids), atomically. */
  async save(services: ReadonlyMap<string, ReadonlySet<string>>): Promise<void> {
    const doc: LedgerFile = { version: 1, services: {} };
    for (const [key, ids] of services) if (ids.size > 0) doc.services[key] = [...ids];
    await mkdir(join(this.#file, '..'), { recursive: true });
    await writeFile(`${this.#file}.tmp`, JSON.stringify(doc));
    await rename(`${this.#file}.tmp`, this.#file);
  }
}
