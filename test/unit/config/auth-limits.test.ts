/**
 * `web.auth_limits`: each client address's share of the basic-auth checks (http/auth-allowance.ts), with the
 * values that used to be fixed in the code as defaults; refused values name the key, and nothing is coerced.
 */
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../src/config/load.js';
import { DEFAULT_AUTH_LIMITS } from '../../../src/config/types.js';
import { CHECKS_PER_ADDRESS, FAILED_CHECKS_BURST, FAILED_CHECK_REFILL_MS } from '../../../src/http/auth-allowance.js';
import { configProblems } from '../../helpers/config-problems.js';

const env = { BAREMETAL_API_KEY: 'env-key' };
const minimal = 'upstream:\n  base_url: https://api.provider.test\n';
const withLimits = (limits: string) => `${minimal}web:\n  auth_limits: ${limits}\n`;
const problems = (text: string) => configProblems(() => parseConfigText(text, env));

describe('web.auth_limits', () => {
  it('defaults to the limits the code had: 2 checks in flight, 10 wrong passwords, one back every 2s', () => {
    const { authLimits } = parseConfigText(minimal, env).web;
    expect(authLimits).toEqual({ inFlightPerAddress: 2, wrongPasswordBurst: 10, wrongPasswordRefillMs: 2_000 });
    // The allowance's own defaults (a buildApp without config) are the schema's.
    expect(authLimits).toEqual(DEFAULT_AUTH_LIMITS);
    expect([CHECKS_PER_ADDRESS, FAILED_CHECKS_BURST, FAILED_CHECK_REFILL_MS]).toEqual([2, 10, 2_000]);
  });

  it('reads each key, the refill as a duration in ms', () => {
    const config = parseConfigText(
      withLimits('{ in_flight_per_address: 4, wrong_password_burst: 50, wrong_password_refill: 1m }'),
      env,
    );
    expect(config.web.authLimits).toEqual({
      inFlightPerAddress: 4,
      wrongPasswordBurst: 50,
      wrongPasswordRefillMs: 60_000,
    });
  });

  it.each([
    ['no checks in flight', '{ in_flight_per_address: 0 }', 'web.auth_limits.in_flight_per_address: must be >= 1'],
    [
      'more checks in flight than the cap',
      '{ in_flight_per_address: 65 }',
      'web.auth_limits.in_flight_per_address: must be <= 64',
    ],
    [
      'a fractional burst',
      '{ wrong_password_burst: 2.5 }',
      'web.auth_limits.wrong_password_burst: must be integer (got a number)',
    ],
    ['a zero burst', '{ wrong_password_burst: 0 }', 'web.auth_limits.wrong_password_burst: must be >= 1'],
    // No coercion: a quoted number stays a string, and is refused.
    [
      'a quoted burst',
      '{ wrong_password_burst: "10" }',
      'web.auth_limits.wrong_password_burst: must be integer (got a string)',
    ],
    [
      'a quoted in-flight count',
      '{ in_flight_per_address: "2" }',
      'web.auth_limits.in_flight_per_address: must be integer (got a string)',
    ],
    [
      'a refill of a bare number',
      '{ wrong_password_refill: 2 }',
      'web.auth_limits.wrong_password_refill: must be a duration such as "2s" (got a number; a duration needs its unit, e.g. "2s")',
    ],
    [
      'a refill of zero',
      '{ wrong_password_refill: 0s }',
      'web.auth_limits.wrong_password_refill: must be a duration such as "2s" (got "0s")',
    ],
    [
      'a refill that is no duration',
      '{ wrong_password_refill: soon }',
      'web.auth_limits.wrong_password_refill: must be a duration such as "2s" (got "soon")',
    ],
    ['an unknown key', '{ per_address: 3 }', 'web.auth_limits.per_address: unknown key'],
  ])('refuses %s, naming the key', (_name, limits, problem) => {
    expect(problems(withLimits(limits))).toEqual([problem]);
  });
});
