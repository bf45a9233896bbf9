import bcrypt from 'bcryptjs';
import type { FastifyRequest } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { createAuthCheck, FAILURE_DELAY_MS, REMEMBER_MS, type AuthConfig } from '../../../src/http/auth.js';
import { BcryptPool, type PasswordVerifier } from '../../../src/http/bcrypt-pool.js';
import { captureLogger } from '../../helpers/logger.js';

const PASSWORD = 'correct horse battery staple';
const HASH4 = bcrypt.hashSync(PASSWORD, 4);
const HASH5 = bcrypt.hashSync('another password', 5);
const TOKEN = 'metrics-token-0123456789';

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
const request = (authorization?: string) =>
  ({ headers: authorization === undefined ? {} : { authorization } }) as FastifyRequest;

/** bcryptjs in-process, recording each comparison it is asked for (which hash), so tests count hashing. */
function countingVerifier(answer?: 'busy'): PasswordVerifier & { hashes: string[] } {
  const hashes: string[] = [];
  return {
    hashes,
    compare: async (password, hash) => {
      if (answer) return answer;
      hashes.push(hash);
      return bcrypt.compare(password, hash);
    },
  };
}

/** Counts the waits before refusals instead of waiting. */
const delays: number[] = [];
const delay = async () => {
  delays.push(FAILURE_DELAY_MS);
};

/** Runs the check; resolves to the 401/403 message, or 'ok'. */
async function outcome(check: (r: FastifyRequest) => Promise<unknown>, authorization?: string): Promise<string> {
  try {
    await check(request(authorization));
    return 'ok';
  } catch (error) {
    return `${(error as { statusCode: number }).statusCode} ${(error as Error).message}`;
  }
}

describe('basic auth without hashing', () => {
  it.each([
    {
      name: 'only bearer tokens configured (web.auth)',
      auth: { bearerTokens: [TOKEN], basicAuthUsers: {} },
      unconfigured: 'allow' as const,
    },
    {
      name: 'only bearer tokens configured (remediation.auth)',
      auth: { bearerTokens: [TOKEN], basicAuthUsers: {} },
      unconfigured: 'forbid' as const,
    },
  ])('rejects every Basic header without a bcrypt call: $name', async ({ auth, unconfigured }) => {
    const verifier = countingVerifier();
    const check = createAuthCheck(auth, unconfigured, { verifier, delay });
    for (const header of [basic('admin', 'admin'), basic('', ''), 'Basic', 'Basic !!!not-base64', 'basic YTpi']) {
      expect(await outcome(check, header), header).toMatch(/^401 /);
    }
    expect(await outcome(check, `Bearer ${TOKEN}`)).toBe('ok');
    expect(verifier.hashes).toEqual([]);
  });

  it.each([
    { name: 'web.auth open', unconfigured: 'allow' as const, expected: 'ok' },
    {
      name: 'remediation disabled',
      unconfigured: 'forbid' as const,
      expected: '403 remediation is disabled: no credentials configured (remediation.auth)',
    },
  ])('does not hash when nothing is configured: $name', async ({ unconfigured, expected }) => {
    const verifier = countingVerifier();
    const check = createAuthCheck({ bearerTokens: [], basicAuthUsers: {} }, unconfigured, { verifier, delay });
    expect(await outcome(check, basic('admin', 'admin'))).toBe(expected);
    expect(verifier.hashes).toEqual([]);
  });
});

