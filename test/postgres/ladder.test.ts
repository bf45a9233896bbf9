/**
 * The escalation ladder (issue 41), on both state-store backends: an ineffective step starts the next as a new
 * request through every guard; after the last the episode is escalated, naming the rule and the steps; a step
 * that helps ends the ladder; a step a guard denies stops it with that decision.
 */
import { describe, expect, it } from 'vitest';
import type { LadderStep, Principal } from '../../src/config/types.js';
import { CLIMB_GRACE_MS } from '../../src/remediation/ladder.js';
import { makeRequest } from '../../src/remediation/request.js';
import type { StateStore } from '../../src/store/store.js';
import { seriesValue } from '../helpers/metrics.js';
import { engineHarness, failingStore, remediationApp, rule } from '../helpers/remediation.js';
import { backends } from '../helpers/store-backends.js';

const TOKEN = 'alertmanager-token-0123456789abcdef';
const PRINCIPALS: Principal[] = [{ name: 'alertmanager', bearerToken: TOKEN, roles: ['webhook'] }];
const MIN = 60_000;
const POWERCYCLE = '/api/v1/dedicated/powercycle';
const step = (verifyMin: number, cooldownMin: number): LadderStep => ({
  action: 'powercycle',
  verifyWithinMs: verifyMin * MIN,
  requireApproval: false,
  cooldownMs: cooldownMin * MIN,
});
/** A ladder as the loader builds it: the first step's settings on the rule. */
const ladder = (steps: LadderStep[]) =>
  rule({
    alertname: 'ServerDown',
    action: 'powercycle',
    verifyWithinMs: steps[0]!.verifyWithinMs,
    cooldownMs: steps[0]!.cooldownMs,
    steps,
  });

