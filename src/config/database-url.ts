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

/**
 * The shortest value of one `options` setting that is scrubbed on its own: a shorter one (`on`, `1`) would
 * redact ordinary words of PostgreSQL's messages; the whole `options` text is scrubbed whatever its length.
 */
const MIN_SETTING_VALUE = 4;

/**
 * The pieces of an `options` value (`-c statement_timeout=5s --search_path=x`) that PostgreSQL's own errors
 * quote: each setting (`name=value`) and each value (`invalid value for parameter "statement_timeout": "5s"`).
 */
function optionPieces(options: string): string[] {
  const pieces: string[] = [];
  for (const word of options.split(/\s+/)) {
    const setting = word.replace(/^(?:-c|--)/, '');
    const at = setting.indexOf('=');
    if (at < 0) continue;
    pieces.push(setting);
    const value = setting.slice(at + 1).replace(/^(['"])(.*)\1$/, '$2');
    if (value.length >= MIN_SETTING_VALUE) pieces.push(value);
  }
  return pieces;
}

/**
 * The secrets of `url` (percent-decoded): the userinfo password, the secret query parameters' values, and the
 * settings and values inside `options` (see optionPieces).
 */
function secretsOf(url: URL): string[] {
  const secrets: string[] = [];
  try {
    secrets.push(decodeURIComponent(url.password));
  } catch {
    secrets.push(url.password);
  }
  for (const [name, value] of url.searchParams) {
    if (!SECRET_PARAMETERS.has(name.toLowerCase())) continue;
    secrets.push(value);
    if (name.toLowerCase() === 'options') secrets.push(...optionPieces(value));
  }
  return secrets.filter((s) => s.length > 0);
}

/** The secrets of the database URL `url` (see secretsOf); none when it is not a URL. */
export function databaseSecrets(url: string): string[] {
  try {
    return secretsOf(new URL(url));
  } catch {
    return [];
  }
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
  return createScrubber([url, ...databaseSecrets(url)]);
}

/** The message of `error`, scrubbed. */
export const reasonOf = (scrub: Scrubber, error: unknown): string =>
  scrub(error instanceof Error ? error.message || error.name : String(error));

/** What an unauthenticated reply says of a database that does not answer: the part, never host, port, user or database. */
export const DATABASE_UNREACHABLE = 'database unreachable';
