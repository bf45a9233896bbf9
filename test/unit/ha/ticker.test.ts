/** The election's and the shares' timer (src/ha/ticker.ts): one tick at a time, a pause that holds. */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { Ticker } from '../../../src/ha/ticker.js';

afterEach(() => vi.useRealTimers());

/** A ticker whose ticks wait for `release()`, counting them. */
function gatedTicker() {
  let ticks = 0;
  let release: () => void = () => undefined;
  const ticker = new Ticker(async () => {
    ticks++;
    await new Promise<void>((resolve) => (release = resolve));
    return 100;
  });
  return { ticker, ticks: () => ticks, release: () => release() };
}

describe('Ticker', () => {
  it('a pause during a tick holds: the tick in progress schedules no next one', async () => {
    vi.useFakeTimers();
    const t = gatedTicker();
    t.ticker.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(t.ticks()).toBe(1);
    t.ticker.pause();
    t.release();
    await vi.advanceTimersByTimeAsync(1_000);
    expect(t.ticks()).toBe(1);
    // start ends the pause
    t.ticker.start();
    await vi.advanceTimersByTimeAsync(0);
    expect(t.ticks()).toBe(2);
    t.release();
    await t.ticker.stop();
  });

  it('a start during a tick waits for it: never two ticks at once', async () => {
    vi.useFakeTimers();
    const t = gatedTicker();
    t.ticker.start();
    await vi.advanceTimersByTimeAsync(0);
    t.ticker.pause();
    t.ticker.start();
    await vi.advanceTimersByTimeAsync(50);
    expect(t.ticks()).toBe(1);
    t.release();
    await vi.advanceTimersByTimeAsync(0);
    expect(t.ticks()).toBe(2);
    t.release();
    await t.ticker.stop();
  });
});
