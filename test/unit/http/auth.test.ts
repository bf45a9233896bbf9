import bcrypt from 'bcryptjs';
import type { FastifyRequest } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { AddressAllowance, FAILED_CHECKS_BURST, FAILED_CHECK_REFILL_MS } from '../../../src/http/auth-allowance.js';
import { clientKey } from '../../../src/http/client-address.js';
import { createAuthCheck, FAILURE_DELAY_MS, REMEMBER_MS, type AuthConfig } from '../../../src/http/auth.js';
import { BcryptPool, type PasswordVerifier } from '../../../src/http/bcrypt-pool.js';
import { captureLogger } from '../../helpers/logger.js';

const PASSWORD = 'correct horse battery staple';
const HASH4 = bcrypt.hashSync(PASSWORD, 4);
const HASH5 = bcrypt.hashSync('another password', 5);
const TOKEN = 'metrics-token-0123456789';

const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
const request = (authorization?: string, remoteAddress = '127.0.0.1') =>
  ({ headers: authorization === undefined ? {} : { authorization }, socket: { remoteAddress } }) as FastifyRequest;

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

/** Runs the check; resolves to the refusal's status and message (and `Retry-After` seconds), or 'ok'. */
async function outcome(
  check: (r: FastifyRequest) => Promise<unknown>,
  authorization?: string,
  remoteAddress?: string,
): Promise<string> {
  try {
    await check(request(authorization, remoteAddress));
    return 'ok';
  } catch (error) {
    const { statusCode, retryAfterSeconds } = error as { statusCode: number; retryAfterSeconds?: number };
    return `${statusCode} ${(error as Error).message}${retryAfterSeconds === undefined ? '' : ` (retry after ${retryAfterSeconds} s)`}`;
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

  it('refuses at once, without hashing, with 503 and Retry-After when the verifier is busy, and warns once a minute', async () => {
    const clock = { now: 0 };
    const log = captureLogger();
    const verifier = countingVerifier('busy');
    const check = createAuthCheck(auth, 'allow', { verifier, delay, now: () => clock.now, logger: log.logger });
    for (let i = 0; i < 3; i++) {
      expect(await outcome(check, basic('prometheus', PASSWORD))).toBe(
        '503 credentials not checked: too many password checks in progress; retry later (retry after 1 s)',
      );
    }
    clock.now += 60_000;
    await outcome(check, basic('prometheus', PASSWORD));
    const warnings = log.lines.map((l) => JSON.parse(l)).filter((l) => l.level === 'warn');
    expect(warnings.map((w) => w.refused)).toEqual([1, 3]);
    expect(log.lines.join('\n')).not.toContain(PASSWORD);
  });
});

describe('each client address has its own share of the checks', () => {
  const auth: AuthConfig = { bearerTokens: [], basicAuthUsers: { prometheus: HASH4 } };
  const WRONG = '401 invalid credentials';

  it('refuses an address its wrong passwords beyond the allowance with 429, without hashing; another address still gets checked', async () => {
    const clock = { now: 0 };
    const verifier = countingVerifier();
    const check = createAuthCheck(auth, 'allow', { verifier, delay, now: () => clock.now });
    const flood: string[] = [];
    for (let i = 0; i < FAILED_CHECKS_BURST + 3; i++)
      flood.push(await outcome(check, basic('prometheus', `wrong-${i}`), '127.0.0.2'));
    expect(flood).toEqual([
      ...Array(FAILED_CHECKS_BURST).fill(WRONG),
      ...Array(3).fill(
        '429 credentials not checked: too many wrong passwords from this address; retry later (retry after 2 s)',
      ),
    ]);
    expect(verifier.hashes).toHaveLength(FAILED_CHECKS_BURST);
    expect(await outcome(check, basic('prometheus', PASSWORD), '127.0.0.1')).toBe('ok');
    expect(await outcome(check, basic('prometheus', 'wrong'), '127.0.0.3')).toBe(WRONG);
    // One allowance comes back every FAILED_CHECK_REFILL_MS.
    clock.now += FAILED_CHECK_REFILL_MS;
    expect(await outcome(check, basic('prometheus', 'wrong-again'), '127.0.0.2')).toBe(WRONG);
    expect(await outcome(check, basic('prometheus', 'wrong-again'), '127.0.0.2')).toMatch(/^429 /);
  });

  it('gives the allowance back for a correct password', async () => {
    const check = createAuthCheck(auth, 'allow', { verifier: countingVerifier(), delay, now: () => 0 });
    for (let i = 0; i < FAILED_CHECKS_BURST - 1; i++) await outcome(check, basic('prometheus', `wrong-${i}`));
    expect(await outcome(check, basic('prometheus', PASSWORD))).toBe('ok');
    expect(await outcome(check, basic('prometheus', 'wrong-last'))).toBe(WRONG);
  });

  it('lets an address have two checks in flight; a third answers 503 while another address is checked', async () => {
    const held: Array<() => void> = [];
    const verifier: PasswordVerifier = {
      compare: (password, hash) =>
        new Promise((resolve) => held.push(() => resolve(bcrypt.compareSync(password, hash)))),
    };
    const check = createAuthCheck(auth, 'allow', { verifier, delay });
    const first = outcome(check, basic('prometheus', 'wrong-1'), '127.0.0.2');
    const second = outcome(check, basic('prometheus', 'wrong-2'), '127.0.0.2');
    expect(await outcome(check, basic('prometheus', 'wrong-3'), '127.0.0.2')).toBe(
      '503 credentials not checked: too many password checks in progress from this address; retry later (retry after 1 s)',
    );
    const other = outcome(check, basic('prometheus', PASSWORD), '127.0.0.1');
    expect(held).toHaveLength(3);
    for (const release of held) release();
    expect(await Promise.all([first, second, other])).toEqual([WRONG, WRONG, 'ok']);
  });

  it('keeps at most `cap` addresses, dropping idle ones', () => {
    const allowance = new AddressAllowance({ cap: 3, now: () => 0 });
    for (let i = 1; i <= 50; i++) {
      const admission = allowance.admit(`10.0.0.${i}`);
      if (admission.ok) admission.release(true);
    }
    expect(allowance.size).toBe(3);
    const ok = allowance.admit('10.0.0.99');
    if (ok.ok) ok.release(false);
    // The new address took an idle one's place, and its correct password left no state behind.
    expect(allowance.size).toBe(2);
  });

  it.each([
    { address: '127.0.0.2', key: '127.0.0.2' },
    { address: '::ffff:10.1.2.3', key: '10.1.2.3' },
    { address: '2001:db8:0:1::5', key: '2001:db8:0:1::/64' },
    { address: '2001:db8:0:1:ffff:1:2:3', key: '2001:db8:0:1::/64' },
    { address: '::1', key: '0:0:0:0::/64' },
    { address: undefined, key: '' },
  ])('counts $address as $key', ({ address, key }) => {
    expect(clientKey(address)).toBe(key);
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
