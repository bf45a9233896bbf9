/**
 * The one place secrets are scrubbed from text. Every text that comes from the upstream (error messages,
 * reply excerpts, decode errors, the console XML) and every text that may echo a webhook or operator token
 * passes a Scrubber before it is kept anywhere: logs, errors, journal rows, metrics, HTTP replies.
 */

/** The marker that replaces a secret. */
export const REDACTED = '[REDACTED]';

/** Removes every known secret from a text; scrub before truncating, so no cut-off prefix survives. */
export type Scrubber = (text: string) => string;

/**
 * The spellings under which a secret can come back: plain, JSON-escaped (with and without `\/`), and
 * URL- or form-encoded (upper- and lower-case percent escapes, `+` for spaces).
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
  // Longest first, so that a longer spelling is not half-replaced by a shorter one it contains.
  return [...new Set(forms)].filter((f) => f.length > 0).sort((a, b) => b.length - a.length);
}

/** Builds a Scrubber for `secrets` (empty strings are ignored). */
export function createScrubber(secrets: readonly string[]): Scrubber {
  const forms = [...new Set(secrets.filter((s) => s.length > 0).flatMap(secretForms))].sort(
    (a, b) => b.length - a.length,
  );
  if (forms.length === 0) return (text) => text;
  return (text) => {
    let out = text;
    for (const form of forms) if (out.includes(form)) out = out.replaceAll(form, REDACTED);
    return out;
  };
}

/** Scrubs, then cuts to `max` characters (an excerpt for an error message). */
export function scrubbedExcerpt(scrub: Scrubber, text: string, max: number): string {
  return scrub(text).slice(0, max);
}
