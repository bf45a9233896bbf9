/**
 * Round-robin coverage of a poll whose items do not all fit in one run at the request budget: each run
 * takes the next slice of items not yet covered in the current round, in list order, so that every item is
 * still polled, only less often. A round ends when every current item has been covered; items added
 * meanwhile join the current round, items removed leave it.
 *
 * An item whose poll was cut at the run's deadline after its request was sent (a reply that drips or
 * hangs) is `deferred`: it counts as covered for the round and goes to the back of the following rounds, so
 * that it never again heads a run and keeps the others from being polled. It comes back to its place once a
 * poll of it finishes. An item whose request was still queued at the deadline (waiting for a budget token or
 * a concurrency slot, never sent) is not slow: it stays uncovered and heads the next run (issue 33: deferring
 * those sent up to `concurrency` unread servers to the back at every deadline, where the next deadline found
 * them again, and some were never read).
 */

/** Share of a run's time the budget plan spends; the rest is left for the other polls, retries and actions. */
export const BUDGET_MARGIN = 0.9;

/**
 * Requests one run may make at `ratePerSecond` within `deadlineMs` (the run's deadline), less the margin;
 * at least 1.
 */
export function runCapacity(ratePerSecond: number, deadlineMs: number): number {
  return Math.max(1, Math.floor((ratePerSecond * deadlineMs * BUDGET_MARGIN) / 1000));
}

export class RoundRobin<T> {
  readonly #key: (item: T) => string;
  /** keys covered in the current round */
  #covered = new Set<string>();
  /** keys of items whose last poll was cut at a deadline: polled after every other item of a round */
  readonly #slow = new Set<string>();

  constructor(key: (item: T) => string) {
    this.#key = key;
  }

  /** The next slice of at most `capacity` items; starts a new round when the last one is complete. */
  next(items: readonly T[], capacity: number): T[] {
    if (this.pending(items) === 0) this.#covered = new Set();
    const slice: T[] = [];
    for (const slow of [false, true])
      for (const item of items) {
        if (slice.length >= capacity) return slice;
        const key = this.#key(item);
        if (this.#slow.has(key) === slow && !this.#covered.has(key)) slice.push(item);
      }
    return slice;
  }

  /** Marks an item as covered in this round (its poll finished, successfully or not). */
  covered(item: T): void {
    const key = this.#key(item);
    this.#covered.add(key);
    this.#slow.delete(key);
  }

  /** Marks an item as covered in this round and sends it to the back of the next ones (its poll was cut). */
  deferred(item: T): void {
    const key = this.#key(item);
    this.#covered.add(key);
    this.#slow.add(key);
  }

  /**
   * An item whose run ended (its deadline, a stop) before its poll finished: `deferred` when its request had
   * been sent (a slow reply), left uncovered when it was still queued (it heads the next run).
   */
  cancelled(item: T, sent: boolean): void {
    if (sent) this.deferred(item);
  }

  /** Items of `items` not yet covered in the current round. */
  pending(items: readonly T[]): number {
    let pending = 0;
    for (const item of items) if (!this.#covered.has(this.#key(item))) pending++;
    return pending;
  }
}
