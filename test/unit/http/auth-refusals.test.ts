/**
 * `baremetal_http_auth_refusals_total{reason}`: every basic-auth request refused without a check is counted
 * under its reason, from 0; a wrong password that was checked (401) is not a refusal. And the limits of
 * `web.auth_limits` reach the allowance buildApp builds.
 */
import bcrypt from 'bcryptjs';
import type { FastifyRequest } from 'fastify';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { GraphStore } from '../../../src/graphs/store.js';
import { buildApp } from '../../../src/http/app.js';
import { AddressAllowance } from '../../../src/http/auth-allowance.js';
import { createAuthCheck, type AuthConfig } from '../../../src/http/auth.js';
import type { PasswordVerifier } from '../../../src/http/bcrypt-pool.js';
import { AUTH_REFUSAL_REASONS, createMetrics } from '../../../src/metrics/definitions.js';
import { ExpositionCache } from '../../../src/metrics/exposition-cache.js';
import { captureLogger } from '../../helpers/logger.js';
import { tempDir } from '../../helpers/tmp.js';

const PASSWORD = 'correct horse battery staple';
const HASH = bcrypt.hashSync(PASSWORD, 4);
const auth: AuthConfig = { bearerTokens: [], basicAuthUsers: { prometheus: HASH } };
const NAME = 'baremetal_http_auth_refusals_total';

const basic = (password: string) => `Basic ${Buffer.from(`prometheus:${password}`).toString('base64')}`;
const request = (password: string) =>
  ({ headers: { authorization: basic(password) }, socket: { remoteAddress: '192.0.2.7' } }) as FastifyRequest;

/** Every reason's count on `registry`. */
async function refusals(registry: Registry): Promise<Record<string, number>> {
  const { values } = await registry.getSingleMetric(NAME)!.get();
  return Object.fromEntries(values.map((v) => [String(v.labels.reason), v.value]));
}

/** The status of the check's answer: 'ok' or the refusal's status code. */
const status = (check: (r: FastifyRequest) => Promise<unknown>, password: string) =>
  check(request(password)).then(
    () => 'ok',
    (error: { statusCode: number }) => error.statusCode,
  );

/** A verifier that holds each comparison until released (bcryptjs in-process then). */
function heldVerifier(): PasswordVerifier & { release: () => void } {
  const held: Array<() => void> = [];
  return {
    compare: (password, hash) => new Promise((resolve) => held.push(() => resolve(bcrypt.compareSync(password, hash)))),
    release: () => {
      for (const release of held.splice(0)) release();
    },
  };
}

const noDelay = async () => undefined;
const inProcess: PasswordVerifier = { compare: async (password, hash) => bcrypt.compare(password, hash) };

describe(NAME, () => {
  it('is exposed at 0 for every reason from the start', async () => {
    const registry = new Registry();
    createMetrics(registry);
    expect(await refusals(registry)).toEqual({ wrong_passwords: 0, in_flight: 0, busy: 0 });
    expect(Object.keys(await refusals(registry)).sort()).toEqual([...AUTH_REFUSAL_REASONS].sort());
  });

  it.each([
    {
      reason: 'wrong_passwords',
      // One wrong password allowed: the second is refused with 429 without a check.
      run: async (refusals: ReturnType<typeof createMetrics>['httpAuthRefusals']) => {
        const check = createAuthCheck(auth, 'allow', {
          verifier: inProcess,
          delay: noDelay,
          now: () => 0,
          allowance: new AddressAllowance({ burst: 1, now: () => 0 }),
          refusals,
        });
        return [await status(check, 'wrong-1'), await status(check, 'wrong-2')];
      },
      statuses: [401, 429],
    },
    {
      reason: 'in_flight',
      // One check in flight per address: a second at the same time is refused with 503.
      run: async (refusals: ReturnType<typeof createMetrics>['httpAuthRefusals']) => {
        const verifier = heldVerifier();
        const check = createAuthCheck(auth, 'allow', {
          verifier,
          delay: noDelay,
          allowance: new AddressAllowance({ perAddress: 1 }),
          refusals,
        });
        const first = status(check, PASSWORD);
        const second = await status(check, PASSWORD);
        verifier.release();
        return [await first, second];
      },
      statuses: ['ok', 503],
    },
    {
      reason: 'busy',
      // The bcrypt queue of every address is full.
      run: async (refusals: ReturnType<typeof createMetrics>['httpAuthRefusals']) => {
        const check = createAuthCheck(auth, 'allow', {
          verifier: { compare: async () => 'busy' as const },
          delay: noDelay,
          refusals,
        });
        return [await status(check, PASSWORD)];
      },
      statuses: [503],
    },
  ])('counts a refusal as $reason, and nothing else', async ({ reason, run, statuses }) => {
    const registry = new Registry();
    const metrics = createMetrics(registry);
    expect(await run(metrics.httpAuthRefusals)).toEqual(statuses);
    expect(await refusals(registry)).toEqual({ wrong_passwords: 0, in_flight: 0, busy: 0, [reason]: 1 });
  });

  it('counts the refusals of the app, with the limits of web.auth_limits', async () => {
    const registry = new Registry();
    const metrics = createMetrics(registry);
    const app = buildApp({
      logger: captureLogger().logger,
      exposition: new ExpositionCache({ registry }),
      graphStores: new Map([['default', new GraphStore(tempDir(), 'default')]]),
      graphMaxWidth: 2000,
      webAuth: auth,
      passwordVerifier: inProcess,
      authLimits: { inFlightPerAddress: 2, wrongPasswordBurst: 2, wrongPasswordRefillMs: 3_600_000 },
      authRefusals: metrics.httpAuthRefusals,
    });
    try {
      const statuses = [];
      for (const password of ['wrong-1', 'wrong-2', 'wrong-3', PASSWORD]) {
        const res = await app.inject({ url: '/metrics', headers: { authorization: basic(password) } });
        statuses.push(res.statusCode);
      }
      // Two wrong passwords allowed (the default is 10), then 429 for the address, the correct one too.
      expect(statuses).toEqual([401, 401, 429, 429]);
      expect(await refusals(registry)).toEqual({ wrong_passwords: 2, in_flight: 0, busy: 0 });
    } finally {
      await app.close();
    }
  });
});
