/**
 * The database URL carries secrets in several spellings: the password in the userinfo
 * (`postgres://bm:secret@host/db`), in the `password=` and `sslpassword=` query parameters (node-postgres reads
 * both, see pg-connection-string), and in `options` (server settings that may carry anything). This module
 * redacts them all, for the log and the authenticated status page, and scrubs them out of any text.
 */
import { createScrubber, type Scrubber } from '../scrub.js';

/** The query parameters of a PostgreSQL URL whose value is secret (compared in lower case). */
const SECRET_PARAMETERS = new Set(['password', 'sslpassword', 'options']);

/** What replaces a secret in a redacted URL. */
const MASK = '***';

/** The secrets of `url` (percent-decoded): the userinfo password and the secret query parameters' values. */
function secretsOf(url: URL): string[] {
  const secrets: string[] = [];
  try {
    secrets.push(decodeURIComponent(url.password));
  } catch {
    secrets.push(url.password);
  }
  for (const [name, value] of url.searchParams) if (SECRET_PARAMETERS.has(name.toLowerCase())) secrets.push(value);
  return secrets.filter((s) => s.length > 0);
}

/**
 * `url` with every secret replaced by `***`: the userinfo password and the values of `password`,
 * `sslpassword` and `options`. A text that is not a URL is replaced as a whole (`[unparsable database URL]`).
 */
export function redactDatabaseUrl(url: string): string {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return '[unparsable database URL]';
  }
  if (parsed.password) parsed.password = MASK;
  for (const name of [...new Set(parsed.searchParams.keys())])
    if (SECRET_PARAMETERS.has(name.toLowerCase())) parsed.searchParams.set(name, MASK);
  return parsed.toString().replaceAll(encodeURIComponent(MASK), MASK);
}

/** A Scrubber for the PostgreSQL URL `url` and every secret in it (plain and encoded spellings). */
export function databaseScrubber(url: string): Scrubber {
  let secrets: string[] = [];
  try {
    secrets = secretsOf(new URL(url));
  } catch {}
  return createScrubber([url, ...secrets]);
}

/** The message of `error`, scrubbed. */
export const reasonOf = (scrub: Scrubber, error: unknown): string =>
  scrub(error instanceof Error ? error.message || error.name : String(error));

/** What an unauthenticated reply says of a database that does not answer: the part, never host, port, user or database. */
export const DATABASE_UNREACHABLE = 'database unreachable';
