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
