import { readdirSync, readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { byCodeUnits } from '../../src/order.js';

describe('byCodeUnits', () => {
  it.each([
    {
      name: 'upper case before lower case, as Go sort.Strings',
      list: ['b', 'B', 'a', 'A'],
      sorted: ['A', 'B', 'a', 'b'],
    },
    { name: 'digits as text, not numbers', list: ['10', '9', '1'], sorted: ['1', '10', '9'] },
    // localeCompare's collator ignores U+0000, so joined keys compared equal or out of order.
    {
      name: 'a NUL-joined key by its first part',
      list: ['ab\u0000c', 'a\u0000bc'],
      sorted: ['a\u0000bc', 'ab\u0000c'],
    },
    { name: 'punctuation by code unit', list: ['a-b', 'a_b', 'a.b'], sorted: ['a-b', 'a.b', 'a_b'] },
  ])('$name', ({ list, sorted }) => {
    expect([...list].sort(byCodeUnits)).toEqual(sorted);
  });

  it('is zero for equal strings only', () => {
    expect(byCodeUnits('x', 'x')).toBe(0);
    expect(byCodeUnits('x', 'y')).toBeLessThan(0);
    expect(byCodeUnits('y', 'x')).toBeGreaterThan(0);
  });
});

describe('the daemon sorts without ICU', () => {
  it('calls neither localeCompare nor Intl.Collator anywhere in src/', () => {
    const src = new URL('../../src/', import.meta.url);
    const files = readdirSync(src, { recursive: true, encoding: 'utf8' }).filter((f) => f.endsWith('.ts'));
    expect(files.length).toBeGreaterThan(100);
    const callers = files.filter((f) => /\.localeCompare\(|Intl\.Collator/.test(readFileSync(new URL(f, src), 'utf8')));
    expect(callers).toEqual([]);
  });
});
