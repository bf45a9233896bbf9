/**
 * The failed attempts of the requests that carried one caller signal (a poll run's), by failure code
 * (transport-errors.ts `failureCode`): what a run that failed or was cut at its deadline logs (issue 38).
 * Kept per signal in a WeakMap: a run's tally goes with its signal.
 */
import { failureCode } from './transport-errors.js';

export class FailureTally {
  readonly #bySignal = new WeakMap<AbortSignal, Map<string, number>>();

  /** Counts one failed attempt of a request that carried `caller`. */
  count(caller: AbortSignal, error: unknown): void {
    let counts = this.#bySignal.get(caller);
    if (!counts) {
      counts = new Map();
      this.#bySignal.set(caller, counts);
    }
    const code = failureCode(error);
    counts.set(code, (counts.get(code) ?? 0) + 1);
  }

  /** The failed attempts of the requests that carried `caller`, by code; empty when none. */
  of(caller: AbortSignal): ReadonlyMap<string, number> {
    return this.#bySignal.get(caller) ?? new Map();
  }
}
