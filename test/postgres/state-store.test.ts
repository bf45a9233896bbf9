/**
 * The shared backend suite (issue 10): every query of the state store, run against SQLite and PostgreSQL with
 * the same expectations.
 */
import { describe, expect, it } from 'vitest';
import { IdempotencyMismatchError, JournalError } from '../../src/errors.js';
import type { DesiredFirewall, NewEntry } from '../../src/store/rows.js';
import { checkDelivery } from '../../src/remediation/guards.js';
import { powerRequest } from '../helpers/remediation.js';
import { backends } from '../helpers/store-backends.js';

const DAY = 86_400_000;
const NOW = 100 * DAY;

const row = (createdAt: number, over: Partial<NewEntry> = {}): NewEntry => ({
  account: 'default',
  createdAt,
  source: 'alert',
  action: 'powercycle',
  serverId: '100001',
  ip: null,
  value: null,
  alertname: 'BaremetalServerUnreachable',
  fingerprint: 'f1',
  startsAt: '2026-11-21T12:00:00Z',
  decision: 'executed',
  principal: 'alertmanager',
  reason: null,
  ...over,
});

const desired = (over: Partial<DesiredFirewall> = {}): DesiredFirewall => ({
  account: 'default',
  serverId: '100001',
  ip: '198.18.0.1',
  desiredState: '1',
  dueAt: NOW,
  pending: true,
  attempts: 0,
  appliedState: null,
  appliedAt: null,
  cooldownMs: 120_000,
  principal: null,
  ...over,
});

