/**
 * The leader's duty to the escalation ladders whose climb was lost (ladder.ts: a step settled `ineffective`
 * holds its climb mark until what follows it is decided). A mark still held CLIMB_GRACE_MS after it was made,
 * and after this replica started leading (another replica's climb may still be deciding), on a row settled
 * `ineffective`, is handed to a person by the engine's escalation (engine.ts): nothing is sent so late. Which
 * rows it looks at: this replica's own climbs that failed (`owe`), and the marks it reads from the store — all of
 * them when it starts leading, and those made lately every CLIMB_GRACE_MS after (a replica that led before may
 * settle a step after this one read them). The engine's tick runs `handOver` before its verifications, so no
 * climb of this replica is deciding meanwhile.
 */
import type { Logger } from 'pino';
import type { JournalEntry } from '../store/rows.js';
import type { StateQueries } from '../store/store.js';
import { CLIMB_GRACE_MS, CLIMB_MARK_PREFIX, climbMarkKey, lostClimbMessage } from './ladder.js';

/** What the duty needs: the engine's store and logger, its clock, and its escalation. */
export interface LostClimbDeps {
  account: string;
  store: StateQueries;
  logger: Logger;
  /** ms since epoch */
  now: () => number;
  /**
   * Hands `row`'s episode to a person with `message`, taking its mark (engine.ts); `lost`: as a lost climb (its
   * episode's resolution and its ladder's later rows are checked first). Throws JournalError.
   */
  escalate: (row: JournalEntry, message: string, lost: boolean) => Promise<unknown>;
}

export class LostClimbs {
  readonly #deps: LostClimbDeps;
  /** the rows to look at, each with the escalation's message when one of this replica's failed to be written */
  readonly #owed = new Map<number, string | undefined>();
  /** when the marks were last read (ms; -Infinity: not since `started`); undefined while not leading */
  #readAt: number | undefined;
  /** when this replica last started leading (ms) */
  #ledSince = -Infinity;

  constructor(deps: LostClimbDeps) {
    this.#deps = deps;
  }

  /** This replica started leading: the marks are read at the next `handOver`. */
  started(): void {
    this.#readAt = -Infinity;
    this.#ledSince = this.#deps.now();
  }

  /** This replica stopped leading: no marks are read until it leads again. */
  stopped(): void {
    this.#readAt = undefined;
  }

  /**
   * The climb of `row` (its id) failed: its episode is handed over, with `message` when what failed to be
   * written was an escalation of its own (every step ineffective, the rule changed), else as a lost climb.
   */
  owe(rowId: number, message?: string): void {
    if (message !== undefined || !this.#owed.has(rowId)) this.#owed.set(rowId, message);
  }

  /** Reads the marks when due, and hands over each row past its grace. A row the journal fails on is tried again next time; never rejects. */
  async handOver(): Promise<void> {
    const { account, store, logger } = this.#deps;
    const now = this.#deps.now();
    if (this.#readAt !== undefined && now - this.#readAt >= CLIMB_GRACE_MS) {
      try {
        // All at the first read of a lead; then those claimed since a few reads ago (an index on seen_at).
        const since = this.#readAt === -Infinity ? undefined : this.#readAt - 4 * CLIMB_GRACE_MS;
        for (const mark of await store.claimsOf(account, CLIMB_MARK_PREFIX, since)) this.owe(mark.actionId);
        this.#readAt = now;
      } catch (error) {
        logger.warn({ err: error }, 'the marks of owed ladder climbs could not be read: read again at the next tick');
      }
    }
    for (const [id, message] of [...this.#owed]) {
      try {
        const mark = await store.delivery(climbMarkKey(id));
        const row = mark && (await store.get(id));
        // Still verifying: this leader's verifier settles and climbs it, and its climb takes the mark.
        if (row?.verification === 'verifying') continue;
        if (row?.verification !== 'ineffective') {
          this.#owed.delete(id);
          continue;
        }
        if (now - Math.max(mark!.createdAt, this.#ledSince) <= CLIMB_GRACE_MS) continue;
        await (message !== undefined
          ? this.#deps.escalate(row, message, false)
          : this.#deps.escalate(row, lostClimbMessage(row, mark!.createdAt, now), true));
        this.#owed.delete(id);
      } catch (error) {
        logger.warn(
          { err: error, journal_id: id },
          'an episode whose ladder climb was lost could not be handed over: tried again at the next tick',
        );
      }
    }
  }
}
