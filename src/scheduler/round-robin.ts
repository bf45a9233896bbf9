/**
 * Round-robin coverage of a poll whose items do not all fit in one run at the request budget: each run
 * takes the next slice of items not yet covered in the current round, in list order, so that every item is
 * still polled, only less often. A round ends when every current item has been covered; items added
 * meanwhile join the current round, items removed leave it.
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

  constructor(key: (item: T) => string) {
    this.#key = key;
  }

  /** The next slice of at most `capacity` items; starts a new round when the last one is complete. */
  next(items: readonly T[], capacity: number): T[] {
    if (this.pending(items) === 0) this.#covered = new Set();
    const slice: T[] = [];
    for (const item of items) {
      if (slice.length >= capacity) break;
      if (!this.#covered.has(this.#key(item))) slice.push(item);
    }
    return slice;
  }

  /** Marks an item as covered in this round (its poll finished, successfully or not). */
  covered(item: T): void {
    this.#covered.add(this.#key(item));
  }

  /** Items of `items` not yet covered in the current round. */
  pending(items: readonly T[]): number {
    let pending = 0;
    for (const item of items) if (!this.#covered.has(this.#key(item))) pending++;
    return pending;
  }
}
