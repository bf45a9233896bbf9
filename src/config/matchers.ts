/**
 * Alertmanager's label matchers (`alertname = "DatacenterOutage"`, `severity =~ "critical|page"`), as a route's
 * `matchers` and amtool write them: a label name, one of `=`, `!=`, `=~`, `!~`, and a value, double-quoted or
 * bare. Regular expressions are RE2 (re2js, linear time) and anchored, as Alertmanager anchors them. Kept as
 * plain data in the config (a reload copies it); compiled when matched.
 */
import type { RE2JS } from 're2js';
import { loadRe2 } from './re2.js';

/** One matcher: the label, how it compares, the value (a regular expression for `=~` and `!~`). */
export interface LabelMatcher {
  name: string;
  type: '=' | '!=' | '=~' | '!~';
  value: string;
}

const MATCHER = /^\s*([A-Za-z_][A-Za-z0-9_]*)\s*(=~|!~|!=|=)\s*(.*?)\s*$/s;

/** The matcher `text` spells, or a sentence saying why it is none (for a config problem). */
export function parseMatcher(text: string): LabelMatcher | string {
  const m = MATCHER.exec(text);
  if (!m) return 'must be `label op value` with op one of =, !=, =~, !~ (e.g. `alertname = "DatacenterOutage"`)';
  const [, name, type, raw] = m as unknown as [string, string, LabelMatcher['type'], string];
  let value = raw;
  if (raw.startsWith('"')) {
    try {
      value = JSON.parse(raw) as string;
    } catch {
      return `the value ${raw} is not one double-quoted string`;
    }
    if (typeof value !== 'string') return `the value ${raw} is not one double-quoted string`;
  } else if (/[",{}]/.test(raw)) return `the value ${raw} must be double-quoted`;
  if (type === '=~' || type === '!~') {
    const compiled = compile(value);
    if (typeof compiled === 'string') return `the regular expression ${JSON.stringify(value)}: ${compiled}`;
  }
  return { name, type, value };
}

const cache = new Map<string, RE2JS>();

/**
 * `pattern` compiled (anchored by `testExact`), or RE2's sentence when it is not valid RE2, or the sentence saying
 * that re2js (loaded here, at the first regular expression: issue 53) failed to load.
 */
function compile(pattern: string): RE2JS | string {
  const hit = cache.get(pattern);
  if (hit) return hit;
  let re2: ReturnType<typeof loadRe2>;
  try {
    re2 = loadRe2('a regular-expression matcher (=~, !~)');
  } catch (error) {
    return (error as Error).message;
  }
  const { RE2JS, RE2JSException } = re2;
  try {
    const re = RE2JS.compile(pattern);
    // Bounded: the patterns come from the config, so a handful.
    if (cache.size < 1000) cache.set(pattern, re);
    return re;
  } catch (error) {
    return error instanceof RE2JSException ? error.message : `cannot be compiled: ${String(error)}`;
  }
}

/** Whether `labels` satisfy `m`; a missing label is the empty string, as in Alertmanager. */
export function matches(m: LabelMatcher, labels: Readonly<Record<string, string>>): boolean {
  const value = labels[m.name] ?? '';
  switch (m.type) {
    case '=':
      return value === m.value;
    case '!=':
      return value !== m.value;
    case '=~':
    case '!~': {
      const re = compile(m.value);
      const hit = typeof re !== 'string' && re.testExact(value);
      return m.type === '=~' ? hit : !hit;
    }
  }
}

/** Whether `labels` satisfy every matcher of `all` (an empty list matches every label set). */
export const matchesAll = (all: readonly LabelMatcher[], labels: Readonly<Record<string, string>>): boolean =>
  all.every((m) => matches(m, labels));

/** A matcher as Alertmanager prints it: `name="value"`. */
export const showMatcher = (m: LabelMatcher): string => `${m.name}${m.type}${JSON.stringify(m.value)}`;
