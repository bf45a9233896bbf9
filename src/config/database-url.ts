/** Scrubbing the database URL and its password out of a text (an error message) before it is logged. */
import { createScrubber, type Scrubber } from '../scrub.js';

/** A Scrubber for the PostgreSQL URL `url` and its password (plain and percent-decoded). */
export function databaseScrubber(url: string): Scrubber {
  let password = '';
  try {
    password = decodeURIComponent(new URL(url).password);
  } catch {}
  return createScrubber([url, password]);
}

/** The message of `error`, scrubbed. */
export const reasonOf = (scrub: Scrubber, error: unknown): string =>
  scrub(error instanceof Error ? error.message || error.name : String(error));
