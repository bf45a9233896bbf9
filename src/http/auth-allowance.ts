/**
 * Each client address's share of the bcrypt pool, so that one address flooding wrong `Basic` passwords spends
 * its own share, not everyone's: at most `CHECKS_PER_ADDRESS` of its checks wait or run at once, and each
 * wrong password spends one of `FAILED_CHECKS_BURST` allowances, which refill one every `FAILED_CHECK_REFILL_MS`
 * (the defaults of `web.auth_limits`, which the daemon passes in).
 * A correct password gives its allowance back, so valid users are never limited by their own logins.
 *
 * The table is bounded (`ADDRESSES_TRACKED`): an address with nothing in flight and a full allowance carries no
 * state and is dropped at once; when the table is full, the longest-unused idle address is dropped (it then
 * starts again with a full allowance, which costs a flood of many addresses at most one burst each).
 */
import { DEFAULT_AUTH_LIMITS } from '../config/types.js';
import { clientKey } from './client-address.js';

/**
 * Password checks of one client address waiting or running at once, at most (the pool holds 1 + 8); by
 * default, `web.auth_limits.in_flight_per_address`'s.
 */
export const CHECKS_PER_ADDRESS = DEFAULT_AUTH_LIMITS.inFlightPerAddress;
/** Wrong passwords an address may send at once before its checks are refused without hashing (`wrong_password_burst`). */
export const FAILED_CHECKS_BURST = DEFAULT_AUTH_LIMITS.wrongPasswordBurst;
/** One allowance for a wrong password comes back this often, in milliseconds (`wrong_password_refill`; 30 a minute). */
export const FAILED_CHECK_REFILL_MS = DEFAULT_AUTH_LIMITS.wrongPasswordRefillMs;
/** Client addresses tracked at most. */
export const ADDRESSES_TRACKED = 4096;

interface Entry {
  inFlight: number;
  /** wrong passwords this address may still send; fractional while refilling */
  allowance: number;
  /** ms since epoch when `allowance` was last brought up to date */
  at: number;
}

/** Whether a check may run for the address; when it may, `release` must be called once it has ended. */
export type Admission =
  | { ok: true; release: (wrongPassword: boolean) => void }
  | { ok: false; reason: 'in-flight' | 'wrong-passwords'; retryAfterSeconds: number };

export class AddressAllowance {
  readonly #entries = new Map<string, Entry>();
  readonly #now: () => number;
  readonly #perAddress: number;
  readonly #burst: number;
  readonly #refillMs: number;
  readonly #cap: number;

  constructor(
    options: {
      /** ms since epoch */
      now?: () => number;
      perAddress?: number;
      burst?: number;
      /** ms */
      refillMs?: number;
      cap?: number;
    } = {},
  ) {
    this.#now = options.now ?? Date.now;
    this.#perAddress = options.perAddress ?? CHECKS_PER_ADDRESS;
    this.#burst = options.burst ?? FAILED_CHECKS_BURST;
    this.#refillMs = options.refillMs ?? FAILED_CHECK_REFILL_MS;
    this.#cap = options.cap ?? ADDRESSES_TRACKED;
  }

  /** Addresses tracked now. */
  get size(): number {
    return this.#entries.size;
  }

  /** Asks for one password check from `address` (a socket's remote address). */
  admit(address: string | undefined): Admission {
    const key = clientKey(address);
    const entry = this.#refilled(key);
    if (entry.inFlight >= this.#perAddress) return { ok: false, reason: 'in-flight', retryAfterSeconds: 1 };
    if (entry.allowance < 1) {
      const wait = Math.ceil(((1 - entry.allowance) * this.#refillMs) / 1000);
      return { ok: false, reason: 'wrong-passwords', retryAfterSeconds: Math.max(1, wait) };
    }
    // Spent now and given back for a correct password: concurrent wrong ones cannot overdraw it.
    entry.allowance -= 1;
    entry.inFlight++;
    let released = false;
    return {
      ok: true,
      release: (wrongPassword) => {
        if (released) return;
        released = true;
        const current = this.#refilled(key);
        current.inFlight = Math.max(0, current.inFlight - 1);
        if (!wrongPassword) current.allowance = Math.min(this.#burst, current.allowance + 1);
        this.#dropIfIdle(key, current);
      },
    };
  }

  /** The entry of `key`, its allowance refilled up to now, moved to the end (most recently used). */
  #refilled(key: string): Entry {
    const t = this.#now();
    let entry = this.#entries.get(key);
    if (entry) {
      entry.allowance = Math.min(this.#burst, entry.allowance + (t - entry.at) / this.#refillMs);
      entry.at = t;
      this.#entries.delete(key);
    } else {
      if (this.#entries.size >= this.#cap) this.#evict();
      entry = { inFlight: 0, allowance: this.#burst, at: t };
    }
    this.#entries.set(key, entry);
    return entry;
  }

  #dropIfIdle(key: string, entry: Entry): void {
    if (entry.inFlight === 0 && entry.allowance >= this.#burst) this.#entries.delete(key);
  }

  /** Drops the longest-unused address with no check in flight (there always is one: checks in flight are few). */
  #evict(): void {
    for (const [key, entry] of this.#entries) {
      if (entry.inFlight > 0) continue;
      this.#entries.delete(key);
      return;
    }
  }
}
