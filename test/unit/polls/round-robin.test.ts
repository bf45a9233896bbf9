import { describe, expect, it } from 'vitest';
import { RoundRobin, runCapacity } from '../../../src/polls/round-robin.js';

const ids = (n: number) => Array.from({ length: n }, (_, i) => `s${i}`);

describe('round-robin coverage', () => {
  it.each([
    {
      name: '10 items, 4 a run',
      items: 10,
      capacity: 4,
      slices: [
        ['s0', 's1', 's2', 's3'],
        ['s4', 's5', 's6', 's7'],
        ['s8', 's9'],
        ['s0', 's1', 's2', 's3'],
      ],
      pending: [6, 2, 0, 6],
    },
    {
      name: 'everything fits',
      items: 3,
      capacity: 5,
      slices: [
        ['s0', 's1', 's2'],
        ['s0', 's1', 's2'],
      ],
      pending: [0, 0],
    },
  ])('$name', ({ items, capacity, slices, pending }) => {
    const round = new RoundRobin<string>((s) => s);
    const list = ids(items);
    for (const [i, expected] of slices.entries()) {
      const slice = round.next(list, capacity);
      expect(slice).toEqual(expected);
      for (const item of slice) round.covered(item);
      expect(round.pending(list)).toBe(pending[i]);
    }
  });

  it('takes an item that was not covered (cancelled) again in the next run', () => {
    const round = new RoundRobin<string>((s) => s);
    const list = ids(5);
    const first = round.next(list, 3);
    round.covered(first[0]!);
    expect(round.next(list, 3)).toEqual(['s1', 's2', 's3']);
  });

  it('sends an item cut at the deadline to the back: every other item is still polled each round', () => {
    const round = new RoundRobin<string>((s) => s);
    const list = ids(6);
    const runs: string[][] = [];
    for (let run = 0; run < 6; run++) {
      const slice = round.next(list, 3);
      runs.push(slice);
      // s0 drips until the deadline every time; the others answer.
      for (const item of slice)
        if (item === 's0') round.deferred(item);
        else round.covered(item);
    }
    expect(runs).toEqual([
      ['s0', 's1', 's2'],
      ['s3', 's4', 's5'],
      ['s1', 's2', 's3'],
      ['s4', 's5', 's0'],
      ['s1', 's2', 's3'],
      ['s4', 's5', 's0'],
    ]);
    // Once it answers it is back at its place.
    round.covered('s0');
    expect(round.next(list, 3)).toEqual(['s0', 's1', 's2']);
  });

  it('leaves an item still queued at the deadline uncovered: it heads the next run; a cut reply is deferred', () => {
    const round = new RoundRobin<string>((s) => s);
    const list = ids(8);
    const first = round.next(list, 4);
    expect(first).toEqual(['s0', 's1', 's2', 's3']);
    // The run ends: s0 answered, s1's reply was cut mid-way, s2 and s3 were waiting for a budget token.
    round.covered('s0');
    round.cancelled('s1', true);
    round.cancelled('s2', false);
    round.cancelled('s3', false);
    expect(round.pending(list)).toBe(6);
    expect(round.next(list, 4)).toEqual(['s2', 's3', 's4', 's5']);
  });

  it('reads every item within ⌈items ÷ capacity⌉ + 1 runs when every run ends with requests still queued', () => {
    const round = new RoundRobin<string>((s) => s);
    const list = ids(20);
    const read = new Set<string>();
    // Each run of 6 reads 5: the sixth is still waiting for a token at the deadline (issue 33).
    for (let run = 0; run < Math.ceil(20 / 6) + 1; run++) {
      const slice = round.next(list, 6);
      for (const item of slice.slice(0, 5)) {
        round.covered(item);
        read.add(item);
      }
      for (const item of slice.slice(5)) round.cancelled(item, false);
    }
    expect(read.size).toBe(20);
  });

  it('adds new items to the current round and forgets removed ones', () => {
    const round = new RoundRobin<string>((s) => s);
    for (const item of round.next(ids(4), 2)) round.covered(item);
    const changed = ['s1', 's2', 's3', 'new'];
    expect(round.pending(changed)).toBe(3);
    expect(round.next(changed, 10)).toEqual(['s2', 's3', 'new']);
  });

  it.each([
    { name: '10/s over a 59 s deadline', rate: 10, deadlineMs: 59_000, capacity: 531 },
    { name: '400/s over 2.7 s', rate: 400, deadlineMs: 2_700, capacity: 972 },
    { name: 'never below one', rate: 0.01, deadlineMs: 1_000, capacity: 1 },
  ])('capacity: $name', ({ rate, deadlineMs, capacity }) => {
    expect(runCapacity(rate, deadlineMs)).toBe(capacity);
  });
});
