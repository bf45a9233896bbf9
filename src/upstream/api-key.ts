/**
 * The API key an UpstreamClient sends, replaceable while the daemon runs: a rotated `api_key_file` puts a new
 * key in force for the next request, while a request already sent keeps the header it was sent with. Every
 * key in force since start (the latest KEPT_KEYS) is still scrubbed from what the upstream sends back: an
 * error that echoes the previous key is cleaned as well as one that echoes the current one.
 */
import { createScrubber, type Scrubber } from '../scrub.js';

/** Keys scrubbed at most: the current one and the latest before it. */
const KEPT_KEYS = 16;

export class ApiKey {
  #current: string;
  /** the keys in force since start, oldest first, at most KEPT_KEYS */
  readonly #known: string[];
  #scrub: Scrubber;

  constructor(key: string) {
    this.#current = key;
    this.#known = [key];
    this.#scrub = createScrubber(this.#known);
  }

  /** The key the next request sends (never log it). */
  get current(): string {
    return this.#current;
  }

  /** Puts `key` in force for the next requests; false when it is the key already in force. */
  set(key: string): boolean {
    if (key === this.#current) return false;
    this.#current = key;
    this.#known.push(key);
    if (this.#known.length > KEPT_KEYS) this.#known.shift();
    this.#scrub = createScrubber(this.#known);
    return true;
  }

  /** Removes every known key (plain, JSON-escaped, URL-encoded) from `text`. */
  readonly scrub: Scrubber = (text) => this.#scrub(text);
}
