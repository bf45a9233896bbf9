/**
 * Says what the membership judgement (terms.ts `judge`) found, on every heartbeat: a replica that disagrees
 * with the live membership logs why (at once, then once a minute while it lasts) and sets
 * `baremetal_ha_config_mismatch{reason}`; an account in some live replica's config that no agreeing replica has
 * is logged the same way and counted in `baremetal_ha_account_unled{account}`. `problem` is the mismatch for
 * `/readyz`.
 */
import type { Logger } from 'pino';
import type { Metrics } from '../metrics/definitions.js';
import { MISMATCH_REASONS, type Judgement, type Mismatch } from './terms.js';

/** A lasting mismatch or unled account is logged again this often, ms. */
export const REPEAT_LOG_MS = 60_000;

export interface AgreementDeps {
  logger: Logger;
  metrics: Pick<Metrics, 'haConfigMismatch' | 'haAccountUnled'>;
  /** a gauge changed (the exposition renders soon) */
  onChange: () => void;
  /** ms, monotonic (default performance.now) */
  now?: () => number;
}

export class Agreement {
  readonly #d: AgreementDeps;
  #mismatch: Mismatch | undefined;
  #mismatchLoggedAt = -Infinity;
  #unled: string[] = [];
  #unledLoggedAt = -Infinity;
  /** the accounts ever counted, set to 0 once led again */
  readonly #unledSeen = new Set<string>();

  constructor(deps: AgreementDeps) {
    this.#d = deps;
    for (const reason of MISMATCH_REASONS) deps.metrics.haConfigMismatch.set({ reason }, 0);
  }

  /** The mismatch in force, for `/readyz`: undefined while this replica agrees. */
  get problem(): string | undefined {
    if (this.#mismatch?.waiting) return `this replica leads no account yet: ${this.#mismatch.message}`;
    return this.#mismatch && `this replica disagrees with the live replicas: ${this.#mismatch.message}`;
  }

  get mismatch(): Mismatch | undefined {
    return this.#mismatch;
  }

  /** Records one heartbeat's judgement. */
  judged(j: Judgement): void {
    const now = (this.#d.now ?? performance.now.bind(performance))();
    this.#judgedMismatch(j.mismatch, now);
    this.#judgedUnled(j.unled, now);
  }

  #judgedMismatch(mismatch: Mismatch | undefined, now: number): void {
    const before = this.#mismatch;
    this.#mismatch = mismatch;
    // A name held by a previous boot's expiring row (`waiting`) is no mismatch of the configuration: no gauge.
    const gauged = (m: Mismatch | undefined) => (m?.waiting ? undefined : m?.reason);
    if (gauged(before) !== gauged(mismatch)) {
      for (const reason of MISMATCH_REASONS)
        this.#d.metrics.haConfigMismatch.set({ reason }, reason === gauged(mismatch) ? 1 : 0);
      this.#d.onChange();
    }
    if (!mismatch) {
      if (before)
        this.#d.logger.info('this replica agrees with the live replicas again: it takes its share of the accounts');
      this.#mismatchLoggedAt = -Infinity;
      return;
    }
    if (before?.message === mismatch.message && now - this.#mismatchLoggedAt < REPEAT_LOG_MS) return;
    this.#mismatchLoggedAt = now;
    if (mismatch.waiting) {
      this.#d.logger.warn(
        { reason: mismatch.reason },
        `this replica leads no account yet (it serves /metrics; /readyz says not ready): ${mismatch.message}`,
      );
      return;
    }
    this.#d.logger.error(
      { reason: mismatch.reason },
      `this replica disagrees with the live replicas and leads no account (it serves /metrics; /readyz says not ready): ${mismatch.message}`,
    );
  }

  #judgedUnled(unled: string[], now: number): void {
    const changed = unled.join() !== this.#unled.join();
    this.#unled = unled;
    if (changed) {
      for (const account of unled) this.#unledSeen.add(account);
      for (const account of this.#unledSeen)
        this.#d.metrics.haAccountUnled.set({ account }, unled.includes(account) ? 1 : 0);
      this.#d.onChange();
    }
    if (unled.length === 0) {
      this.#unledLoggedAt = -Infinity;
      return;
    }
    if (!changed && now - this.#unledLoggedAt < REPEAT_LOG_MS) return;
    this.#unledLoggedAt = now;
    this.#d.logger.error(
      { accounts: unled },
      'accounts in some live replica’s config that no agreeing replica has: nobody leads them (give every replica the same accounts)',
    );
  }
}
