/**
 * Which servers are in scope (`servers.include` / `servers.exclude`, top level and per entry of `accounts:`):
 * a server is in scope when it matches an include (or there is none) and no exclude. A selector names an `id`,
 * a `location`, or a `hostname` regular expression in RE2 syntax, compiled by re2js (RE2's linear-time engine in
 * JavaScript, never V8's backtracking one) and matched against the whole hostname (RE2's full match).
 * An out-of-scope server is dropped from the server list before anything else sees it (polls/servers.ts):
 * it gets no per-server request, makes no series, is no discovery target and no remediation target.
 */
import type { RE2JS } from 're2js';
import { loadRe2 } from './re2.js';

/** One selector as the file gives it: exactly one of the keys. */
export type ServerSelectorFile = { id: string } | { location: string } | { hostname: string };

/** A selector ready to match: `hostname` compiled, anchored. */
export type ServerSelector = { id: string } | { location: string } | { hostname: RE2JS };

export interface ServerScope {
  include: ServerSelector[];
  exclude: ServerSelector[];
}

/** The fields of a server record a selector reads (API contract §1). */
export interface ScopedServer {
  serverId: string;
  location: string;
  hostname: string;
}

/**
 * The compiled `hostname` selector: RE2 syntax (`(?i)` and the other flags, classes, Unicode classes; no
 * lookaround, no backreference), matched in time linear in the hostname's length whatever the pattern.
 * Returns a sentence for the config problem when it cannot be compiled: `not a valid RE2 regular expression: `
 * and RE2's own sentence (`error parsing regexp: invalid escape sequence: \`\\1\``) when `pattern` is not valid
 * RE2, or the sentence saying that re2js (loaded here, at the first pattern: issue 53) failed to load.
 */
export function compileHostname(pattern: string): RE2JS | string {
  let re2: ReturnType<typeof loadRe2>;
  try {
    re2 = loadRe2('a hostname pattern (servers.include, servers.exclude)');
  } catch (error) {
    return (error as Error).message;
  }
  try {
    return re2.RE2JS.compile(pattern);
  } catch (error) {
    // RE2JSException (the parser's refusal) or anything else the compiler throws: the pattern is refused.
    return `not a valid RE2 regular expression: ${error instanceof re2.RE2JSException ? error.message : `cannot be compiled: ${String(error)}`}`;
  }
}

const matches = (selector: ServerSelector, server: ScopedServer): boolean =>
  'id' in selector
    ? selector.id === server.serverId
    : 'location' in selector
      ? selector.location === server.location
      : // The whole hostname (RE2's full match): no pattern can escape the anchoring, `web)|(?:.*` included.
        selector.hostname.testExact(server.hostname);

/** True when `server` is in `scope`. Pure. */
export function inScope(scope: ServerScope, server: ScopedServer): boolean {
  if (scope.include.length > 0 && !scope.include.some((s) => matches(s, server))) return false;
  return !scope.exclude.some((s) => matches(s, server));
}

/** An empty scope: every server. */
export const EVERY_SERVER: ServerScope = { include: [], exclude: [] };

const shown = (selector: ServerSelector): string =>
  'id' in selector
    ? `id ${selector.id}`
    : 'location' in selector
      ? `location ${selector.location}`
      : `hostname ${selector.hostname.pattern()}`;

/** One line saying which servers `scope` keeps (`check-config`); undefined for every server. */
export function describeScope(scope: ServerScope): string | undefined {
  if (scope.include.length === 0 && scope.exclude.length === 0) return undefined;
  const include =
    scope.include.length > 0 ? `servers matching ${scope.include.map(shown).join(' or ')}` : 'every server';
  const exclude = scope.exclude.length > 0 ? ` except ${scope.exclude.map(shown).join(', ')}` : '';
  return `${include}${exclude}`;
}
