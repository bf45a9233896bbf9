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

  /** `tick` resolves to the delay before the next tick, ms; it must not reject. */
  constructor(tick: () => Promise<number>) {
    this.#tick = tick;
  }

  get stopped(): boolean {
    return this.#stopped;
  }

  /** Ticks after `ms` (at once by default), unless stopped or a tick is already due. */
  start(ms = 0): void {
    if (this.#stopped || this.#timer) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#ticking = this.#tick().then((next) => this.start(next));
    }, ms);
    this.#timer.unref();
  }

  /** The tick that was due comes after `ms` instead (nothing when no tick is due: one is in progress). */
  postpone(ms: number): void {
    if (this.#timer === undefined) return;
    this.pause();
    this.start(ms);
  }

  /** No tick until `start` again (the tick in progress, if any, still schedules the next). */
  pause(): void {
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  /** No tick any more; resolves when the tick in progress has ended. */
  async stop(): Promise<void> {
    this.#stopped = true;
    this.pause();
    await this.#ticking;
  }
}
