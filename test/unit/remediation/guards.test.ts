/** The attack guard and the breaker's limit as pure functions: each case with its exact decision and message. */
import { describe, expect, it } from 'vitest';
import { DEFAULT_SAFETY } from '../../../src/config/types.js';
import { breakerLimit, checkAttack } from '../../../src/remediation/guards.js';
import type { AttackState, TargetDirectory } from '../../../src/remediation/types.js';
import { powerRequest } from '../../helpers/remediation.js';

const NOW = Date.UTC(2026, 10, 21, 12);
const MIN = 60_000;
const directory = (state: AttackState | undefined): TargetDirectory => ({
  serversKnown: true,
  hasServer: () => true,
  ownsIp: () => true,
  ...(state ? { attackState: () => state } : {}),
});
const known = (events: Record<string, number>, readAt = NOW): AttackState => ({
  known: true,
  readAt,
  lastEventAt: new Map(Object.entries(events)),
});

describe('checkAttack', () => {
  it.each([
    { name: 'no events', state: known({}), message: undefined },
    { name: 'an event before the window', state: known({ '198.18.0.1': NOW - 16 * MIN }), message: undefined },
    {
      name: 'an event within the window',
      state: known({ '198.18.0.1': NOW - 14 * MIN, '198.18.0.2': NOW - 2 * MIN }),
      message:
        'server 100001 is under attack: IP 198.18.0.2 had its last attack event at 2026-11-21T11:58:00.000Z, within 900s (and 1 more of its IPs)',
    },
    {
      name: 'a history read three periods ago (not yet stale)',
      state: known({}, NOW - 3 * MIN),
      message: undefined,
    },
    {
      name: 'a history read longer ago than three periods',
      state: known({}, NOW - 3 * MIN - 1),
      message:
        'attack state of server 100001 unknown: its firewall history was last read at 2026-11-21T11:56:59.999Z, more than 3 firewall periods (180s) ago; power actions need it (remediation.safety.deny_power_when_attacked)',
    },
    {
      name: 'an unknown state',
      state: { known: false, reason: 'the firewall collector is off' } as const,
      message:
        'attack state of server 100001 unknown: the firewall collector is off; power actions need it (remediation.safety.deny_power_when_attacked)',
    },
    {
      name: 'a directory without attack data',
      state: undefined,
      message:
        'attack state of server 100001 unknown: no attack data in this process; power actions need it (remediation.safety.deny_power_when_attacked)',
    },
  ])('$name', ({ state, message }) => {
    const denial = checkAttack(directory(state), powerRequest(), DEFAULT_SAFETY, NOW, MIN);
    expect(denial).toEqual(message === undefined ? undefined : { decision: 'denied_under_attack', message });
  });

  it('lets a forced operator call and a switched-off guard through', () => {
    const attacked = directory(known({ '198.18.0.1': NOW }));
    expect(checkAttack(attacked, powerRequest({ force: true }), DEFAULT_SAFETY, NOW, MIN)).toBeUndefined();
    const off = { ...DEFAULT_SAFETY, denyPowerWhenAttacked: false };
    expect(checkAttack(attacked, powerRequest(), off, NOW, MIN)).toBeUndefined();
  });
});

describe('breakerLimit', () => {
  it.each([
    { servers: 0, limit: 3 },
    { servers: 300, limit: 3 },
    { servers: 301, limit: 4 },
    { servers: 10_000, limit: 100 },
  ])('$servers servers in scope: $limit', ({ servers, limit }) => {
    expect(breakerLimit(DEFAULT_SAFETY, servers)).toBe(limit);
  });
});
