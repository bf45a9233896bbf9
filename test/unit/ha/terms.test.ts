/**
 * The membership's terms (src/ha/terms.ts): the oldest live replica's terms are the membership's; a younger
 * replica of another mode or account set, or one whose name a live process of another boot holds, disagrees;
 * an account some live replica has and the agreed set lacks is unled. And how the disagreement is reported
 * (src/ha/agreement.ts): the gauge by reason, one log line a minute, /readyz's reason.
 */
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { Agreement, REPEAT_LOG_MS } from '../../../src/ha/agreement.js';
import { judge, type Member, termsOf } from '../../../src/ha/terms.js';
import { createMetrics } from '../../../src/metrics/definitions.js';
import { captureLogger } from '../../helpers/logger.js';

const SIX = ['a1', 'a2', 'a3', 'a4', 'a5', 'a6'].map((name) => ({ name, baseUrl: `https://${name}.example` }));
const shared = termsOf('shared', SIX);

const member = (replica: string, startedAt: number, terms = shared, bootId = `boot-${replica}`): Member => ({
  replica,
  bootId,
  startedAt,
  terms,
});

describe('termsOf', () => {
  it('is the same whatever the order of the accounts, and differs with a name or a base URL', () => {
    expect(termsOf('shared', [...SIX].reverse())).toEqual(shared);
    expect(shared.accounts).toEqual(['a1', 'a2', 'a3', 'a4', 'a5', 'a6']);
    const moved = SIX.map((a) => (a.name === 'a3' ? { ...a, baseUrl: 'https://elsewhere.example' } : a));
    expect(termsOf('shared', moved).digest).not.toBe(shared.digest);
    expect(termsOf('shared', SIX.slice(1)).digest).not.toBe(shared.digest);
    expect(termsOf('single', SIX).digest).toBe(shared.digest);
  });
});

