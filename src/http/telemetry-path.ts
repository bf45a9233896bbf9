/**
 * `--web.telemetry-path`: where `/metrics` is served, as exporter-toolkit exporters (node_exporter,
 * blackbox_exporter) name the flag. Validated where it enters, before anything listens.
 */
import { ConfigError } from '../errors.js';

/** The path the exposition is served at without the flag. */
export const DEFAULT_TELEMETRY_PATH = '/metrics';

/** Longest accepted path, characters. */
const MAX_LENGTH = 256;

/** Paths of the daemon's other routes, exactly; and prefixes under which it serves routes of its own. */
const OTHER_ROUTES = ['/', '/healthz', '/readyz', '/graphs'];
const OTHER_PREFIXES = ['/-/', '/api/', '/graphs/'];

/**
 * The path when it is usable: starts with `/`, one or more segments of `A-Z a-z 0-9 . _ ~ -` (no `.`/`..`
 * segment, no empty one, no `:` or `*`, which the router would read as a parameter or wildcard), at most
 * 256 characters, and not a path or under a prefix the daemon serves otherwise (`/`, `/healthz`, `/readyz`,
 * `/graphs…`, `/api/…`, `/-/…`). Throws ConfigError naming the flag otherwise.
 */
export function validateTelemetryPath(path: string): string {
  const problem = (why: string) =>
    new ConfigError([`--web.telemetry-path: ${why} (got ${JSON.stringify(path.slice(0, MAX_LENGTH))})`]);
  if (path.length > MAX_LENGTH) throw problem(`must be at most ${MAX_LENGTH} characters`);
  if (!path.startsWith('/')) throw problem('must start with "/"');
  if (OTHER_ROUTES.includes(path) || OTHER_PREFIXES.some((prefix) => path.startsWith(prefix)))
    throw problem(
      `collides with the daemon's other routes (${[...OTHER_ROUTES, ...OTHER_PREFIXES.map((p) => `${p}…`)].join(', ')})`,
    );
  const segments = path.slice(1).split('/');
  if (!segments.every((segment) => /^[A-Za-z0-9._~-]+$/.test(segment) && segment !== '.' && segment !== '..'))
    throw problem('must be "/" followed by segments of letters, digits, ".", "_", "~" or "-", separated by "/"');
  return path;
}
