/**
 * The timer of a periodic database check (leader.ts, shares.ts): one tick at a time, the next one scheduled when
 * the previous has ended, after the delay the tick returns; stopping waits for the tick in progress.
 */
export class Ticker {
  readonly #tick: () => Promise<number>;
  #timer: NodeJS.Timeout | undefined;
  /** the tick in progress */
  #ticking: Promise<void> = Promise.resolve();
  #stopped = false;
  /** paused (`pause`) until `start` */
  #paused = false;

  /** `tick` resolves to the delay before the next tick, ms; it must not reject. */
  constructor(tick: () => Promise<number>) {
    this.#tick = tick;
  }

  get stopped(): boolean {
    return this.#stopped;
  }

  /** Ticks after `ms` (at once by default), unless stopped or a tick is already due; ends a pause. */
  start(ms = 0): void {
    this.#paused = false;
    this.#schedule(ms);
  }

  /** The tick that was due comes after `ms` instead (nothing when no tick is due: one is in progress). */
  postpone(ms: number): void {
    if (this.#timer === undefined) return;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    this.#schedule(ms);
  }

  /** No tick until `start` again, not even after the tick in progress. */
  pause(): void {
    this.#paused = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #schedule(ms: number): void {
    if (this.#stopped || this.#paused || this.#timer) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      // After the tick in progress, if any (a start() during one): never two at once.
      this.#ticking = this.#ticking.then(() => this.#tick()).then((next) => this.#schedule(next));
    }, ms);
    this.#timer.unref();
  }

  /** No tick any more; resolves when the tick in progress has ended. */
  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
    await this.#ticking;
  }
}
