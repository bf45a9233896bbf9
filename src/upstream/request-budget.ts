/**
 * The request budget of one upstream client: a token bucket of `ratePerSecond` tokens a second (holding at
 * most `burst`), one token per HTTP attempt, shared by every poll and action of the client. Three queues,
 * served in order: a waiting write (an action) before any waiting read, so a remediation call never waits
 * behind queued poll requests; a waiting read (the server list, the firewall histories: attack detection,
 * and an operator's read) before any waiting background read (graphs and catalog), so a picture of last
 * week's traffic never delays attack detection (issue 33). A pause (a `429`/`Retry-After`) stops the whole bucket: nothing
 * is granted until it ends, and the bucket restarts empty so the requests held back do not burst.
 *
 * Why not a library: bottleneck (priorities, reservoirs) has had no release since 2019; p-throttle has no
 * priorities; p-queue has priorities but a fixed-window interval cap and an open-ended pause, and would
 * replace p-limit. A two-queue token bucket is this small, and its clock can be injected for tests.
 */

/** Who asks, highest first: actions, then reads, then background reads (graphs, catalog). */
export type BudgetPriority = 'write' | 'read' | 'background';

/** The priorities in the order their waiters are served. */
const PRIORITIES: readonly BudgetPriority[] = ['write', 'read', 'background'];

export interface RequestBudgetOptions {
  /** tokens added per second: the sustained request rate */
  ratePerSecond: number;
  /**
   * tokens the bucket holds at most (the largest burst), and holds at the start; default a twentieth of a
   * second's worth, at least 1, so that any one second sees at most 1.05 × the rate. The other half of a
   * provider's usual 10 % headroom is left for the jitter between our grants and its arrivals: a tenth of a
   * second's worth used it all, and a provider limiting at 1.1 × the rate answered 429 (issue 22). A fiftieth
   * was too little for the round-robin plan, whose run capacity counts on the first tokens of a run.
   */
  burst?: number;
  /** a monotonic clock in milliseconds; injectable for tests */
  now?: () => number;
  /** schedules `fn` after `ms`; returns a cancel function (tests drive it by hand) */
  setTimer?: (fn: () => void, ms: number) => () => void;
}

interface Waiter {
  resolve: () => void;
  reject: (reason: unknown) => void;
  signal: AbortSignal | undefined;
  onAbort: () => void;
}

/** The default burst is this fraction of a second's worth of tokens (see `burst`). */
const DEFAULT_BURST_DIVISOR = 20;

const realTimer = (fn: () => void, ms: number) => {
  const timer = setTimeout(fn, ms);
  return () => clearTimeout(timer);
};

export class RequestBudget {
  readonly ratePerSecond: number;
  readonly burst: number;
  readonly #now: () => number;
  readonly #setTimer: NonNullable<RequestBudgetOptions['setTimer']>;
  readonly #queues: Record<BudgetPriority, Waiter[]> = { write: [], read: [], background: [] };
  #tokens: number;
  #refilledAt: number;
  #pausedUntil = 0;
  #cancelTimer: (() => void) | undefined;

  constructor(options: RequestBudgetOptions) {
    if (!(options.ratePerSecond > 0)) throw new RangeError('ratePerSecond must be positive');
    this.ratePerSecond = options.ratePerSecond;
    this.burst = options.burst ?? Math.max(1, options.ratePerSecond / DEFAULT_BURST_DIVISOR);
    this.#now = options.now ?? (() => performance.now());
    this.#setTimer = options.setTimer ?? realTimer;
    this.#tokens = this.burst;
    this.#refilledAt = this.#now();
  }

  /** Requests waiting for a token, by priority. */
  get waiting(): Record<BudgetPriority, number> {
    const q = this.#queues;
    return { write: q.write.length, read: q.read.length, background: q.background.length };
  }

  /**
   * Takes a token now if one is available and nobody of the same or a higher priority waits (a write never
   * waits behind reads, a read never behind background reads); false otherwise, and the caller then waits
   * with `take`. The common case of a budget that is not exhausted costs no promise, queue entry or abort
   * listener.
   */
  tryTake(priority: BudgetPriority): boolean {
    for (const p of PRIORITIES) {
      if (this.#queues[p].length > 0) return false;
      if (p === priority) break;
    }
    const now = this.#now();
    if (now < this.#pausedUntil) return false;
    this.#refill(now);
    if (this.#tokens < 1) return false;
    this.#tokens -= 1;
    return true;
  }

  /** Resolves when a token is granted; rejects with the signal's reason when it aborts first. */
  take(priority: BudgetPriority, signal?: AbortSignal): Promise<void> {
    if (signal?.aborted) return Promise.reject(signal.reason);
    return new Promise<void>((resolve, reject) => {
      const queue = this.#queues[priority];
      const waiter: Waiter = {
        resolve,
        reject,
        signal,
        onAbort: () => {
          const at = queue.indexOf(waiter);
          if (at >= 0) queue.splice(at, 1);
          reject(signal!.reason);
        },
      };
      signal?.addEventListener('abort', waiter.onAbort, { once: true });
      queue.push(waiter);
      this.#drain();
    });
  }

  /** Grants nothing for `ms` (a Retry-After); the bucket restarts empty afterwards. */
  pauseFor(ms: number): void {
    this.#pausedUntil = Math.max(this.#pausedUntil, this.#now() + ms);
    this.#tokens = 0;
    this.#refilledAt = this.#pausedUntil;
    this.#schedule();
  }

  #drain(): void {
    const now = this.#now();
    if (now >= this.#pausedUntil) this.#refill(now);
    while (now >= this.#pausedUntil && this.#tokens >= 1) {
      const waiter = this.#queues.write.shift() ?? this.#queues.read.shift() ?? this.#queues.background.shift();
      if (!waiter) break;
      this.#tokens -= 1;
      waiter.signal?.removeEventListener('abort', waiter.onAbort);
      waiter.resolve();
    }
    this.#schedule(now);
  }

  /** Adds the tokens earned since the last refill (outside a pause). */
  #refill(now: number): void {
    if (now <= this.#refilledAt) return;
    this.#tokens = Math.min(this.burst, this.#tokens + ((now - this.#refilledAt) * this.ratePerSecond) / 1000);
    this.#refilledAt = now;
  }

  /** One timer at most: wakes up when the next token (or the end of a pause) is due. */
  #schedule(now = this.#now()): void {
    this.#cancelTimer?.();
    this.#cancelTimer = undefined;
    if (PRIORITIES.every((p) => this.#queues[p].length === 0)) return;
    // After a pause the bucket is empty from its end; otherwise the missing part of a token at the rate.
    const from = Math.max(now, this.#refilledAt);
    const delay = from - now + (Math.max(0, 1 - this.#tokens) * 1000) / this.ratePerSecond;
    this.#cancelTimer = this.#setTimer(
      () => {
        this.#cancelTimer = undefined;
        this.#drain();
      },
      Math.max(0, Math.ceil(delay)),
    );
  }
}
