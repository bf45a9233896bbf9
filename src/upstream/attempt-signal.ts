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
 * Settles as `work` (one attempt) does; once `signal` (the attempt's) has fired, by ABORT_GRACE_MS at the
 * latest: with the error the signal's reason calls for (a deadline: a timeout whose outcome is unknown),
 * whatever the transport does. `onStuck` is called when the transport still holds the attempt `stuckAfterMs`
 * after that (past its own connect deadline): it will never send it (the client then replaces its Agent).
 */
export function settleBy<T>(
  work: Promise<T>,
  signal: AbortSignal,
  ctx: UpstreamContext,
  stuck: { stuckAfterMs: number; onStuck: () => void },
): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    let settled = false;
    let grace: NodeJS.Timeout | undefined;
    const onAbort = () => {
      grace = setTimeout(() => {
        const cause = new Error('the transport did not settle the aborted request');
        reject(classifyTransportError(cause, ctx, signal.reason as AbortReason));
        setTimeout(() => settled || stuck.onStuck(), stuck.stuckAfterMs).unref();
      }, ABORT_GRACE_MS);
    };
    if (signal.aborted) onAbort();
    else signal.addEventListener('abort', onAbort, { once: true });
    const done = () => {
      settled = true;
      clearTimeout(grace);
      signal.removeEventListener('abort', onAbort);
    };
    work.then(
      (value) => {
        done();
        resolve(value);
      },
      (error: unknown) => {
        done();
        reject(error as Error);
      },
    );
  });
}

/** The attempt signals of one client: one abort listener per caller signal, not one per attempt. */
export class AttemptSignals {
  /** attempts in flight per caller signal (a poll run's) */
  readonly #following = new WeakMap<AbortSignal, Set<AbortController>>();

  /**
   * A signal for one attempt of at most `timeoutMs`, following `caller`. Call `end()` when the attempt is
   * over, whatever its outcome: it clears the deadline and forgets the attempt.
   */
  start(timeoutMs: number, caller: AbortSignal | undefined): { signal: AbortSignal; end: () => void } {
    const controller = new AbortController();
    const deadline = setTimeout(() => controller.abort('deadline' satisfies AbortReason), timeoutMs);
    const following = caller && this.#follow(caller, controller);
    return {
      signal: controller.signal,
      end: () => {
        clearTimeout(deadline);
        following?.delete(controller);
      },
    };
  }

  /**
   * Aborts `controller` (as cancelled) when `signal` aborts. One listener per signal, on the set of its
   * attempts in flight: a poll run's signal would otherwise get and lose a listener per request.
   */
  #follow(signal: AbortSignal, controller: AbortController): Set<AbortController> {
    let attempts = this.#following.get(signal);
    if (!attempts) {
      const set = new Set<AbortController>();
      attempts = set;
      this.#following.set(signal, set);
      signal.addEventListener(
        'abort',
        () => {
          for (const each of set) each.abort('cancelled' satisfies AbortReason);
          set.clear();
        },
        { once: true },
      );
    }
    if (signal.aborted) controller.abort('cancelled' satisfies AbortReason);
    else attempts.add(controller);
    return attempts;
  }
}