describe('judge', () => {
  const self = (replica: string, terms = shared) => ({ replica, bootId: `boot-${replica}`, terms });

  it('replicas of one terms agree: every live one is a member, nothing unled', () => {
    const live = [member('r0', 1), member('r1', 2), member('r2', 3)];
    for (const r of ['r0', 'r1', 'r2'])
      expect(judge(self(r), live)).toEqual({ mismatch: undefined, members: ['r0', 'r1', 'r2'], unled: [] });
  });

  it('a younger replica without share_accounts among sharing ones refuses; the sharing ones go on without it', () => {
    const single = termsOf('single', SIX);
    const live = [member('r0', 1), member('r1', 2), member('host/1234', 3, single)];
    const j = judge(self('host/1234', single), live);
    expect(j.mismatch?.reason).toBe('mode');
    expect(j.mismatch?.message).toContain('r0');
    expect(j.members).toEqual([]);
    expect(judge(self('r1'), live)).toEqual({ mismatch: undefined, members: ['r0', 'r1'], unled: [] });
  });

  it('the other way round: sharing replicas younger than a single leader refuse, the single one leads', () => {
    const single = termsOf('single', SIX);
    const live = [member('host/1234', 1, single), member('r0', 2), member('r1', 3)];
    expect(judge(self('r0'), live).mismatch?.reason).toBe('mode');
    expect(judge(self('host/1234', single), live).mismatch).toBeUndefined();
  });

  it('a sharing replica refuses while a single leader of an older version (no row) holds the lock', () => {
    expect(judge(self('r0'), [member('r0', 1)], true).mismatch?.reason).toBe('mode');
    expect(judge(self('r0'), [member('r0', 1)], false).mismatch).toBeUndefined();
  });

  it('a younger replica lacking an account refuses; one with an extra account refuses and names it unled', () => {
    const five = termsOf('shared', SIX.slice(0, 5));
    const live = [member('r0', 1), member('r1', 2), member('r2', 3, five)];
    const lacking = judge(self('r2', five), live);
    expect(lacking.mismatch?.reason).toBe('accounts');
    expect(lacking.mismatch?.message).toContain('only r0 has a6');
    expect(lacking.unled).toEqual([]);

    const seven = termsOf('shared', [...SIX, { name: 'a7', baseUrl: 'https://a7.example' }]);
    const extra = [member('r0', 1), member('r1', 2), member('r2', 3, seven)];
    expect(judge(self('r2', seven), extra).mismatch?.message).toContain('only this replica has a7');
    // every replica counts a7 unled: in a live replica's config, in no agreeing replica's
    expect(judge(self('r0'), extra)).toEqual({ mismatch: undefined, members: ['r0', 'r1'], unled: ['a7'] });
    expect(judge(self('r2', seven), extra).unled).toEqual(['a7']);
  });

  it('the same names with another base URL are another account set', () => {
    const moved = termsOf(
      'shared',
      SIX.map((a) => (a.name === 'a1' ? { ...a, baseUrl: 'https://other.example' } : a)),
    );
    const j = judge(self('r1', moved), [member('r0', 1), member('r1', 2, moved)]);
    expect(j.mismatch?.reason).toBe('accounts');
    expect(j.mismatch?.message).toContain('another base_url');
    expect(j.mismatch?.message).not.toContain('other.example');
  });

  it('a name held by a live process of another boot is refused, whatever the ages', () => {
    const live = [member('r0', 5, shared, 'the-other-boot'), member('r1', 2)];
    const j = judge(self('r0'), live);
    expect(j.mismatch?.reason).toBe('duplicate_name');
    expect(j.mismatch?.message).toContain('the-other-boot');
  });

  it("a name held by a row whose heartbeat stopped is waited for (a killed process's row), a beating one refused", () => {
    const TICK = 2_000;
    const holder = (heartbeatAgeMs: number): Member => ({
      ...member('r0', 5, shared, 'the-dead-boot'),
      heartbeatAgeMs,
    });
    const stale = judge(self('r0'), [holder(2 * TICK + 1), member('r1', 2)], false, TICK);
    expect(stale.mismatch).toMatchObject({ reason: 'duplicate_name', waiting: true });
    expect(stale.mismatch?.message).toContain('waiting for that row to expire');
    expect(stale.mismatch?.message).toContain('the-dead-boot');
    expect(stale.members).toEqual([]);
    // Beating (within two ticks: a tick late plus its statement's time): another live process, refused.
    const beating = judge(self('r0'), [holder(TICK + 500), member('r1', 2)], false, TICK);
    expect(beating.mismatch?.reason).toBe('duplicate_name');
    expect(beating.mismatch?.waiting).toBeUndefined();
    expect(beating.mismatch?.message).toContain('already uses the replica name r0');
  });

  it('names the reference replica, which after a restart of the oldest may be the misconfigured one', () => {
    const five = termsOf('shared', SIX.slice(0, 5));
    // r1 lacks a6 and is younger: it refuses, naming r0 as the reference
    const before = judge(self('r1', five), [member('r0', 1), member('r1', 2, five)]);
    expect(before.mismatch?.message).toContain('the reference replica r0 (the oldest live one');
    // r0 restarts: the misconfigured r1 is now the oldest, and r0 (right) is the one refused, naming r1
    const after = judge(self('r0'), [member('r0', 3), member('r1', 2, five)]);
    expect(after.mismatch?.reason).toBe('accounts');
    expect(after.mismatch?.message).toContain('the reference replica r1 (the oldest live one');
    expect(after.mismatch?.message).toContain("compare every replica's row in ha_replicas");
  });

  it('once the older terms have left, the restarted replicas agree (a rolling change converges)', () => {
    const five = termsOf('shared', SIX.slice(0, 5));
    // r0 and r1 restarted with the new terms, r2 still on the old ones and the oldest
    expect(judge(self('r0', five), [member('r0', 7, five), member('r1', 8, five), member('r2', 3)]).mismatch).toEqual(
      expect.objectContaining({ reason: 'accounts' }),
    );
    // r2 stops: the oldest live replica is now r0, with the new terms
    expect(judge(self('r1', five), [member('r0', 7, five), member('r1', 8, five)])).toEqual({
      mismatch: undefined,
      members: ['r0', 'r1'],
      unled: [],
    });
  });

  it('a row of a version that publishes no terms counts as a sharing member, never as the reference', () => {
    const old: Member = { replica: 'old', bootId: null, startedAt: 0, terms: undefined };
    expect(judge(self('r0'), [old, member('r0', 1)])).toEqual({
      mismatch: undefined,
      members: ['old', 'r0'],
      unled: [],
    });
  });
});

