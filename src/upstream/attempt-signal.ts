/**
 * The abort signal of one HTTP attempt of the hosting API's client: it fires with reason `deadline` when the
 * attempt's own time is up, and with `cancelled` when the caller's signal (a poll run's deadline, shutdown)
 * fires. classifyTransportError (transport-errors.ts) reads that reason.
 */
import type { AbortReason } from './transport-errors.js';

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
