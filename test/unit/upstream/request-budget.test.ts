import { describe, expect, it } from 'vitest';
import { RequestBudget, type BudgetPriority } from '../../../src/upstream/request-budget.js';

/** Lets every settled promise's callbacks run. */
const flush = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A hand-driven clock and timer: `advance(ms)` fires the timers that are due, in order. */
function fakeClock() {
  let now = 0;
  let timers: Array<{ at: number; fn: () => void; id: number }> = [];
  let ids = 0;
  return {
    now: () => now,
    setTimer: (fn: () => void, ms: number) => {
      const id = ++ids;
      timers.push({ at: now + ms, fn, id });
      return () => {
        timers = timers.filter((t) => t.id !== id);
      };
    },
    async advance(ms: number) {
      await flush();
      const end = now + ms;
      for (let guard = 0; guard < 10_000; guard++) {
        const due = timers.filter((t) => t.at <= end).sort((a, b) => a.at - b.at)[0];
        if (!due) break;
        timers = timers.filter((t) => t !== due);
        now = due.at;
        due.fn();
        await flush();
      }
      now = end;
      await flush();
    },
  };
}

/** Starts `count` takes of `priority` and records the order and clock time at which each was granted. */
function takeAll(
  budget: RequestBudget,
  clock: ReturnType<typeof fakeClock>,
  granted: string[],
  priority: BudgetPriority,
  count: number,
  signal?: AbortSignal,
) {
  return Array.from({ length: count }, (_, i) =>
    budget.take(priority, signal).then(
      () => void granted.push(`${priority}${i}@${clock.now()}`),
      () => void granted.push(`${priority}${i} aborted`),
    ),
  );
}

