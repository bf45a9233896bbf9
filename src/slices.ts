/**
 * Long synchronous work (a 10,000-record server list, a 20,000-series metric) cut into slices with a yield to
 * the event loop between them, so that a scrape or a reply waits for one slice at most, never for the whole.
 */

/** How long a slice runs before it yields, in milliseconds. */
export const SLICE_MS = 8;

/** The clock of one piece of sliced work. `await slices.next()` between items; cheap when no yield is due. */
export class Slices {
  #start = performance.now();

  /** Yields (setImmediate) when the current slice has run SLICE_MS; resolves at once otherwise. */
  async next(): Promise<void> {
    if (performance.now() - this.#start < SLICE_MS) return;
    await new Promise<void>((resolve) => setImmediate(resolve));
    this.#start = performance.now();
  }
}

/** Items handled between two looks at the clock. */
export const CLOCK_EVERY = 256;

/**
 * Resolves once the event loop has come round: its timers and the I/O callbacks waiting (a scrape) have run.
 * One setImmediate does not do it when called from an I/O callback (a reply's end): the immediate runs in the
 * same turn of the loop, before its timers; the second, set from the check phase, runs in the next turn.
 */
export function yieldToLoop(): Promise<void> {
  return new Promise<void>((resolve) => setImmediate(() => setImmediate(resolve)));
}

/**
 * Text longer than this (in characters) is scrubbed and parsed apart, the event loop coming round before each:
 * the server list (2.4 MB at 10,000 servers) took 40–70 ms of the main thread in one piece; a firewall
 * history (a few KB) never waits.
 */
export const APART_ABOVE_CHARS = 256 * 1024;
