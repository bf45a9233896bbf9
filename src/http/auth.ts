/**
 * Credentials for the action endpoints and (web.auth) the read-only routes, as Alertmanager's and
 * Prometheus's `http_config` send them: a bearer token (`authorization.credentials_file`) or basic auth
 * (`basic_auth`) checked against bcrypt hashes.
 *
 * Cost is bounded, because an unauthenticated client chooses how often this runs:
 * - token comparison is constant-time over digests, and costs microseconds;
 * - a `Basic` header when no basic-auth user is configured is refused without hashing;
 * - bcrypt runs in a worker thread behind a bounded queue (`BcryptPool`); when the queue is full the request
 *   is refused at once, without hashing, with 503 and `Retry-After` (Alertmanager retries a 5xx, not a 4xx);
 * - each client address has its share of that queue (`AddressAllowance`): two checks in flight at once
 *   (beyond: 503), and a wrong-password allowance that refills slowly (spent: 429); so an address flooding
 *   wrong passwords spends its own share, and a valid user elsewhere still gets a check;
 * - a verified pair is remembered (by digest) until it has not been used for five minutes, as
 *   prometheus/exporter-toolkit caches its bcrypt results, so Prometheus and Alertmanager pay bcrypt's cost
 *   once, not on every request, and are never queued behind a flood of wrong passwords;
 * - an unknown user is compared with the configured hash of the lowest cost, through the same queue: it
 *   costs what the cheapest known user costs, never more, and answers in the same time;
 * - a request refused without a check is counted by its reason (`baremetal_http_auth_refusals_total`);
 * - bcryptjs is loaded by the worker only (a deployment without basic-auth users never loads it); when it cannot
 *   load, a basic-auth request is answered 503 (never 401: no password was compared) and the error naming the
 *   feature and the package is logged once a minute;
 * - every refusal is answered `FAILURE_DELAY_MS` late (a timer, no CPU), so a client looping on wrong
 *   credentials makes a few requests a second per connection instead of thousands.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import { bcryptCost } from '../config/formats.js';
import { AuthBusyError, AuthError, AuthRateLimitedError, ForbiddenError } from '../errors.js';
import type { AuthRefusalReason, Metrics } from '../metrics/definitions.js';
import { AddressAllowance } from './auth-allowance.js';
import type { PasswordVerifier } from './bcrypt-pool.js';

export interface AuthConfig {
  bearerTokens: string[];
  /** user → bcrypt hash */
  basicAuthUsers: Record<string, string>;
}

/** How long a verified basic-auth pair is accepted without bcrypt after its last use, in milliseconds. */
export const REMEMBER_MS = 5 * 60_000;
/** Verified pairs remembered at most (only correct passwords enter, so this is never reached in practice). */
const REMEMBER_MAX = 1024;
/**
 * A refusal (401) is answered this late, in milliseconds: it costs a timer, and it slows a client that loops
 * on wrong credentials from thousands of requests a second to five per connection.
 */
export const FAILURE_DELAY_MS = 200;
/** At most one warning per this many milliseconds about refused checks, in milliseconds. */
const BUSY_WARNING_MS = 60_000;

const digest = (text: string) => createHash('sha256').update(text).digest();

/** True when any credentials are configured; without them the action endpoints answer 403. */
export const authEnabled = (auth: AuthConfig) =>
  auth.bearerTokens.length > 0 || Object.keys(auth.basicAuthUsers).length > 0;

/** What the check needs besides the credentials. */
export interface AuthCheckOptions {
  /** compares passwords with bcrypt hashes; the app passes one `BcryptPool` shared by every scope */
  verifier: PasswordVerifier;
  /** ms since epoch */
  now?: () => number;
  /** receives one warning a minute while checks are refused because the queue is full */
  logger?: FastifyBaseLogger;
  /** waits before a refusal is answered (default: a timer of `FAILURE_DELAY_MS`) */
  delay?: () => Promise<unknown>;
  /** each client address's share of the checks; the app passes one shared by every scope (default: a new one) */
  allowance?: AddressAllowance;
  /** counts each request refused without a check, by reason (`baremetal_http_auth_refusals_total`) */
  refusals?: Pick<Metrics['httpAuthRefusals'], 'inc'>;
}

/** A refusal without a check, as the allowance and the pool say it → its `reason` label. */
const REFUSAL_REASONS = {
  busy: 'busy',
  'in-flight': 'in_flight',
  'wrong-passwords': 'wrong_passwords',
} as const satisfies Record<string, AuthRefusalReason>;

/**
 * Which configured credential a request presented: the position of its bearer token in `bearerTokens`, or its
 * basic-auth user name.
 */
export type Credential = { token: number } | { user: string };

/**
 * Builds the fastify hook that checks credentials; it resolves to the credential presented (undefined when the
 * routes are open). Throws AuthError (401); AuthBusyError (503) or AuthRateLimitedError (429), both with
 * `retryAfterSeconds`, when a password could not be checked now; or ForbiddenError (403) when no credentials
 * are configured and `unconfigured` is `forbid` (remediation); with `allow` (web.auth) the routes are then open.
 */