for (const backend of backends()) {
  describe.skipIf(backend.skip)(`the escalation ladder (${backend.name})`, () => {
    /** A ladder of `steps` on a fresh journal, its store wrapped by `wrap` (e.g. `failingStore`). */
    async function setup(steps: LadderStep[], wrap: (store: StateStore) => StateStore = (store) => store) {
      const db = await backend.fresh();
      const h = await engineHarness({ principals: PRINCIPALS, rules: [ladder(steps)] }, wrap(await db.open()));
      const app = remediationApp(h);
      const deliver = async (status: 'firing' | 'resolved') => {
        const alert = {
          status,
          labels: { alertname: 'ServerDown', server_id: '100002' },
          startsAt: '2026-11-21T11:58:00Z',
          fingerprint: 'fp',
        };
        const res = await app.inject({
          method: 'POST',
          url: '/api/v1/alertmanager',
          headers: { authorization: `Bearer ${TOKEN}` },
          payload: { version: '4', status, alerts: [alert] },
        });
        expect(res.statusCode).toBe(200);
        return res.json().results as Array<{ id: number; decision: string }>;
      };
      const rows = async () =>
        (await h.journal.list({ limit: 100 })).reverse().map((e) => [e.ladderStep, e.decision, e.verification]);
      return { h, deliver, rows };
    }

    it('steps on an ineffective outcome and escalates after the last step, naming the rule and the steps', async () => {
      const { h, deliver, rows } = await setup([step(10, 30), step(20, 10)]);
      expect((await deliver('firing'))[0]!.decision).toBe('executed');
      h.clock.now += 11 * MIN;
      await h.engine.tick();
      expect(await rows()).toEqual([
        [0, 'executed', 'ineffective'],
        [1, 'executed', 'verifying'],
      ]);
      expect(h.sim.callsTo(POWERCYCLE)).toHaveLength(2);
      const second = (await h.journal.list({ limit: 1 }))[0]!;
      expect(second.reason).toMatch(/^step 2 of 2: step 1 \(powercycle, journal entry \d+\) was ineffective$/);
      h.clock.now += 21 * MIN;
      await h.engine.tick();
      expect(await rows()).toEqual([
        [0, 'executed', 'ineffective'],
        [1, 'executed', 'ineffective'],
        [1, 'escalated', null],
      ]);
      expect((await h.journal.list({ limit: 1 }))[0]!.message).toMatch(
        /^the ladder of remediation\.rules\[0\] \(ServerDown\): every step was ineffective \(powercycle → powercycle; the last, journal entry \d+\): nothing more is sent, a person must look at it$/,
      );
      expect(
        await seriesValue(h.registry, 'baremetal_action_requests_total', {
          action: 'powercycle',
          decision: 'escalated',
        }),
      ).toBe(1);
      expect(h.sim.callsTo(POWERCYCLE)).toHaveLength(2);
      // Nothing climbs further.
      h.clock.now += 60 * MIN;
      await h.engine.tick();
      expect(await rows()).toHaveLength(3);
    });

    it('ends when a step helps', async () => {
      const { h, deliver, rows } = await setup([step(10, 30), step(20, 10)]);
      await deliver('firing');
      h.clock.now += 11 * MIN;
      await h.engine.tick();
      h.clock.now += 5 * MIN;
      await deliver('resolved');
      h.clock.now += 60 * MIN;
      await h.engine.tick();
      // The resolution is journaled (issue 49): nothing more is sent for the episode.
      expect(await rows()).toEqual([
        [0, 'executed', 'ineffective'],
        [1, 'executed', 'verified'],
        [null, 'resolved', null],
      ]);
    });

    it('asks for a step that expired unapproved again on the next delivery, as a plain rule does', async () => {
      const { h, deliver, rows } = await setup([step(10, 30), { ...step(20, 5), requireApproval: true }]);
      expect((await deliver('firing'))[0]!.decision).toBe('executed');
      h.clock.now += 11 * MIN;
      await h.engine.tick();
      // approval_timeout is 15 minutes in the harness: the second step expires.
      h.clock.now += 16 * MIN;
      await h.engine.tick();
      expect(await rows()).toEqual([
        [0, 'executed', 'ineffective'],
        [1, 'expired', null],
      ]);
      // Alertmanager repeats the still-firing alert: the second step is asked for again, not swallowed.
      const again = (await deliver('firing'))[0]!;
      expect(again.decision).toBe('awaiting_approval');
      const row = await h.journal.get(again.id);
      expect(row).toMatchObject({ ladderStep: 1, action: 'powercycle' });
      expect(row!.reason).toMatch(/^step 2 of 2: step 1 \(powercycle, journal entry \d+\) was ineffective$/);
      // A repeat while it awaits approval is a duplicate: that request is still being handled.
      expect((await deliver('firing'))[0]!.decision).toBe('duplicate');
      expect(await rows()).toEqual([
        [0, 'executed', 'ineffective'],
        [1, 'expired', null],
        [1, 'awaiting_approval', null],
        [0, 'duplicate', null],
      ]);
      // The re-asked step expires too, after that repeat: the next delivery asks again (the repeat's
      // `duplicate` row is no step of the ladder, so it does not hide the expiry).
      h.clock.now += 16 * MIN;
      await h.engine.tick();
      expect((await deliver('firing'))[0]!.decision).toBe('awaiting_approval');
      expect(h.sim.callsTo(POWERCYCLE)).toHaveLength(1);
    });

    it('stops with the decision of a guard that denies a step', async () => {
      // The second step's cooldown (30m) is not over 11 minutes after the first call.
      const { h, deliver, rows } = await setup([step(10, 30), step(20, 30)]);
      await deliver('firing');
      h.clock.now += 11 * MIN;
      await h.engine.tick();
      h.clock.now += 60 * MIN;
      await h.engine.tick();
      expect(await rows()).toEqual([
        [0, 'executed', 'ineffective'],
        [1, 'cooldown', null],
      ]);
      expect(h.sim.callsTo(POWERCYCLE)).toHaveLength(1);
    });

    /**
     * A ladder whose climb is lost after its step was settled `ineffective`: the journal fails on the climb's
     * transaction (a next step, or the escalation) in that tick, once, as a stop or a lost lead between the two
     * would leave it.
     */
    async function lostClimb(steps: LadderStep[]) {
      let failClimb = false;
      const { h, deliver, rows } = await setup(steps, (inner) => failingStore(inner, ['transaction'], () => failClimb));
      expect((await deliver('firing'))[0]!.decision).toBe('executed');
      h.clock.now += 11 * MIN;
      failClimb = true;
      await h.engine.tick();
      failClimb = false;
      // Settled, and nothing climbed: the climb is owed.
      expect(await rows()).toEqual([[0, 'executed', 'ineffective']]);
      return { h, deliver, rows };
    }

    /** Another replica's engine on `h`'s journal, leading from `at` (ms; its first tick run). */
    async function nextLeader(h: Awaited<ReturnType<typeof setup>>['h'], at: number) {
      const next = await engineHarness({ principals: PRINCIPALS, rules: h.config.rules }, h.journal);
      next.clock.now = at;
      next.engine.start(3_600_000);
      await next.engine.tick();
      return next;
    }

    /** Ticks `next` at `at` (ms) and expects the episode handed to a person, nothing sent. */
    async function handedOver(next: Awaited<ReturnType<typeof nextLeader>>, at: number, rows: () => Promise<unknown>) {
      next.clock.now = at;
      await next.engine.tick();
      expect(await rows()).toEqual([
        [0, 'executed', 'ineffective'],
        [0, 'escalated', null],
      ]);
      await next.engine.stop();
      expect(next.sim.calls).toEqual([]);
    }

    it('hands a lost climb to a person at a tick past the grace, and sends nothing late', async () => {
      const { h, deliver, rows } = await lostClimb([step(10, 5), step(20, 10)]);
      const first = (await h.journal.list({ limit: 1 }))[0]!;
      // Within the grace nothing is handed over; a repeat of the alert is a duplicate.
      h.clock.now += CLIMB_GRACE_MS / 2;
      await h.engine.tick();
      expect((await deliver('firing'))[0]!.decision).toBe('duplicate');
      h.clock.now += CLIMB_GRACE_MS;
      await h.engine.tick();
      const row = (await h.journal.list({ limit: 1 }))[0]!;
      expect(row).toMatchObject({ ladderStep: 0, decision: 'escalated', serverId: '100002' });
      expect(row.message).toMatch(
        new RegExp(
          `^the ladder of remediation\\.rules\\[0\\] \\(ServerDown\\): step 1 \\(powercycle, journal entry ${first.id}\\) was ineffective at \\S+ and what follows it was not decided by \\S+ .*: nothing is sent so late, a person must look at it$`,
        ),
      );
      const warned = h.log.lines.map((l) => JSON.parse(l) as { level: string; msg: string; cause?: string });
      expect(warned.filter((l) => l.level === 'warn' && l.msg.startsWith('remediation escalated: '))).toEqual([
        expect.objectContaining({ cause: 'a lost climb', msg: `remediation escalated: ${row.message}` }),
      ]);
      expect(
        await seriesValue(h.registry, 'baremetal_action_requests_total', {
          action: 'powercycle',
          decision: 'escalated',
        }),
      ).toBe(1);
      // Handed over once; no late step, whatever comes after.
      h.clock.now += 30 * MIN;
      await h.engine.tick();
      expect((await deliver('firing'))[0]!.decision).toBe('duplicate');
      expect(h.sim.callsTo(POWERCYCLE)).toHaveLength(1);
      expect(await rows()).toEqual([
        [0, 'executed', 'ineffective'],
        [0, 'duplicate', null],
        [0, 'escalated', null],
        [0, 'duplicate', null],
      ]);
    });

    it('hands a lost escalation after the last step to a person too', async () => {
      const { h, rows } = await lostClimb([step(10, 5)]);
      h.clock.now += 2 * CLIMB_GRACE_MS;
      await h.engine.tick();
      expect(h.sim.callsTo(POWERCYCLE)).toHaveLength(1);
      expect(await rows()).toEqual([
        [0, 'executed', 'ineffective'],
        [0, 'escalated', null],
      ]);
    });

    it('hands over the marks the replica before it left, a grace after it starts leading', async () => {
      const { h, rows } = await lostClimb([step(10, 5), step(20, 10)]);
      // Another replica (a restart) on the same journal, long after: it knows nothing of the failed climb but its
      // mark, and gives the one before it a grace from its own start (its climb could still be deciding).
      const next = await nextLeader(h, h.clock.now + 30 * MIN);
      expect(await rows()).toEqual([[0, 'executed', 'ineffective']]);
      await handedOver(next, next.clock.now + CLIMB_GRACE_MS + 1000, rows);
      expect(h.sim.callsTo(POWERCYCLE)).toHaveLength(1);
    });

    it('hands over a mark a replica that led before left after this one started leading', async () => {
      let failClimb = false;
      const { h, deliver, rows } = await setup([step(10, 5), step(20, 10)], (inner) =>
        failingStore(inner, ['transaction'], () => failClimb),
      );
      expect((await deliver('firing'))[0]!.decision).toBe('executed');
      // The new leader starts and reads the marks: none yet.
      const next = await nextLeader(h, h.clock.now);
      // The replica that led before settles the step late, and its climb fails.
      h.clock.now += 11 * MIN;
      failClimb = true;
      await h.engine.tick();
      failClimb = false;
      expect(await rows()).toEqual([[0, 'executed', 'ineffective']]);
      // The new leader reads the marks made lately again, and hands the episode over past the grace.
      await handedOver(next, h.clock.now + CLIMB_GRACE_MS + 1000, rows);
      expect(h.sim.callsTo(POWERCYCLE)).toHaveLength(1);
    });

    it('hands a lost climb over when the journal cannot tell whether its ladder went on (200 newer rows)', async () => {
      const { h, deliver, rows } = await lostClimb([step(10, 5), step(20, 10)]);
      // Alertmanager repeats the still-firing alert (two peers, two replicas): the server's newer rows pile up.
      for (let i = 0; i < 200; i++) expect((await deliver('firing'))[0]!.decision).toBe('duplicate');
      h.clock.now += 2 * CLIMB_GRACE_MS;
      await h.engine.tick();
      expect((await rows()).filter(([, decision]) => decision === 'escalated')).toEqual([[0, 'escalated', null]]);
      expect(h.sim.callsTo(POWERCYCLE)).toHaveLength(1);
    });

    it('asks for nothing when the episode of a lost climb resolved: no hand-over, a firing delivery after is resolved', async () => {
      const { h, deliver, rows } = await lostClimb([step(10, 5), step(20, 10)]);
      await deliver('resolved');
      h.clock.now += 2 * CLIMB_GRACE_MS;
      await h.engine.tick();
      // Out of order: the firing delivery comes after the resolved one.
      expect((await deliver('firing'))[0]!.decision).toBe('resolved');
      expect(h.sim.callsTo(POWERCYCLE)).toHaveLength(1);
      expect((await rows()).filter(([, decision]) => decision === 'escalated')).toEqual([]);
    });

    it('takes no absence as a lost climb: a ladder whose later rows the journal pruned does not run again', async () => {
      const { h, deliver, rows } = await setup([step(10, 5), step(20, 10)]);
      expect((await deliver('firing'))[0]!.decision).toBe('executed');
      h.clock.now += 11 * MIN;
      await h.engine.tick();
      h.clock.now += 21 * MIN;
      await h.engine.tick();
      expect(await rows()).toEqual([
        [0, 'executed', 'ineffective'],
        [1, 'executed', 'ineffective'],
        [1, 'escalated', null],
      ]);
      // Hours of repeats keep the first step's delivery key (and so its row); the later rows age out.
      for (let hour = 1; hour <= 3; hour++) {
        h.clock.now += 60 * MIN;
        expect((await deliver('firing'))[0]!.decision).toBe('duplicate');
      }
      await h.journal.prune(h.clock.now - 90 * MIN, 1000);
      expect((await rows()).slice(0, 1)).toEqual([[0, 'executed', 'ineffective']]);
      expect((await rows()).filter(([step]) => step === 1)).toEqual([]);
      h.clock.now += 60 * MIN;
      await h.engine.tick();
      expect((await deliver('firing'))[0]!.decision).toBe('duplicate');
      expect(h.sim.callsTo(POWERCYCLE)).toHaveLength(2);
      expect((await rows()).filter(([, decision]) => decision === 'escalated')).toEqual([]);
    });

    it('decides a climb once: a guard that denied it stopped the ladder, a second climb of the step is a duplicate', async () => {
      // The second step's cooldown (30m) is not over 11 minutes after the first call: the tick's climb is denied.
      const steps = [step(10, 30), step(20, 30)];
      const { h, deliver, rows } = await setup(steps);
      expect((await deliver('firing'))[0]!.decision).toBe('executed');
      h.clock.now += 11 * MIN;
      await h.engine.tick();
      const first = (await h.journal.list({ limit: 2 }))[1]!;
      expect(await rows()).toEqual([
        [0, 'executed', 'ineffective'],
        [1, 'cooldown', null],
      ]);
      // Past the cooldown, the same climb asked again (a second replica's tick): decided already.
      h.clock.now += 60 * MIN;
      const again = await h.engine.request(makeRequest({ kind: 'ladder', row: first, steps, climb: true }));
      expect(again.decision).toBe('duplicate');
      // Nor is the denied climb taken for a lost one.
      await h.engine.tick();
      expect((await deliver('firing'))[0]!.decision).toBe('duplicate');
      expect((await rows()).filter(([, decision]) => decision === 'escalated')).toEqual([]);
      expect(h.sim.callsTo(POWERCYCLE)).toHaveLength(1);
    });

    it('climbs every ladder whose step it settled though settling another failed on the journal', async () => {
      const db = await backend.fresh();
      const inner = await db.open();
      // The journal fails once, on the second verification a tick settles.
      let failSecond = false;
      const store = failingStore(inner, ['settleVerification'], (call) => failSecond && call === 2);
      const steps = [step(10, 1), { ...step(20, 1), action: 'poweroff' as const }];
      const h = await engineHarness({ principals: PRINCIPALS, rules: [ladder(steps)] }, store);
      const app = remediationApp(h);
      const t0 = h.clock.now;
      for (const serverId of ['100001', '100002']) {
        const alert = {
          status: 'firing',
          labels: { alertname: 'ServerDown', server_id: serverId },
          startsAt: new Date(t0).toISOString(),
          fingerprint: `fp-${serverId}`,
        };
        const res = await app.inject({
          method: 'POST',
          url: '/api/v1/alertmanager',
          headers: { authorization: `Bearer ${TOKEN}` },
          payload: { version: '4', status: 'firing', alerts: [alert] },
        });
        expect(res.json().results.map((r: { decision: string }) => r.decision)).toEqual(['executed']);
      }
      failSecond = true;
      h.clock.now = t0 + 11 * MIN;
      await h.engine.tick();
      failSecond = false;
      const rows = async () =>
        (await h.journal.list({ limit: 100 }))
          .reverse()
          .map((e) => [e.serverId, e.ladderStep, e.action, e.decision, e.verification]);
      // The first settled episode climbed in that tick; the second is still verifying.
      expect(await rows()).toEqual([
        ['100001', 0, 'powercycle', 'executed', 'ineffective'],
        ['100002', 0, 'powercycle', 'executed', 'verifying'],
        ['100001', 1, 'poweroff', 'executed', 'verifying'],
      ]);
      // The next tick settles the second, and it climbs too.
      h.clock.now = t0 + 12 * MIN;
      await h.engine.tick();
      expect(await rows()).toEqual([
        ['100001', 0, 'powercycle', 'executed', 'ineffective'],
        ['100002', 0, 'powercycle', 'executed', 'ineffective'],
        ['100001', 1, 'poweroff', 'executed', 'verifying'],
        ['100002', 1, 'poweroff', 'executed', 'verifying'],
      ]);
    });
  });
}
