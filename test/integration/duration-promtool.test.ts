/**
 * Durations in Prometheus's format, exactly as Prometheus parses them (issue 40, item 9): the cases of
 * Prometheus's own `model.ParseDuration` tests, what it refuses, and promtool accepting every duration this
 * parser accepts as a rule's `for:` (and refusing every one it refuses).
 */
import { execFileSync, spawnSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseDuration, prometheusDurationMs } from '../../src/config/formats.js';
import { requireBinary } from '../helpers/binaries.js';
import { tempDir } from '../helpers/tmp.js';

const S = 1000;
const M = 60 * S;
const H = 60 * M;
const D = 24 * H;

const VALID = [
  { text: '0', ms: 0 },
  { text: '0s', ms: 0 },
  { text: '324ms', ms: 324 },
  { text: '3s', ms: 3 * S },
  { text: '5m', ms: 5 * M },
  { text: '1h', ms: H },
  { text: '4d', ms: 4 * D },
  { text: '4d1h', ms: 4 * D + H },
  { text: '14d', ms: 14 * D },
  { text: '3w', ms: 21 * D },
  { text: '1w4d', ms: 11 * D },
  { text: '10y', ms: 3650 * D },
  { text: '1h30m', ms: 90 * M },
  { text: '90s', ms: 90 * S },
  { text: '1y2w3d4h5m6s7ms', ms: 365 * D + 14 * D + 3 * D + 4 * H + 5 * M + 6 * S + 7 },
  // The longest Prometheus reads: int64 nanoseconds end a little after 292 years (issue 49).
  { text: '292y', ms: 292 * 365 * D },
  { text: '106751d', ms: 106_751 * D },
];

const INVALID = [
  ...['', '1.5h', '5 minutes', '3 minutes', '-1s', '1m1h', '1h1h', '5', ' 5m', '5M', '1e3ms', '5y8'],
  // Beyond int64 nanoseconds, "duration out of range" for Prometheus (issue 49).
  ...['293y', '106752d', '5000y', '280000y', '99999999h'],
];

describe("Prometheus's duration format", () => {
  it.each(VALID)('$text is $ms ms', ({ text, ms }) => {
    expect(prometheusDurationMs(text)).toBe(ms);
  });

  it.each(INVALID)('%j is no duration', (text) => {
    expect(prometheusDurationMs(text)).toBeUndefined();
    expect(parseDuration(text)).toBeUndefined();
  });

  it('a positive duration is one above zero', () => {
    expect(parseDuration('0')).toBeUndefined();
    expect(parseDuration('0s')).toBeUndefined();
    expect(parseDuration('1h30m')).toBe(90 * M);
  });

  const promtool = requireBinary('/usr/bin/promtool', 'prometheus');
  it.skipIf(promtool.skip)('promtool takes every duration this parser takes, and refuses the others', () => {
    const dir = tempDir('bmx-durations-');
    const check = (text: string) => {
      const file = join(dir, 'rules.yml');
      writeFileSync(
        file,
        `groups:\n  - name: d\n    rules:\n      - alert: A\n        expr: vector(1)\n        for: ${JSON.stringify(text)}\n`,
      );
      return spawnSync(promtool.skip ? '' : promtool.path, ['check', 'rules', file], { encoding: 'utf8' }).status;
    };
    for (const { text } of VALID) expect(check(text), text).toBe(0);
    // The empty string is left out: promtool reads `for: ""` as no `for` at all.
    for (const text of INVALID.filter((t) => t !== '')) expect(check(text), text).not.toBe(0);
    expect(execFileSync(promtool.skip ? '' : promtool.path, ['--version'], { encoding: 'utf8' })).toMatch(/promtool/);
  });
});
