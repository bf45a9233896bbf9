/**
 * The membership's terms in the single-leader mode (one leader for every account): every `tickMs` this replica
 * refreshes its heartbeat row with its terms (mode `single`) and judges them against the live replicas
 * (terms.ts); `agrees` is what the election asks before trying for the lock (ha/leader.ts `mayLead`), so a
 * replica without `database.share_accounts` among sharing ones never leads beside them, and a sharing replica
 * sees it (its row, and the lock) and refuses in turn when it is the younger.
 */
import type { Logger } from 'pino';
import type { Membership } from '../store/postgres/membership.js';
import type { Agreement } from './agreement.js';
import { judge } from './terms.js';
import { Ticker } from './ticker.js';

export interface TermsWatchOptions {
  membership: Pick<Membership, 'replica' | 'bootId' | 'terms' | 'members' | 'leave'>;
  agreement: Pick<Agreement, 'judged'>;
  logger: Logger;
  /** between two heartbeats, ms */
  tickMs: number;
  /** the message of a database error, scrubbed of the URL's secrets */
  reason: (error: unknown) => string;
  /** `agrees` turned true */
  onAgreed?: () => void;
}

export class TermsWatch {
  readonly #o: TermsWatchOptions;
  readonly #ticker = new Ticker(async () => {
    await this.#tick();
    return this.#o.tickMs;
  });
  #agrees = false;
  #beats = 0;
  /** the database error last logged, so that an outage is logged once */
  #logged: string | undefined;

  constructor(options: TermsWatchOptions) {
    this.#o = options;
  }

  /**
   * True once this replica's heartbeat has been seen for one tick (a replica starting beside another sees it)
   * and the latest judgement found it agreeing; kept across a heartbeat that fails (the election needs the
   * database anyway).
   */
  get agrees(): boolean {
    return this.#agrees;
  }

  start(): void {
    this.#ticker.start();
  }

  /** Stops the heartbeat and deletes this replica's row. */
  async stop(): Promise<void> {
    await this.#ticker.stop();
    await this.#o.membership.leave().catch(() => undefined);
  }

  async #tick(): Promise<void> {
    const { membership } = this.#o;
    try {
      const beat = await membership.members();
      this.#logged = undefined;
      const judgement = judge(
        { replica: membership.replica, bootId: membership.bootId, terms: membership.terms },
        beat.live,
        false,
        this.#o.tickMs,
      );
      this.#o.agreement.judged(judgement);
      const before = this.#agrees;
      this.#agrees = judgement.mismatch === undefined && ++this.#beats >= 2;
      if (this.#agrees && !before) this.#o.onAgreed?.();
    } catch (error) {
      const reason = this.#o.reason(error);
      if (this.#logged !== reason)
        this.#o.logger.warn({ reason }, 'cannot refresh this replica’s heartbeat row; retrying');
      this.#logged = reason;
    }
  }
}
