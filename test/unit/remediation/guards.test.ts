/** The attack guard and the breaker's limit as pure functions: each case with its exact decision and message. */
import { describe, expect, it } from 'vitest';
import { DEFAULT_SAFETY } from '../../../src/config/types.js';
import { NoLeaderError } from '../../../src/errors.js';
import { breakerLimit, checkAttack, checkCircuitOpen } from '../../../src/remediation/guards.js';
import { Journal } from '../../../src/store/sqlite/journal.js';
import { sqliteStore } from '../../../src/store/sqlite/store.js';
import type { AttackState, TargetDirectory } from '../../../src/remediation/types.js';
import { powerRequest } from '../../helpers/remediation.js';
import { tempDir } from '../../helpers/tmp.js';

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

  it('decides nothing while only a leader would know (undecided): NoLeaderError, 503 with Retry-After', () => {
    const waiting = directory({ known: false, reason: 'its firewall history has not been read yet', undecided: true });
    const call = () => checkAttack(waiting, powerRequest(), DEFAULT_SAFETY, NOW, MIN);
    expect(call).toThrow(NoLeaderError);
    expect(call).toThrow(
      'attack state of server 100001 not known here yet: its firewall history has not been read yet; retry later',
    );
    try {
      call();
    } catch (error) {
      expect(error).toMatchObject({ statusCode: 503, code: 'BM_ERR_NO_LEADER', retryAfterSeconds: 5 });
    }
    // forced, or the guard off: it does not need the attack state
    expect(checkAttack(waiting, powerRequest({ force: true }), DEFAULT_SAFETY, NOW, MIN)).toBeUndefined();
    expect(checkAttack(waiting, powerRequest(), { ...DEFAULT_SAFETY, denyPowerWhenAttacked: false }, NOW, MIN)).toBe(
      undefined,
    );
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

describe('checkCircuitOpen (what the api command checks)', () => {
  it('denies while the breaker is open, naming since when, and never opens it', async () => {
    const store = sqliteStore(Journal.open(':memory:'), ':memory:', tempDir());
    // More servers with power requests than the breaker allows: checkCircuit would open it, this only reads.
    for (const serverId of ['1', '2', '3', '4', '5'])
      await store.insert({
        account: 'a',
        createdAt: NOW,
        source: 'cli',
        action: 'powercycle',
        serverId,
        ip: null,
        value: null,
        alertname: null,
        fingerprint: null,
        startsAt: null,
        decision: 'executed',
        principal: 'cli:root',
      });
    expect(await checkCircuitOpen(store, 'a')).toBeUndefined();
    expect((await store.circuit('a')).openedAt).toBeNull();
    await store.openCircuit('a', NOW, 'too many');
    expect(await checkCircuitOpen(store, 'a')).toEqual({
      decision: 'denied_circuit_open',
      message: `the circuit breaker of account a is open since ${new Date(NOW).toISOString()} (too many); power actions are denied until an operator closes it: POST /api/v1/remediation/circuit/close`,
    });
    expect(await checkCircuitOpen(store, 'b')).toBeUndefined();
    await store.close();
  });
});