describe('Agreement', () => {
  it("waiting for a previous boot's row to expire: a warning, no gauge; a live duplicate then an error and the gauge", async () => {
    const registry = new Registry();
    const metrics = createMetrics(registry, { defaultMetrics: false, version: 'test' });
    const { logger, lines } = captureLogger('info');
    const agreement = new Agreement({ logger, metrics, onChange: () => undefined, now: () => 0 });
    const gauge = async () =>
      Object.fromEntries((await metrics.haConfigMismatch.get()).values.map((v) => [String(v.labels.reason), v.value]));
    const waiting = {
      reason: 'duplicate_name' as const,
      message: 'waiting for that row to expire',
      waiting: true as const,
    };
    agreement.judged({ mismatch: waiting, members: [], unled: [] });
    expect(await gauge()).toEqual({ mode: 0, accounts: 0, duplicate_name: 0 });
    expect(agreement.problem).toBe('this replica leads no account yet: waiting for that row to expire');
    const [line] = lines.map((l) => JSON.parse(l) as { level: number; msg: string });
    expect(line).toMatchObject({ level: 'warn', msg: expect.stringContaining('leads no account yet') });
    const duplicate = { reason: 'duplicate_name' as const, message: 'another live process already uses the name' };
    agreement.judged({ mismatch: duplicate, members: [], unled: [] });
    expect(await gauge()).toEqual({ mode: 0, accounts: 0, duplicate_name: 1 });
    expect(JSON.parse(lines.at(-1)!)).toMatchObject({ level: 'error', msg: expect.stringContaining('disagrees') });
  });

  it('sets the gauge by reason, logs at once and then once a minute, clears on agreement', async () => {
    const registry = new Registry();
    const metrics = createMetrics(registry, { defaultMetrics: false, version: 'test' });
    const { logger, lines } = captureLogger('info');
    let now = 0;
    let changes = 0;
    const agreement = new Agreement({ logger, metrics, onChange: () => changes++, now: () => now });
    const gauge = async () =>
      Object.fromEntries((await metrics.haConfigMismatch.get()).values.map((v) => [String(v.labels.reason), v.value]));
    expect(await gauge()).toEqual({ mode: 0, accounts: 0, duplicate_name: 0 });
    const mismatch = { reason: 'mode' as const, message: 'the live replica r0 runs something else' };
    agreement.judged({ mismatch, members: [], unled: ['a7'] });
    expect(await gauge()).toEqual({ mode: 1, accounts: 0, duplicate_name: 0 });
    expect(agreement.problem).toContain('the live replica r0 runs something else');
    now += REPEAT_LOG_MS - 1;
    agreement.judged({ mismatch, members: [], unled: ['a7'] });
    expect(lines.filter((l) => l.includes('disagrees'))).toHaveLength(1);
    expect(lines.filter((l) => l.includes('no agreeing replica has'))).toHaveLength(1);
    now += 1;
    agreement.judged({ mismatch, members: [], unled: ['a7'] });
    expect(lines.filter((l) => l.includes('disagrees'))).toHaveLength(2);
    expect(lines.filter((l) => l.includes('no agreeing replica has'))).toHaveLength(2);
    expect((await metrics.haAccountUnled.get()).values).toEqual([
      expect.objectContaining({ labels: { account: 'a7' }, value: 1 }),
    ]);
    agreement.judged({ mismatch: undefined, members: ['r0', 'r1'], unled: [] });
    expect(await gauge()).toEqual({ mode: 0, accounts: 0, duplicate_name: 0 });
    expect(agreement.problem).toBeUndefined();
    expect((await metrics.haAccountUnled.get()).values).toEqual([
      expect.objectContaining({ labels: { account: 'a7' }, value: 0 }),
    ]);
    expect(lines.at(-1)).toContain('agrees with the live replicas again');
    expect(changes).toBeGreaterThan(0);
  });
});
