/**
 * The abort signal of one HTTP attempt of the hosting API's client: it fires with reason `deadline` when the
 * attempt's own time is up, and with `cancelled` when the caller's signal (a poll run's deadline, shutdown)
 * fires. classifyTransportError (transport-errors.ts) reads that reason. `settleBy` makes the attempt settle by that
 * signal whatever the transport does.
 */
import type { UpstreamContext } from '../errors.js';
import { type AbortReason, classifyTransportError } from './transport-errors.js';

/**
 * How long an attempt whose signal fired may take to settle by itself before `settleBy` settles it: undici
 * settles an aborted request within a few microtasks, except one it holds queued (issue 38), which it never
 * settles. Its own error is the better one (it tells a refused connection from a lost reply), hence a moment.
 */
export const ABORT_GRACE_MS = 100;

/**
 * One HTTP attempt's abort signal and deadline. Aborted only through `abort` (by its deadline, or by the
 * caller's signal through AttemptSignals), so what waits for the abort (`settleBy`) is called directly: no
 * event listener is added and removed per attempt.
 */
export class Attempt {
  readonly #controller = new AbortController();
  readonly #deadline: NodeJS.Timeout;
  /** the caller's attempts in flight, this one among them, when it follows a caller's signal */
  #following: Set<Attempt> | undefined;
  /** called once when the attempt aborts (settleBy's grace) */
  onAbort: (() => void) | undefined;
  /** called once when the attempt aborts, after `onAbort`: the exchange under way stops (reply.ts collectReply) */
  onTransportAbort: (() => void) | undefined;

  constructor(timeoutMs: number) {
    this.#deadline = setTimeout(() => this.abort('deadline'), timeoutMs);
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  abort(reason: AbortReason): void {
    if (this.#controller.signal.aborted) return;
    this.#controller.abort(reason);
    this.onAbort?.();
    this.onTransportAbort?.();
  }

  /** follows `set`, the attempts of a caller's signal */
  follow(set: Set<Attempt>): void {
    this.#following = set;
    set.add(this);
  }

  /** The attempt is over, whatever its outcome: its deadline is cleared and its caller forgets it. */
  end(): void {
    clearTimeout(this.#deadline);
    this.#following?.delete(this);
    this.onAbort = undefined;
    this.onTransportAbort = undefined;
  }
}

/** What settleBy does about an attempt the transport holds: one per client, not one per attempt. */
export interface StuckAttempts {
  /** how long after the grace an attempt still held counts as stuck, ms */
  stuckAfterMs: number;
  /** called with the attempt's context when it is */
  onStuck: (ctx: UpstreamContext) => void;
}

/**
 * Settles as `work` (one attempt) does; once `attempt` was aborted, by ABORT_GRACE_MS at the latest: with the
 * error the abort's reason calls for (a deadline: a timeout whose outcome is unknown), whatever the transport
 * does. `onStuck` is called when the transport still holds the attempt `stuckAfterMs` after that (past its own
 * connect deadline): it will never send it (the client then replaces its Agent).
 */
export function settleBy<T>(
  work: Promise<T>,
  attempt: Attempt,
  ctx: UpstreamContext,
  stuck: StuckAttempts,
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    let grace: NodeJS.Timeout | undefined;
    const { signal } = attempt;
    const onAbort = () => {
      grace = setTimeout(() => {
        const cause = new Error('the transport did not settle the aborted request');
        reject(classifyTransportError(cause, ctx, signal.reason as AbortReason));
        setTimeout(() => settled || stuck.onStuck(ctx), stuck.stuckAfterMs).unref();
      }, ABORT_GRACE_MS);
    };
    if (signal.aborted) onAbort();
    else attempt.onAbort = onAbort;
    work.then(
      (value) => {
        settled = true;
        clearTimeout(grace);
        resolve(value);
      },
      (error: unknown) => {
        settled = true;
        clearTimeout(grace);
        reject(error as Error);
      },
    );
  });
}

/** The attempts of one client: one abort listener per caller signal, not one per attempt. */
export class AttemptSignals {
  /** attempts in flight per caller signal (a poll run's) */
  readonly #following = new WeakMap<AbortSignal, Set<Attempt>>();

  /**
   * One attempt of at most `timeoutMs`, following `caller`. Call its `end()` when the attempt is over,
   * whatever its outcome: it clears the deadline and forgets the attempt.
   */
  start(timeoutMs: number, caller: AbortSignal | undefined): Attempt {
    const attempt = new Attempt(timeoutMs);
    if (caller) this.#follow(caller, attempt);
    return attempt;
  }

  /**
   * Aborts `attempt` (as cancelled) when `signal` aborts. One listener per signal, on the set of its
   * attempts in flight: a poll run's signal would otherwise get and lose a listener per request.
   */
  #follow(signal: AbortSignal, attempt: Attempt): void {
    if (signal.aborted) {
      attempt.abort('cancelled');
      return;
    }
    let attempts = this.#following.get(signal);
    if (!attempts) {
      const set = new Set<Attempt>();
      attempts = set;
      this.#following.set(signal, set);
      signal.addEventListener(
        'abort',
        () => {
          for (const each of [...set]) each.abort('cancelled');
          set.clear();
        },
        { once: true },
      );
    }
    attempt.follow(attempts);
  }
}