describe('basic auth with users', () => {
  const auth: AuthConfig = { bearerTokens: [], basicAuthUsers: { prometheus: HASH4, alertmanager: HASH5 } };

  it('remembers a verified pair while it is used: bcrypt runs once, then again only after five idle minutes', async () => {
    const clock = { now: 1_000_000 };
    const verifier = countingVerifier();
    const check = createAuthCheck(auth, 'allow', { verifier, delay, now: () => clock.now });
    for (let i = 0; i < 20; i++) {
      expect(await outcome(check, basic('prometheus', PASSWORD))).toBe('ok');
      clock.now += 60_000;
    }
    expect(verifier.hashes).toEqual([HASH4]);
    clock.now += REMEMBER_MS;
    expect(await outcome(check, basic('prometheus', PASSWORD))).toBe('ok');
    expect(verifier.hashes).toEqual([HASH4, HASH4]);
  });

  it('never remembers a failed pair: each wrong password is one comparison', async () => {
    const verifier = countingVerifier();
    const check = createAuthCheck(auth, 'allow', { verifier, delay });
    for (let i = 0; i < 3; i++)
      expect(await outcome(check, basic('prometheus', 'wrong'))).toBe('401 invalid credentials');
    expect(verifier.hashes).toEqual([HASH4, HASH4, HASH4]);
  });

  it.each([
    { name: 'a known user, wrong password', header: basic('alertmanager', 'wrong'), hash: HASH5 },
    { name: 'an unknown user', header: basic('mallory', 'wrong'), hash: HASH4 },
    { name: 'an unknown user with a known password', header: basic('mallory', PASSWORD), hash: HASH4 },
    { name: 'a user named like an Object property', header: basic('__proto__', PASSWORD), hash: HASH4 },
    { name: 'no colon', header: `Basic ${Buffer.from('prometheus').toString('base64')}`, hash: HASH4 },
  ])(
    'takes the same path for $name: one comparison, never with a costlier hash than the cheapest user',
    async ({ header, hash }) => {
      const verifier = countingVerifier();
      const check = createAuthCheck(auth, 'allow', { verifier, delay });
      expect(await outcome(check, header)).toBe('401 invalid credentials');
      expect(verifier.hashes).toEqual([hash]);
      expect(bcrypt.getRounds(verifier.hashes[0]!)).toBeLessThanOrEqual(bcrypt.getRounds(HASH5));
    },
  );

  it('refuses at once, without hashing, when the verifier is busy, and warns once a minute', async () => {
    const clock = { now: 0 };
    const log = captureLogger();
    const verifier = countingVerifier('busy');
    const check = createAuthCheck(auth, 'allow', { verifier, delay, now: () => clock.now, logger: log.logger });
    for (let i = 0; i < 3; i++) {
      expect(await outcome(check, basic('prometheus', PASSWORD))).toBe(
        '401 credentials not checked: too many password checks in progress; retry later',
      );
    }
    clock.now += 60_000;
    await outcome(check, basic('prometheus', PASSWORD));
    const warnings = log.lines.map((l) => JSON.parse(l)).filter((l) => l.level === 'warn');
    expect(warnings.map((w) => w.refused)).toEqual([1, 3]);
    expect(log.lines.join('\n')).not.toContain(PASSWORD);
  });
});

describe('refusals', () => {
  it.each([
    { name: 'no credentials', header: undefined, waits: 1 },
    { name: 'a wrong token', header: 'Bearer wrong', waits: 1 },
    { name: 'Basic with no basic-auth user', header: basic('admin', 'admin'), waits: 1 },
    { name: 'an unknown scheme', header: 'Digest x', waits: 1 },
    { name: 'the right token', header: `Bearer ${TOKEN}`, waits: 0 },
  ])('wait FAILURE_DELAY_MS before answering: $name → $waits', async ({ header, waits }) => {
    delays.length = 0;
    const check = createAuthCheck({ bearerTokens: [TOKEN], basicAuthUsers: {} }, 'forbid', {
      verifier: countingVerifier(),
      delay,
    });
    await outcome(check, header);
    expect(delays).toEqual(Array(waits).fill(FAILURE_DELAY_MS));
  });
});

describe('BcryptPool', () => {
  let pool: BcryptPool | undefined;
  afterEach(async () => {
    await pool?.close();
    pool = undefined;
  });

  it.each([
    { name: 'the right password', password: PASSWORD, hash: HASH4, expected: true },
    { name: 'a wrong password', password: 'wrong', hash: HASH4, expected: false },
    { name: 'a hash bcryptjs cannot read', password: PASSWORD, hash: '$2b$04$short', expected: false },
  ])('compares in a worker thread: $name → $expected', async ({ password, hash, expected }) => {
    pool = new BcryptPool();
    expect(await pool.compare(password, hash)).toBe(expected);
    expect(pool.compared).toBe(1);
  });

  it('runs `workers` comparisons, queues `queue` more and refuses the rest without hashing', async () => {
    pool = new BcryptPool({ workers: 1, queue: 2 });
    const answers = await Promise.all(
      Array.from({ length: 8 }, (_, i) => pool!.compare(i % 2 ? PASSWORD : 'wrong', HASH4)),
    );
    expect(answers).toEqual([false, true, false, 'busy', 'busy', 'busy', 'busy', 'busy']);
    expect({ compared: pool.compared, refused: pool.refused, pending: pool.pending }).toEqual({
      compared: 3,
      refused: 5,
      pending: 0,
    });
    // Once drained, it takes work again.
    expect(await pool.compare(PASSWORD, HASH4)).toBe(true);
  });

  it('answers false for what is waiting when closed, and after', async () => {
    pool = new BcryptPool({ workers: 1, queue: 4 });
    const waiting = [pool.compare(PASSWORD, HASH5), pool.compare(PASSWORD, HASH5)];
    await pool.close();
    expect(await Promise.all(waiting)).toEqual([false, false]);
    expect(await pool.compare(PASSWORD, HASH4)).toBe(false);
  });
});
