/**
 * The read slots of the hosting API's client: at most `concurrency` reads in flight, first come first served,
 * every waiting read before any waiting background read, and background reads (graphs, catalog) holding at
 * most backgroundSlots of them, so that a slow picture never keeps attack detection from a slot (issue 33).
 * Writes do not take a slot (client.ts).
 */

/** Which queue a read waits in. */
export type SlotPriority = 'read' | 'background';

/** Slots background reads (graphs, catalog) may hold at most: half the concurrency, at least one. */
export const backgroundSlots = (concurrency: number): number => Math.max(1, Math.floor(concurrency / 2));

export class ReadSlots {
  readonly concurrency: number;
  /** reads in flight under the concurrency limit */
  #active = 0;
  /** of which background reads (at most backgroundSlots) */
  #activeBackground = 0;
  /** reads waiting for a slot, first come first served: every waiting read before any waiting background read */
  readonly #queued: Record<SlotPriority, Array<() => void>> = { read: [], background: [] };

  constructor(concurrency: number) {
    this.concurrency = concurrency;
  }

  /** Reads waiting for a slot. */
  get pendingCount(): number {
    return this.#queued.read.length + this.#queued.background.length;
  }

  /** Reads holding a slot now. */
  get activeCount(): number {
    return this.#active;
  }

  /**
   * Takes a slot for a read: at once (undefined), or a promise that resolves once the read holds one, or
   * rejects with the signal's reason when `signal` aborts first (the read then holds no slot and leaves the
   * queue). `release` a slot held, whatever happens. A slot free now is taken without a promise, so the read
   * goes on to its budget token in the same tick: reads meet the budget in the order they came.
   */
  acquire(priority: SlotPriority, signal?: AbortSignal): Promise<void> | undefined {
    if (this.#canStart(priority)) {
      this.#hold(priority);
      return undefined;
    }
    if (signal?.aborted) return Promise.reject(signal.reason as Error);
    return new Promise<void>((resolve, reject) => {
      const queue = this.#queued[priority];
      const onAbort = () => {
        const at = queue.indexOf(granted);
        if (at >= 0) queue.splice(at, 1);
        reject(signal!.reason as Error);
      };
      const granted = () => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      queue.push(granted);
    });
  }

  /** Frees a slot and passes it on: to the next waiting read, else to the next waiting background read. */
  release(priority: SlotPriority): void {
    this.#active--;
    if (priority === 'background') this.#activeBackground--;
    for (const next of ['read', 'background'] as const) {
      if (this.#queued[next].length === 0 || !this.#canStart(next)) continue;
      this.#hold(next);
      this.#queued[next].shift()!();
      return;
    }
  }

  /**
   * A read may take a slot: one is free and, for a background read, no other read waits and background
   * reads hold fewer than backgroundSlots of them.
   */
  #canStart(priority: SlotPriority): boolean {
    if (this.#active >= this.concurrency) return false;
    if (priority === 'read') return true;
    return this.#queued.read.length === 0 && this.#activeBackground < backgroundSlots(this.concurrency);
  }

  #hold(priority: SlotPriority): void {
    this.#active++;
    if (priority === 'background') this.#activeBackground++;
  }
}