describe('RequestBudget', () => {
  it.each([
    {
      name: '100/s, default burst (a twentieth of a second): five at once, then one every 10 ms',
      rate: 100,
      burst: undefined,
      takes: 7,
      grantedAt: [0, 0, 0, 0, 0, 10, 20],
    },
    {
      name: '1,000/s, default burst: fifty at once, then one every millisecond',
      rate: 1000,
      burst: undefined,
      takes: 52,
      grantedAt: [...Array.from({ length: 50 }, () => 0), 1, 2],
    },
    {
      name: '10/s, default burst of one: one every 100 ms',
      rate: 10,
      burst: undefined,
      takes: 3,
      grantedAt: [0, 100, 200],
    },
    { name: '2/s, burst 1: one every 500 ms', rate: 2, burst: 1, takes: 4, grantedAt: [0, 500, 1000, 1500] },
    { name: '0.5/s: the bucket holds one token', rate: 0.5, burst: undefined, takes: 3, grantedAt: [0, 2000, 4000] },
  ])('$name', async ({ rate, burst, takes, grantedAt }) => {
    const clock = fakeClock();
    const budget = new RequestBudget({
      ratePerSecond: rate,
      ...(burst ? { burst } : {}),
      now: clock.now,
      setTimer: clock.setTimer,
    });
    const granted: string[] = [];
    takeAll(budget, clock, granted, 'read', takes);
    await clock.advance(10_000);
    expect(granted.map((g) => Number(g.split('@')[1]))).toEqual(grantedAt);
  });

  it('serves every waiting write before any waiting read', async () => {
    const clock = fakeClock();
    const budget = new RequestBudget({ ratePerSecond: 10, burst: 1, now: clock.now, setTimer: clock.setTimer });
    const granted: string[] = [];
    takeAll(budget, clock, granted, 'read', 4);
    await clock.advance(150);
    takeAll(budget, clock, granted, 'write', 2);
    await clock.advance(1000);
    expect(granted).toEqual(['read0@0', 'read1@100', 'write0@200', 'write1@300', 'read2@400', 'read3@500']);
  });

  it('serves every waiting read before any waiting background read (attack detection before pictures)', async () => {
    const clock = fakeClock();
    const budget = new RequestBudget({ ratePerSecond: 10, burst: 1, now: clock.now, setTimer: clock.setTimer });
    const granted: string[] = [];
    takeAll(budget, clock, granted, 'background', 3);
    await clock.advance(150);
    takeAll(budget, clock, granted, 'read', 2);
    takeAll(budget, clock, granted, 'write', 1);
    await clock.advance(1000);
    expect(granted).toEqual([
      'background0@0',
      'background1@100',
      'write0@200',
      'read0@300',
      'read1@400',
      'background2@500',
    ]);
  });

  it('grants nothing during a pause and restarts empty after it', async () => {
    const clock = fakeClock();
    const budget = new RequestBudget({ ratePerSecond: 10, burst: 2, now: clock.now, setTimer: clock.setTimer });
    const granted: string[] = [];
    takeAll(budget, clock, granted, 'read', 2);
    await clock.advance(0);
    budget.pauseFor(5000);
    takeAll(budget, clock, granted, 'read', 2);
    await clock.advance(4999);
    expect(granted).toEqual(['read0@0', 'read1@0']);
    await clock.advance(1000);
    expect(granted).toEqual(['read0@0', 'read1@0', 'read0@5100', 'read1@5200']);
  });

  it('drops a waiter whose signal aborts and gives its turn to the next', async () => {
    const clock = fakeClock();
    const budget = new RequestBudget({ ratePerSecond: 1, burst: 1, now: clock.now, setTimer: clock.setTimer });
    const granted: string[] = [];
    const controller = new AbortController();
    takeAll(budget, clock, granted, 'read', 1);
    takeAll(budget, clock, granted, 'write', 1, controller.signal);
    takeAll(budget, clock, granted, 'read', 1);
    await clock.advance(0);
    controller.abort(new Error('deadline'));
    await clock.advance(1000);
    expect(granted).toEqual(['read0@0', 'write0 aborted', 'read0@1000']);
    expect(budget.waiting).toEqual({ write: 0, read: 0, background: 0 });
  });

  it.each([
    { name: 'a token available, nobody waiting', priority: 'read' as const, waiting: [], pausedFor: 0, expected: true },
    { name: 'the bucket empty', priority: 'read' as const, waiting: [], spent: 2, pausedFor: 0, expected: false },
    {
      name: 'a read already waiting (no overtaking)',
      priority: 'read' as const,
      waiting: ['read'],
      spent: 2,
      pausedFor: 0,
      expected: false,
    },
    {
      name: 'a write waiting: a read does not go first',
      priority: 'read' as const,
      waiting: ['write'],
      spent: 2,
      pausedFor: 0,
      expected: false,
    },
    { name: 'during a pause', priority: 'write' as const, waiting: [], pausedFor: 1000, expected: false },
  ] as Array<{
    name: string;
    priority: BudgetPriority;
    waiting: BudgetPriority[];
    spent?: number;
    pausedFor: number;
    expected: boolean;
  }>)(
    'tryTake grants a token at once only when take would: $name',
    async ({ priority, waiting, spent = 0, pausedFor, expected }) => {
      const clock = fakeClock();
      const budget = new RequestBudget({ ratePerSecond: 10, burst: 2, now: clock.now, setTimer: clock.setTimer });
      for (let i = 0; i < spent; i++) expect(budget.tryTake('read')).toBe(true);
      const granted: string[] = [];
      for (const p of waiting) takeAll(budget, clock, granted, p, 1);
      if (pausedFor > 0) budget.pauseFor(pausedFor);
      expect(budget.tryTake(priority)).toBe(expected);
      // A granted token is spent: the waiters' turns come at the rate, as before.
      await clock.advance(100 * (waiting.length + 1));
      expect(granted).toEqual(waiting.map((p, i) => `${p}0@${100 * (i + 1)}`));
    },
  );

  it.each([0, -1, Number.NaN])('refuses a rate of %s', (rate) => {
    expect(() => new RequestBudget({ ratePerSecond: rate })).toThrow(RangeError);
  });
});
