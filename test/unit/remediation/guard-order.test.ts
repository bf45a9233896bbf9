/**
 * One guard list (decide.ts GUARDS), walked the same way by every path that decides (issue 39): an alert's
 * request, an operator's, an approval's execution, a firewall change. A recording copy of the list is planted
 * in the engine; each path's walk is the list's order, filtered by the actions a guard applies to. A guard
 * added to the list is one entry, and every path runs it.
 */
import { describe, expect, it } from 'vitest';
import { GUARDS, type Guard } from '../../../src/remediation/decide.js';
import { engineHarness, firewallRequest, powerRequest } from '../../helpers/remediation.js';

/** GUARDS with every check recorded in `walked`, and `extra` inserted before the guard named `before`. */
function recording(walked: string[], extra?: { guard: Guard; before: string }): Guard[] {
  const list = [...GUARDS];
  if (extra)
    list.splice(
      list.findIndex((g) => g.name === extra.before),
      0,
      extra.guard,
    );
  return list.map((g) => ({
    ...g,
    check: (ctx) => {
      walked.push(g.name);
      return g.check(ctx);
    },
  }));
}

const POWER_WALK = [
  'delivery',
  'target',
  'attack',
  'outage_gate',
  'circuit_breaker',
  'cooldown',
  'cap_per_server',
  'dry_run',
  'budget',
  'approval',
];

/**
 * An alert's request (a ladder's step too) first asks whether its episode resolved, and after its delivery
 * whether an approver's denial of its labels still holds.
 */
const ALERT_POWER_WALK = ['episode', 'delivery', 'denial', ...POWER_WALK.slice(1)];

const FIREWALL_WALK = [
  'delivery',
  'target',
  'approval_of_desired_state',
  'desired_state',
  'cooldown',
  'dry_run',
  'budget',
  'approval',
];

describe('every path walks GUARDS in its order', () => {
  it('an alert, an operator, an approval: power actions walk every guard', async () => {
    const walked: string[] = [];
    const h = await engineHarness({}, ':memory:', 2000, { guards: recording(walked) });
    const alert = await h.engine.request(
      powerRequest({
        source: 'alert',
        principal: 'alertmanager',
        idempotencyKey: 'fp:1',
        alert: { alertname: 'BaremetalServerUnreachable', fingerprint: 'fp', startsAt: '2026-11-21T11:59:00Z' },
      }),
    );
    expect([alert.decision, walked.splice(0)]).toEqual(['executed', ALERT_POWER_WALK]);
    const operator = await h.engine.request(powerRequest({ serverId: '100002', action: 'poweroff' }));
    expect([operator.decision, walked.splice(0)]).toEqual(['executed', POWER_WALK]);
    const asked = await h.engine.request(powerRequest({ serverId: '100003', requireApproval: true }));
    expect([asked.decision, walked.splice(0)]).toEqual(['awaiting_approval', POWER_WALK]);
    const approved = await h.engine.approve((await h.journal.get(asked.id))!, 'bob');
    expect([approved.decision, walked.splice(0)]).toEqual(['executed', POWER_WALK]);
  });

  it('a firewall change walks the guards that apply to it, and so does the change when it comes due', async () => {
    const walked: string[] = [];
    const h = await engineHarness({}, ':memory:', 2000, { guards: recording(walked) });
    const decided = await h.engine.request(firewallRequest('1', { idempotencyKey: 'fw:1' }));
    expect(decided.decision).toBe('executed');
    expect(walked.splice(0)).toEqual(FIREWALL_WALK);
    // Back to 0 inside the API's 2-minute window: the cooldown guard defers it (the guards after it still run).
    h.clock.now += 30_000;
    const deferred = await h.engine.request(firewallRequest('0', { idempotencyKey: 'fw:2' }));
    expect(deferred).toMatchObject({ decision: 'deferred' });
    expect(deferred.message).toContain(`due at ${new Date(h.clock.now + 90_000).toISOString()}`);
    expect(walked.splice(0)).toEqual(FIREWALL_WALK);
    // Not due yet: nothing walks. Due: the change walks the list again, but for its target (judged when asked).
    await h.engine.tick();
    expect(walked.splice(0)).toEqual([]);
    h.clock.now += 90_000;
    await h.engine.tick();
    expect(walked.splice(0)).toEqual(FIREWALL_WALK.filter((g) => g !== 'target'));
    expect(h.sim.callsTo('/api/v1/dedicated/firewall/state')).toHaveLength(2);
    const rows = await h.journal.list({ account: 'default', action: 'firewall_state', limit: 10 });
    expect(rows.map((r) => [r.source, r.decision])).toEqual([
      ['pending', 'executed'],
      ['alert', 'deferred'],
      ['alert', 'executed'],
    ]);
  });

  it('a due firewall change the budget holds back is deferred by the one budget guard, then sent', async () => {
    const walked: string[] = [];
    const h = await engineHarness({ budgetPerHour: 1 }, ':memory:', 2000, { guards: recording(walked) });
    expect((await h.engine.request(powerRequest({ serverId: '100002' }))).decision).toBe('executed');
    const deferred = await h.engine.request(firewallRequest('1', { idempotencyKey: 'fw:1' }));
    expect(deferred).toMatchObject({
      decision: 'deferred',
      message: 'state 1 pending: budget used up; retried when it allows',
    });
    expect((await h.journal.desired('default', '100001', '198.18.0.1'))?.dueAt).toBe(h.clock.now + 60_000);
    walked.splice(0);
    // The power cycle is out of the rolling hour: the change is sent.
    h.clock.now += 3_601_000;
    await h.engine.tick();
    expect(walked).toEqual(FIREWALL_WALK.filter((g) => g !== 'target'));
    expect(h.sim.callsTo('/api/v1/dedicated/firewall/state')).toHaveLength(1);
  });

  it('a guard added to the list runs on every path, and the guards after it do not once it answers', async () => {
    const walked: string[] = [];
    const planted: Guard = {
      name: 'maintenance_window',
      applies: (req) => req.serverId === '100002',
      check: () => ({ decision: 'denied_budget', message: 'server 100002 is in its maintenance window', claim: false }),
    };
    const h = await engineHarness({}, ':memory:', 2000, {
      guards: recording(walked, { guard: planted, before: 'cooldown' }),
    });
    const denied = await h.engine.request(powerRequest({ serverId: '100002' }));
    expect(denied).toMatchObject({ decision: 'denied_budget', message: 'server 100002 is in its maintenance window' });
    expect(walked.splice(0)).toEqual([
      'delivery',
      'target',
      'attack',
      'outage_gate',
      'circuit_breaker',
      'maintenance_window',
    ]);
    expect(h.sim.callsTo('/api/v1/dedicated/powercycle')).toHaveLength(0);
    const other = await h.engine.request(powerRequest({ serverId: '100001' }));
    expect([other.decision, walked]).toEqual(['executed', POWER_WALK]);
  });
});
