/**
 * The one place secrets are scrubbed from text. Every text that comes from the upstream (error messages,
 * reply excerpts, decode errors, the console XML, and the strings of a decoded JSON reply) and every text that
 * may echo a webhook or operator token passes a Scrubber before it is kept anywhere: logs, errors, journal
 * rows, metrics, HTTP replies.
 *
 * A secret is found however it is spelled (issue 28): in any mix of upper and lower case; each character
 * plain, percent-encoded (`%41`, `%2f`: whichever characters the encoder kept), JSON-escaped (`\u0041`, `\/`,
 * `\"`) or, for a space, `+`; and with line breaks (real ones, or JSON's `\n` and `\r`) between its characters.
 */

/** The marker that replaces a secret. */
export const REDACTED = '[REDACTED]';

/** Removes every known secret from a text; scrub before truncating, so no cut-off prefix survives. */
export type Scrubber = (text: string) => string;

/**
 * A few spellings under which a secret can come back, for tests that look for a leak: plain, JSON-escaped
 * (with and without `\/`), and URL- or form-encoded (upper- and lower-case percent escapes, `+` for spaces).
 * The Scrubber matches more than these (see the module comment).
 */
export function secretForms(secret: string): string[] {
  const json = JSON.stringify(secret).slice(1, -1);
  const url = encodeURIComponent(secret);
  const form = new URLSearchParams({ s: secret }).toString().slice(2);
  const forms = [
    secret,
    json,
    json.replaceAll('/', '\\/'),
    url,
    url.replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase()),
    form,
  ];
  return [...new Set(forms)].filter((f) => f.length > 0).sort((a, b) => b.length - a.length);
}

const escapeRegExp = (text: string) => text.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&');
const hex = (n: number, width: number) => n.toString(16).padStart(width, '0');

/** Every spelling of one character (one code point), as regular-expression alternatives (matched ignoring case). */
function characterSpellings(char: string): string[] {
  const spellings = new Set<string>();
  for (const variant of new Set([char, char.toLowerCase(), char.toUpperCase()])) {
    spellings.add(escapeRegExp(variant));
    spellings.add([...Buffer.from(variant, 'utf8')].map((byte) => `%${hex(byte, 2)}`).join(''));
    // JSON's \uXXXX, a surrogate pair for a character outside the BMP.
    spellings.add(Array.from({ length: variant.length }, (_, i) => `\\\\u${hex(variant.charCodeAt(i), 4)}`).join(''));
  }
  if (char === '/') spellings.add('\\\\/');
  if (char === '"') spellings.add('\\\\"');
  if (char === '\\') spellings.add('\\\\\\\\');
  if (char === ' ') spellings.add('\\+');
  return [...spellings];
}

/** Line breaks allowed between two characters of a secret: real ones and JSON's escapes. */
const BREAKS = '(?:\\r|\\n|\\\\r|\\\\n)*';

/** The pattern of every spelling of `secret` (see the module comment). */
function secretPattern(secret: string): string {
  return [...secret].map((char) => `(?:${characterSpellings(char).join('|')})`).join(BREAKS);
}

/**
 * Builds a Scrubber for `secrets` (empty strings are ignored). Each match, in whatever spelling, becomes
 * REDACTED. The pattern has no nested repetition: matching stays linear in the text.
 */
export function createScrubber(secrets: readonly string[]): Scrubber {
  const unique = [...new Set(secrets.filter((s) => s.length > 0))].sort((a, b) => b.length - a.length);
  if (unique.length === 0) return (text) => text;
  // Longest first: a longer secret is not half-replaced by a shorter one it contains.
  const pattern = new RegExp(unique.map(secretPattern).join('|'), 'gi');
  return (text) => text.replace(pattern, REDACTED);
}

/** Scrubs, then cuts to `max` characters (an excerpt for an error message). */
export function scrubbedExcerpt(scrub: Scrubber, text: string, max: number): string {
  return scrub(text).slice(0, max);
}
