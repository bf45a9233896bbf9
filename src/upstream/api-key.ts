/**
 * The API key an UpstreamClient sends, replaceable while the daemon runs: a rotated `api_key_file` puts a new
 * key in force for the next request, while a request already sent keeps the header it was sent with. Every
 * key in force since start (the latest KEPT_KEYS) is still scrubbed from what the upstream sends back: an
 * error that echoes the previous key is cleaned as well as one that echoes the current one, and so are the
 * other secrets the client knows (`alsoScrub`), each however spelled (scrub.ts).
 */
import { createScrubber, type Scrubber } from '../scrub.js';

/** Keys scrubbed at most: the current one and the latest before it. */
const KEPT_KEYS = 16;

export class ApiKey {
  #current: string;
  /** the keys in force since start, oldest first, at most KEPT_KEYS */
  readonly #known: string[];
  /** the other secrets scrubbed with the keys (other accounts' keys, tokens, the base URL's credentials) */
  #others: readonly string[] = [];
  #scrub: Scrubber;

  constructor(key: string) {
    this.#current = key;
    this.#known = [key];
    this.#scrub = createScrubber(this.#known);
  }

  /** Scrubs `secrets` too from now on, besides the keys (one pattern: the longest match wins). */
  alsoScrub(secrets: readonly string[]): void {
    this.#others = [...this.#others, ...secrets];
    this.#scrub = createScrubber([...this.#known, ...this.#others]);
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
    this.#scrub = createScrubber([...this.#known, ...this.#others]);
    return true;
  }

  /** Removes every known key and other secret, however spelled, from `text`. */
  readonly scrub: Scrubber = (text) => this.#scrub(text);
}
