/**
 * Credentials for the action endpoints, as Alertmanager's `http_config` sends them: a bearer token
 * (`authorization.credentials_file`) or basic auth (`basic_auth`) checked against bcrypt hashes.
 * Token comparison is constant-time over digests; a verified basic-auth pair is remembered (by digest)
 * for five minutes so that bcrypt's cost is paid once, not on every webhook.
 */
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import bcrypt from 'bcryptjs';
import type { FastifyRequest } from 'fastify';
import { AuthError, ForbiddenError } from '../errors.js';

export interface AuthConfig {
  bearerTokens: string[];
  /** user → bcrypt hash */
  basicAuthUsers: Record<string, string>;
}

const digest = (text: string) => createHash('sha256').update(text).digest();
/** A hash of a random password, made once: unknown users cost as much as known ones. */
let dummyHash: string | undefined;
const REMEMBER_MS = 5 * 60_000;

/** True when any credentials are configured; without them the action endpoints answer 403. */
export const authEnabled = (auth: AuthConfig) => auth.bearerTokens.length > 0 || Object.keys(auth.basicAuthUsers).length > 0;

/**
 * Builds the fastify hook that checks credentials. Throws AuthError (401), or ForbiddenError (403) when no
 * credentials are configured and `unconfigured` is `forbid` (remediation); with `allow` (web.auth) the
 * routes are then open.
 */
export function createAuthCheck(
  auth: AuthConfig,
  unconfigured: 'forbid' | 'allow',
  now: () => number = Date.now,
): (request: FastifyRequest) => Promise<void> {
  const tokens = auth.bearerTokens.map(digest);
  const remembered = new Map<string, number>();
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
      let ok = false;
      for (const token of tokens) ok = timingSafeEqual(token, presented) || ok;
      if (ok) return;
    } else if (/^basic$/i.test(scheme) && credentials) {
      const decoded = Buffer.from(credentials, 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      const user = colon < 0 ? decoded : decoded.slice(0, colon);
      const password = colon < 0 ? '' : decoded.slice(colon + 1);
      const key = digest(`${user}\u0000${password}`).toString('hex');
      if ((remembered.get(key) ?? 0) > now()) return;
      const known = Object.hasOwn(auth.basicAuthUsers, user);
      const hash = known ? auth.basicAuthUsers[user]! : (dummyHash ??= bcrypt.hashSync(randomUUID(), 10));
      if ((await bcrypt.compare(password, hash)) && known) {
        remembered.set(key, now() + REMEMBER_MS);
        return;
      }
    }
    throw new AuthError(header ? 'invalid credentials' : 'credentials required: bearer token or basic auth');
  };
}