describe.each(backends())('the state store on $name', (backend) => {
  it.skipIf(backend.skip !== undefined)('inserts, completes, gets and lists rows newest first, filtered', async () => {
    const store = await (await backend.fresh()).open();
    // An alert's labels and status are kept (remediation replay).
    const alert = {
      labels: '{"alertname":"BaremetalServerUnreachable","server_id":"100001"}',
      alertStatus: 'firing',
    } as const;
    const a = await store.insert(row(NOW, { decision: 'executing', ...alert }));
    const b = await store.insert(
      row(NOW + 1, {
        account: 'reseller-eu',
        serverId: '7',
        message: 'm',
        principal: 'ops',
        reason: 'why',
        forced: true,
        // What the request was made with (an approval runs it as recorded).
        ruleIndex: 1,
        ruleDigest: '0123456789abcdef',
        cooldownMs: 21_600_000,
        holdMs: 300_000,
        requireOwnedIp: false,
        // What the outage gate read (JSON text in the row, an object read back).
        gate: {
          read: 'blocked',
          alert: {
            alertname: 'DatacenterOutage',
            fingerprint: '0a1b',
            labels: { alertname: 'DatacenterOutage', dc: 'fra1' },
          },
          more: 1,
        },
      }),
    );
    const c = await store.insert(row(NOW + 2, { action: 'firewall_state', ip: '198.18.0.1', value: '1' }));
    await store.complete(a, { decision: 'executed', upstreamOutcome: 'success', message: 'ok', at: NOW + 5 });
    expect(await store.get(a)).toEqual({
      ...row(NOW, alert),
      id: a,
      completedAt: NOW + 5,
      decision: 'executed',
      upstreamOutcome: 'success',
      message: 'ok',
      approver: null,
      approverReason: null,
      approvedAt: null,
      forced: false,
      ruleIndex: null,
      ruleDigest: null,
      cooldownMs: null,
      holdMs: null,
      requireOwnedIp: null,
      verifyWithinMs: null,
      ladderStep: null,
      verification: null,
      verifiedAt: null,
      verificationEvidence: null,
      gate: null,
    });
    expect(await store.get(999_999)).toBeUndefined();
    expect((await store.list({ limit: 10 })).map((e) => e.id)).toEqual([c, b, a]);
    expect((await store.list({ limit: 2 })).map((e) => e.id)).toEqual([c, b]);
    // `since`: created at or after that time (GET /api/v1/actions?since=, remediation replay).
    expect((await store.list({ since: NOW + 1, limit: 10 })).map((e) => e.id)).toEqual([c, b]);
    expect(await store.list({ since: NOW + 3, limit: 10 })).toEqual([]);
    expect((await store.list({ account: 'reseller-eu', limit: 10 })).map((e) => e.id)).toEqual([b]);
    expect((await store.list({ serverId: '100001', action: 'powercycle', limit: 10 })).map((e) => e.id)).toEqual([a]);
    expect(await store.list({ principal: 'ops', limit: 10 })).toMatchObject([
      {
        id: b,
        principal: 'ops',
        reason: 'why',
        forced: true,
        ruleIndex: 1,
        ruleDigest: '0123456789abcdef',
        gate: {
          read: 'blocked',
          alert: {
            alertname: 'DatacenterOutage',
            fingerprint: '0a1b',
            labels: { alertname: 'DatacenterOutage', dc: 'fra1' },
          },
          more: 1,
        },
        cooldownMs: 21_600_000,
        holdMs: 300_000,
        requireOwnedIp: false,
      },
    ]);
    expect(await store.get(c)).toMatchObject({ requireOwnedIp: null, cooldownMs: null });
    const d = await store.insert(row(NOW + 3, { requireOwnedIp: true, cooldownMs: 0, holdMs: 0, ruleIndex: 0 }));
    expect(await store.get(d)).toMatchObject({ requireOwnedIp: true, cooldownMs: 0, holdMs: 0, ruleIndex: 0 });
  });

  it.skipIf(backend.skip !== undefined)(
    'claims a delivery key once; a later look marks it seen; a reused operator key with another body is refused',
    async () => {
      const store = await (await backend.fresh()).open();
      const id = await store.insert(row(NOW));
      expect(await store.delivery('operator:k')).toBeUndefined();
      expect(await store.claimDelivery('operator:k', 'digest-a', id, NOW)).toBe(true);
      expect(await store.claimDelivery('operator:k', 'digest-b', id, NOW)).toBe(false);
      const req = powerRequest({ idempotencyKey: 'operator:k' });
      await expect(checkDelivery(store, req, 'digest-b', NOW)).rejects.toBeInstanceOf(IdempotencyMismatchError);
      expect(await checkDelivery(store, req, 'digest-a', NOW)).toEqual({
        decision: 'duplicate',
        message: `already acted on this delivery (journal entry ${id})`,
      });
      // Seen a day later: pruning before then keeps it.
      expect(await store.delivery('operator:k', NOW + DAY)).toEqual({
        actionId: id,
        digest: 'digest-a',
        createdAt: NOW,
      });
      await store.prune(NOW + DAY - 1, 100);
      expect(await store.delivery('operator:k')).toBeDefined();
      // Released only by the row that holds it; then claimed anew.
      expect(await store.releaseDelivery('operator:k', id + 1)).toBe(false);
      expect(await store.releaseDelivery('operator:k', id)).toBe(true);
      expect(await store.delivery('operator:k')).toBeUndefined();
      expect(await store.releaseDelivery('operator:k', id)).toBe(false);
      expect(await store.claimDelivery('operator:k', 'digest-a', id, NOW)).toBe(true);
    },
  );

  it.skipIf(backend.skip !== undefined)(
    'counts budget use per account and the last call per target, sent decisions only',
    async () => {
      const store = await (await backend.fresh()).open();
      for (const decision of [
        'executing',
        'executed',
        'failed',
        'unknown',
        'cooldown',
        'dry_run',
        'duplicate',
      ] as const)
        await store.insert(row(NOW, { decision }));
      await store.insert(row(NOW - 2 * 3_600_000));
      await store.insert(row(NOW + 10, { account: 'reseller-eu' }));
      await store.insert(row(NOW + 20, { action: 'firewall_state', ip: '198.18.0.1' }));
      await store.insert(row(NOW + 30, { action: 'firewall_state', ip: '198.18.0.2', decision: 'deferred' }));
      expect(await store.sentSince('default', NOW - 3_600_000)).toBe(5);
      expect(await store.sentSince('reseller-eu', 0)).toBe(1);
      expect(await store.sentSince('nobody', 0)).toBe(0);
      expect(await store.lastSent('default', 'powercycle', '100001', null)).toBe(NOW);
      expect(await store.lastSent('reseller-eu', 'powercycle', '100001', null)).toBe(NOW + 10);
      expect(await store.lastSent('default', 'firewall_state', '100001', '198.18.0.1')).toBe(NOW + 20);
      expect(await store.lastSent('default', 'firewall_state', '100001', '198.18.0.2')).toBeUndefined();
      expect(await store.lastSent('default', 'firewall_state', '100001', null)).toBeUndefined();
    },
  );

  it.skipIf(backend.skip !== undefined)('keeps desired state: save, due, pending, all, retire', async () => {
    const store = await (await backend.fresh()).open();
    await store.saveDesired(desired());
    await store.saveDesired(desired({ ip: '198.18.0.2', dueAt: NOW + 1000 }));
    await store.saveDesired(desired({ serverId: '100002', ip: '198.18.0.3', pending: false, appliedState: '1' }));
    await store.saveDesired(desired({ account: 'reseller-eu', serverId: '7' }));
    expect(await store.desired('default', '100001', '198.18.0.1')).toEqual(desired());
    expect(await store.desired('default', '100001', '198.18.0.9')).toBeUndefined();
    expect((await store.dueDesired('default', NOW)).map((d) => d.ip)).toEqual(['198.18.0.1']);
    expect((await store.dueDesired('default', NOW + 1000)).map((d) => d.ip)).toEqual(['198.18.0.1', '198.18.0.2']);
    expect(await store.pendingCount('default')).toBe(2);
    expect(await store.pendingCount('reseller-eu')).toBe(1);
    // The latest wins.
    await store.saveDesired(desired({ desiredState: '0', attempts: 2, appliedState: '1', appliedAt: NOW - 5 }));
    expect(await store.desired('default', '100001', '198.18.0.1')).toMatchObject({
      desiredState: '0',
      attempts: 2,
      appliedState: '1',
      appliedAt: NOW - 5,
    });
    expect((await store.allDesired('default')).length).toBe(3);
    // 100002 leaves the server list: marked, then retired a day later; the other account is untouched.
    const listed = (id: string) => id !== '100002';
    expect(await store.retireMissing('default', listed, NOW, NOW - DAY)).toEqual([]);
    expect(await store.retireMissing('default', listed, NOW + DAY, NOW + 1)).toEqual([
      { serverId: '100002', ip: '198.18.0.3' },
    ]);
    // A server back in the list loses its mark.
    await store.saveDesired(desired({ serverId: '100003', ip: '198.18.0.4' }));
    await store.retireMissing('default', (id) => id !== '100003', NOW, 0);
    await store.retireMissing('default', () => true, NOW + 1, 0);
    expect(await store.retireMissing('default', () => true, NOW + 2 * DAY, NOW + DAY)).toEqual([]);
    expect((await store.allDesired('default')).map((d) => d.serverId).sort()).toEqual(['100001', '100001', '100003']);
    expect(await store.allDesired('reseller-eu')).toHaveLength(1);
  });

  it.skipIf(backend.skip !== undefined)(
    'retires desired state of an IP its server no longer owns, the server staying listed',
    async () => {
      const store = await (await backend.fresh()).open();
      await store.saveDesired(desired());
      await store.saveDesired(desired({ ip: '198.18.0.2' }));
      // 198.18.0.2 moved to another server; 100001 stays listed and keeps 198.18.0.1.
      let owned = (id: string, ip: string) => id === '100001' && ip === '198.18.0.1';
      expect(await store.retireMissing('default', owned, NOW, NOW - DAY)).toEqual([]);
      expect(await store.retireMissing('default', owned, NOW + DAY - 1, NOW - 1)).toEqual([]);
      expect(await store.retireMissing('default', owned, NOW + DAY, NOW + 1)).toEqual([
        { serverId: '100001', ip: '198.18.0.2' },
      ]);
      expect((await store.allDesired('default')).map((d) => d.ip)).toEqual(['198.18.0.1']);
      // An IP that comes back to its server before the window ends loses its mark.
      await store.saveDesired(desired({ ip: '198.18.0.3' }));
      await store.retireMissing('default', owned, NOW, 0);
      owned = (id: string) => id === '100001';
      await store.retireMissing('default', owned, NOW + 1, 0);
      expect(await store.retireMissing('default', owned, NOW + 2 * DAY, NOW + DAY)).toEqual([]);
      expect((await store.allDesired('default')).map((d) => d.ip).sort()).toEqual(['198.18.0.1', '198.18.0.3']);
    },
  );

  it.skipIf(backend.skip !== undefined)(
    'prunes old rows in batches, never a running one or one a recent key points to',
    async () => {
      const store = await (await backend.fresh()).open();
      const old = NOW - 31 * DAY;
      for (let i = 0; i < 7; i++) await store.insert(row(old + i, { serverId: 'old' }));
      const keyed = await store.insert(row(old, { serverId: 'keyed' }));
      await store.claimDelivery('alert:recent', 'd', keyed, old);
      await store.delivery('alert:recent', NOW - DAY);
      const stale = await store.insert(row(old, { serverId: 'stale' }));
      await store.claimDelivery('alert:stale', 'd', stale, old);
      await store.insert(row(old, { serverId: 'running', decision: 'executing' }));
      await store.insert(row(NOW - DAY, { serverId: 'recent' }));
      const before = NOW - 30 * DAY;
      const batches: number[] = [];
      for (let i = 0; i < 10; i++) {
        batches.push(await store.prune(before, 5));
        if (batches.at(-1)! < 5) break;
      }
      expect(batches).toEqual([5, 3]);
      expect((await store.list({ limit: 20 })).map((e) => e.serverId).sort()).toEqual(['keyed', 'recent', 'running']);
      expect(await store.delivery('alert:stale')).toBeUndefined();
    },
  );

  it.skipIf(backend.skip !== undefined)(
    'recovers rows left executing as unknown; counts decisions and the last failures per account',
    async () => {
      const store = await (await backend.fresh()).open();
      const running = await store.insert(row(NOW, { decision: 'executing' }));
      await store.insert(row(NOW, { account: 'reseller-eu', decision: 'executing' }));
      await store.insert(row(NOW + 1, { decision: 'failed' }));
      await store.insert(row(NOW + 2, { decision: 'failed', action: 'poweroff' }));
      expect(await store.decisionCounts('default')).toEqual(
        expect.arrayContaining([
          { action: 'powercycle', decision: 'failed', count: 1 },
          { action: 'poweroff', decision: 'failed', count: 1 },
        ]),
      );
      // Shared by replicas: a row younger than the longest call may be another replica's call in flight.
      const inFlight = await store.insert(row(NOW + 50, { decision: 'executing' }));
      const recovered = await store.recoverInterrupted('default', NOW + 100, NOW + 50);
      expect(recovered.map((e) => [e.id, e.decision, e.upstreamOutcome, e.completedAt])).toEqual([
        [running, 'unknown', 'interrupted', NOW + 100],
      ]);
      expect((await store.get(inFlight))?.decision).toBe('executing');
      await store.complete(inFlight, { decision: 'executed', upstreamOutcome: 'success', message: 'ok', at: NOW + 60 });
      expect(await store.recoverInterrupted('default', NOW + 200)).toEqual([]);
      expect((await store.decisionCounts('default')).sort((x, y) => x.action.localeCompare(y.action))).toEqual(
        expect.arrayContaining([
          { action: 'powercycle', decision: 'unknown', count: 1 },
          { action: 'powercycle', decision: 'failed', count: 1 },
        ]),
      );
      expect(await store.lastFailures('default')).toEqual(
        expect.arrayContaining([
          { action: 'powercycle', decision: 'unknown', at: NOW + 100 },
          { action: 'powercycle', decision: 'failed', at: NOW + 1 },
          { action: 'poweroff', decision: 'failed', at: NOW + 2 },
        ]),
      );
      expect(await store.lastFailures('reseller-eu')).toEqual([]);
    },
  );

  it.skipIf(backend.skip !== undefined)('rolls a transaction back when its body throws', async () => {
    const store = await (await backend.fresh()).open();
    await expect(
      store.transaction('default', async (tx) => {
        const id = await tx.insert(row(NOW));
        await tx.claimDelivery('alert:x', 'd', id, NOW);
        throw new Error('a guard failed');
      }),
    ).rejects.toThrow('a guard failed');
    expect(await store.list({ limit: 5 })).toEqual([]);
    expect(await store.delivery('alert:x')).toBeUndefined();
    expect(await store.transaction('default', async (tx) => tx.insert(row(NOW)))).toBeGreaterThan(0);
  });

  it.skipIf(backend.skip !== undefined)(
    'serializes one account’s transactions across two stores: check-then-insert never overshoots',
    async () => {
      const db = await backend.fresh();
      const [a, b] = [await db.open(), await db.open()];
      // Each transaction inserts only while fewer than 3 rows exist: 20 of them, alternating stores.
      const attempts = Array.from({ length: 20 }, (_, i) =>
        (i % 2 ? a : b).transaction('default', async (tx) => {
          if ((await tx.sentSince('default', 0)) >= 3) return false;
          // More round trips between the check and the write: without the serialization, others check meanwhile.
          for (let i = 0; i < 3; i++) await tx.lastSent('default', 'powercycle', '100001', null);
          await tx.insert(row(NOW));
          return true;
        }),
      );
      expect((await Promise.all(attempts)).filter(Boolean)).toHaveLength(3);
      expect(await a.sentSince('default', 0)).toBe(3);
    },
  );

  it.skipIf(backend.skip !== undefined)(
    'saves and loads the attack-event ids per account; load changes nothing',
    async () => {
      const db = await backend.fresh();
      const store = await db.open();
      const ledger = store.eventLedger('default');
      expect(await ledger.load()).toEqual({ services: new Map() });
      await ledger.save(
        new Map([
          ['dedicated/100001', new Set(['e1', 'e2'])],
          ['vps/7', new Set<string>()],
        ]),
      );
      await store.eventLedger('reseller-eu').save(new Map([['dedicated/9', new Set(['x'])]]));
      const expected = { services: new Map([['dedicated/100001', new Set(['e1', 'e2'])]]) };
      expect(await ledger.load()).toEqual(expected);
      expect(await ledger.load()).toEqual(expected);
      // Replaced, not merged.
      await ledger.save(new Map([['dedicated/100002', new Set(['e3'])]]));
      expect(await store.eventLedger('default').load()).toEqual({
        services: new Map([['dedicated/100002', new Set(['e3'])]]),
      });
      expect(await store.eventLedger('reseller-eu').load()).toEqual({
        services: new Map([['dedicated/9', new Set(['x'])]]),
      });
    },
  );

  it.skipIf(backend.skip !== undefined)('reopens a database (migrations applied once) with its rows', async () => {
    const db = await backend.fresh();
    const first = await db.open();
    const id = await first.insert(row(NOW));
    await first.saveDesired(desired());
    await first.close();
    const again = await db.open();
    expect(again.unavailable).toBeUndefined();
    expect(again.healthy()).toBe(true);
    expect(await again.get(id)).toMatchObject({ id, serverId: '100001' });
    expect(await again.desired('default', '100001', '198.18.0.1')).toEqual(desired());
    expect(await again.insert(row(NOW))).toBeGreaterThan(id);
    expect(db.lines.filter((l) => l.includes('"level":"error"'))).toEqual([]);
  });

  it.skipIf(backend.skip !== undefined)('a closed store fails with JournalError (503)', async () => {
    const store = await (await backend.fresh()).open();
    await store.close();
    await expect(store.list({ limit: 1 })).rejects.toBeInstanceOf(JournalError);
    await expect(store.transaction('default', async (tx) => tx.insert(row(NOW)))).rejects.toBeInstanceOf(JournalError);
  });
});
