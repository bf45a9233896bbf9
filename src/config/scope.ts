/**
 * Which servers are in scope (`servers.include` / `servers.exclude`, top level and per entry of `accounts:`):
 * a server is in scope when it matches an include (or there is none) and no exclude. A selector names an `id`,
 * a `location`, or a `hostname` regular expression (RE2-style: anchored, no lookaround nor backreference).
 * An out-of-scope server is dropped from the server list before anything else sees it (scheduler/jobs.ts):
 * it gets no per-server request, makes no series, is no discovery target and no remediation target.
 */

/** One selector as the file gives it: exactly one of the keys. */
export type ServerSelectorFile = { id: string } | { location: string } | { hostname: string };

/** A selector ready to match: `hostname` compiled, anchored. */
export type ServerSelector = { id: string } | { location: string } | { hostname: RegExp };

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

/** RE2 has no lookaround and no backreference: such a pattern is refused rather than silently differing. */
const NOT_RE2 = /\(\?<?[=!]|\\[1-9]|\\k</;

/**
 * The anchored RegExp of a `hostname` selector; a sentence naming the problem when `pattern` is not a valid
 * RE2-style regular expression.
 */
export function compileHostname(pattern: string): RegExp | string {
  if (NOT_RE2.test(pattern)) return 'lookaround and backreferences are not RE2 syntax';
  try {
    return new RegExp(`^(?:${pattern})$`, 'u');
  } catch (error) {
    return (error as Error).message;
  }
}

const matches = (selector: ServerSelector, server: ScopedServer): boolean =>
  'id' in selector
    ? selector.id === server.serverId
    : 'location' in selector
      ? selector.location === server.location
      : selector.hostname.test(server.hostname);

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
      : `hostname ${selector.hostname.source.slice(4, -2)}`;

/** One line saying which servers `scope` keeps (`check-config`); undefined for every server. */
export function describeScope(scope: ServerScope): string | undefined {
  if (scope.include.length === 0 && scope.exclude.length === 0) return undefined;
  const include =
    scope.include.length > 0 ? `servers matching ${scope.include.map(shown).join(' or ')}` : 'every server';
  const exclude = scope.exclude.length > 0 ? ` except ${scope.exclude.map(shown).join(', ')}` : '';
  return `${include}${exclude}`;
}