export function createAuthCheck(
  auth: AuthConfig,
  unconfigured: 'forbid' | 'allow',
  options: AuthCheckOptions,
): (request: FastifyRequest) => Promise<Credential | undefined> {
  const { verifier, now = Date.now, logger, delay = () => sleep(FAILURE_DELAY_MS) } = options;
  const allowance = options.allowance ?? new AddressAllowance({ now });
  const tokens = auth.bearerTokens.map(digest);
  const users = new Map(Object.entries(auth.basicAuthUsers));
  // The hash an unknown user is compared with: the cheapest configured one, so that an unknown user
  // costs no more than a known one and takes the same path.
  const decoy = [...users.values()].sort((a, b) => bcryptCost(a) - bcryptCost(b))[0];
  const remembered = new Map<string, number>();
  let refusedSinceWarning = 0;
  let lastWarning = -Infinity;
  let lastUnavailable = -Infinity;

  const remember = (key: string) => {
    const t = now();
    if (remembered.size >= REMEMBER_MAX) {
      for (const [k, until] of remembered) if (until <= t) remembered.delete(k);
      if (remembered.size >= REMEMBER_MAX) remembered.delete(remembered.keys().next().value!);
    }
    remembered.delete(key);
    remembered.set(key, t + REMEMBER_MS);
  };
  /** The refusal of a check that did not run; never a 401, which would tell the client the password is wrong. */
  const uncheckedRefusal = (reason: keyof typeof REFUSAL_REASONS, retryAfterSeconds = 1) => {
    options.refusals?.inc({ reason: REFUSAL_REASONS[reason] });
    refusedSinceWarning++;
    if (now() - lastWarning >= BUSY_WARNING_MS) {
      logger?.warn(
        { refused: refusedSinceWarning },
        'basic-auth checks refused without a check: too many wrong or new passwords at once',
      );
      lastWarning = now();
      refusedSinceWarning = 0;
    }
    if (reason === 'wrong-passwords')
      return new AuthRateLimitedError(
        'credentials not checked: too many wrong passwords from this address; retry later',
        retryAfterSeconds,
      );
    return new AuthBusyError(
      reason === 'busy'
        ? 'credentials not checked: too many password checks in progress; retry later'
        : 'credentials not checked: too many password checks in progress from this address; retry later',
      retryAfterSeconds,
    );
  };

  return async (request) => {
    if (!authEnabled(auth)) {
      if (unconfigured === 'allow') return;
      throw new ForbiddenError('remediation is disabled: no credentials configured (remediation.auth)');
    }
    const header = request.headers.authorization ?? '';
    const [scheme = '', credentials = ''] = header.split(/\s+/, 2);
    if (/^bearer$/i.test(scheme) && credentials) {
      const presented = digest(credentials);
      // Compare with every token, without stopping at the first match.
      let matched = -1;
      for (const [i, token] of tokens.entries()) if (timingSafeEqual(token, presented)) matched = i;
      if (matched >= 0) return { token: matched };
    } else if (/^basic$/i.test(scheme) && credentials && decoy !== undefined) {
      const decoded = Buffer.from(credentials, 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      const user = colon < 0 ? decoded : decoded.slice(0, colon);
      const password = colon < 0 ? '' : decoded.slice(colon + 1);
      const key = digest(`${user}\u0000${password}`).toString('hex');
      if ((remembered.get(key) ?? 0) > now()) {
        // Sliding: a client that keeps using its credentials (Prometheus every scrape) never needs bcrypt
        // again, so a flood of wrong passwords filling the queue cannot lock it out.
        remember(key);
        return { user };
      }
      const hash = users.get(user);
      const admission = allowance.admit(request.socket?.remoteAddress);
      if (!admission.ok) {
        const error = uncheckedRefusal(admission.reason, admission.retryAfterSeconds);
        await delay();
        throw error;
      }
      const ok = await verifier.compare(password, hash ?? decoy).catch((error: unknown) => error as Error);
      if (ok instanceof Error) {
        // Nothing was compared (bcryptjs failed to load): not a wrong password, so no 401 and no allowance spent.
        admission.release(false);
        if (now() - lastUnavailable >= BUSY_WARNING_MS) {
          logger?.error({ err: ok }, 'basic-auth passwords cannot be checked');
          lastUnavailable = now();
        }
        await delay();
        throw new AuthBusyError('credentials not checked: the password check is unavailable (see the log)', 60);
      }
      admission.release(ok === false || (ok === true && hash === undefined));
      if (ok === 'busy') {
        const error = uncheckedRefusal('busy');
        await delay();
        throw error;
      }
      if (ok && hash !== undefined) {
        remember(key);
        return { user };
      }
    }
    await delay();
    throw new AuthError(header ? 'invalid credentials' : 'credentials required: bearer token or basic auth');
  };
}
