/**
 * A resolved episode (issue 49, remediation/episode.ts), on both state-store backends, through the webhook and
 * approval routes: a resolved delivery settles only the episode whose account, fingerprint, start and labels
 * all match; it withdraws what awaits approval (a later approval is a 409 naming the resolution, nothing sent);
 * one that arrives while the call is in flight is kept and settles the verification when the call completes
 * (`verified`, no next ladder step); a ladder never climbs for a resolved episode.
 */
import { describe, expect, it } from 'vitest';
import type { LadderStep, Principal, RemediationRule } from '../../src/config/types.js';
import { eventually } from '../helpers/processes.js';
import { engineHarness, remediationApp, rule } from '../helpers/remediation.js';
import { backends } from '../helpers/store-backends.js';

const token = (name: string) => `${name}-token-0123456789abcdef`;
const bearer = (name: string) => ({ authorization: `Bearer ${token(name)}` });
const PRINCIPALS: Principal[] = [
  { name: 'alertmanager', bearerToken: token('alertmanager'), roles: ['webhook'] },
  { name: 'bob', bearerToken: token('bob'), roles: ['operator'] },
];
const POWERCYCLE = '/api/v1/dedicated/powercycle';
const MIN = 60_000;
const STARTS_AT = '2026-11-21T11:58:00Z';
const step = (verifyMin: number, requireApproval = false): LadderStep => ({
  action: 'powercycle',
  verifyWithinMs: verifyMin * MIN,
  requireApproval,
  cooldownMs: 5 * MIN,
});
/** A ladder as the loader builds it: the first step's settings on the rule. */
const ladder = (steps: LadderStep[]) =>
  rule({
    alertname: 'ServerDown',
    action: 'powercycle',
    verifyWithinMs: steps[0]!.verifyWithinMs,
    cooldownMs: steps[0]!.cooldownMs,
    requireApproval: steps[0]!.requireApproval,
    steps,
  });

type Result = { id: number; decision: string; message: string };

for (const backend of backends()) {
  describe.skipIf(backend.skip)(`a resolved episode (${backend.name})`, () => {
    async function setup(rules: RemediationRule[], clientTimeoutMs = 2000) {
      const db = await backend.fresh();
      const h = await engineHarness({ principals: PRINCIPALS, rules }, await db.open(), clientTimeoutMs);
      const app = remediationApp(h);
      /** Alertmanager delivers ServerDown of `serverId` (fingerprint `fp`, one start): its results. */
      const deliver = async (
        status: 'firing' | 'resolved',
        serverId = '100002',
        fingerprint = 'fp-a',
        startsAt = STARTS_AT,
      ) => {
        const res = await app.inject({
          method: 'POST',
          url: '/api/v1/alertmanager',
          headers: bearer('alertmanager'),
          payload: {
            version: '4',
            status,
            alerts: [{ status, labels: { alertname: 'ServerDown', server_id: serverId }, startsAt, fingerprint }],
          },
        });
        expect(res.statusCode).toBe(200);
        return res.json().results as Result[];
      };
      const approve = (id: number) =>
        app.inject({ method: 'POST', url: `/api/v1/actions/${id}/approve`, headers: bearer('bob'), payload: {} });
      const rows = async () =>
        (await h.journal.list({ limit: 100 })).reverse().map((e) => [e.ladderStep, e.decision, e.verification]);
      return { ...h, app, deliver, approve, rows };
    }

    it("settles nothing for another server's labels on this episode's fingerprint", async () => {
      const { deliver, journal, clock, engine } = await setup([
        rule({ alertname: 'ServerDown', action: 'powercycle', verifyWithinMs: 10 * MIN }),
      ]);
      const [fired] = await deliver('firing', '100002');
      expect(fired).toMatchObject({ decision: 'executed' });
      // The fingerprint and start of server 100002's episode, the labels of server 100003.
      await deliver('resolved', '100003', 'fp-a');
      await engine.tick();
      expect(await journal.get(fired!.id)).toMatchObject({ verification: 'verifying' });
      // It is server 100003's episode that resolved: journaled for that server, nothing of it was pending.
      expect((await journal.list({ decision: 'resolved', limit: 10 })).map((r) => [r.serverId, r.message])).toEqual([
        [
          '100003',
          'its alert resolved (delivered by alertmanager): nothing of it was pending; nothing more is sent for it',
        ],
      ]);
      // Its own resolution does settle it.
      clock.now += MIN;
      await deliver('resolved', '100002', 'fp-a');
      expect(await journal.get(fired!.id)).toMatchObject({ verification: 'verified', verifiedAt: clock.now });
    });

    it('withdraws what awaits approval; a later approval is a 409 naming the resolution and sends nothing', async () => {
      const { deliver, approve, journal, sim, clock } = await setup([
        rule({ alertname: 'ServerDown', action: 'powercycle', requireApproval: true, verifyWithinMs: 10 * MIN }),
      ]);
      const [asked] = await deliver('firing');
      expect(asked).toMatchObject({ decision: 'awaiting_approval' });
      clock.now += MIN;
      await deliver('resolved');
      const resolution = (await journal.list({ decision: 'resolved', limit: 10 }))[0]!;
      expect(resolution).toMatchObject({ principal: 'alertmanager', alertStatus: 'resolved', serverId: '100002' });
      expect(resolution.message).toBe(
        `its alert resolved (delivered by alertmanager): withdrew what awaited approval (journal entry ${asked!.id}); nothing more is sent for it`,
      );
      const when = new Date(clock.now).toISOString();
      expect(await journal.get(asked!.id)).toMatchObject({
        decision: 'withdrawn',
        message: `withdrawn: its alert resolved at ${when} (journal entry ${resolution.id}, delivered by alertmanager); nothing sent`,
      });
      clock.now += MIN;
      const res = await approve(asked!.id);
      expect(res.statusCode).toBe(409);
      expect(res.json().message).toContain(`its alert resolved at ${when}`);
      expect(sim.callsTo(POWERCYCLE)).toHaveLength(0);
      // A firing delivery of the same episode repeated after the resolution acts no more.
      expect((await deliver('firing'))[0]).toMatchObject({ decision: 'resolved' });
      expect(sim.callsTo(POWERCYCLE)).toHaveLength(0);
    });

    it('keeps a resolution that arrives during the call: verified when it completes, no next ladder step', async () => {
      const h = await setup([ladder([step(10), step(20)])], 30_000);
      // The API acts at once and holds its reply back: the call is in flight until then.
      h.sim.setFaults({ mode: 'act_then_hang', hangMs: 3000, paths: [POWERCYCLE] });
      const firing = h.deliver('firing');
      await eventually('the call to reach the API', async () =>
        h.sim.callsTo(POWERCYCLE).length === 1 ? true : undefined,
      );
      const inFlight = (await h.journal.list({ limit: 1 }))[0]!;
      expect(inFlight.decision).toBe('executing');
      await h.deliver('resolved');
      // The resolution named the call in flight: it was delivered during the call.
      const resolution = (await h.journal.list({ decision: 'resolved', limit: 10 }))[0]!;
      expect(resolution.message).toContain(
        `a call in flight (journal entry ${inFlight.id}) is verified when it completes`,
      );
      expect((await firing)[0]).toMatchObject({ id: inFlight.id, decision: 'executed' });
      expect(await h.journal.get(inFlight.id)).toMatchObject({ verification: 'verified' });
      h.sim.setFaults({});
      h.clock.now += 60 * MIN;
      await h.engine.tick();
      expect(h.sim.callsTo(POWERCYCLE)).toHaveLength(1);
      expect(await h.rows()).toEqual([
        [0, 'executed', 'verified'],
        [null, 'resolved', null],
      ]);
    });

    it("finds the resolution whatever Prometheus's clock says: startsAt hours ahead of the daemon's", async () => {
      const { deliver, sim, clock } = await setup([
        rule({ alertname: 'ServerDown', action: 'powercycle', requireApproval: true, verifyWithinMs: 10 * MIN }),
      ]);
      // Prometheus's clock 3 hours ahead: every row of the episode is created "before" its startsAt.
      const ahead = new Date(clock.now + 180 * MIN).toISOString();
      expect((await deliver('firing', '100002', 'fp-skew', ahead))[0]).toMatchObject({ decision: 'awaiting_approval' });
      await deliver('resolved', '100002', 'fp-skew', ahead);
      clock.now += MIN;
      expect((await deliver('firing', '100002', 'fp-skew', ahead))[0]).toMatchObject({ decision: 'resolved' });
      expect(sim.callsTo(POWERCYCLE)).toHaveLength(0);
    });

    it('never climbs a ladder for a resolved episode: its next step awaiting approval is withdrawn', async () => {
      const h = await setup([ladder([step(10), step(20, true)])]);
      expect((await h.deliver('firing'))[0]).toMatchObject({ decision: 'executed' });
      h.clock.now += 11 * MIN;
      await h.engine.tick();
      expect(await h.rows()).toEqual([
        [0, 'executed', 'ineffective'],
        [1, 'awaiting_approval', null],
      ]);
      await h.deliver('resolved');
      const second = (await h.journal.list({ decision: 'withdrawn', limit: 1 }))[0]!;
      expect((await h.approve(second.id)).statusCode).toBe(409);
      h.clock.now += 60 * MIN;
      await h.engine.tick();
      expect(h.sim.callsTo(POWERCYCLE)).toHaveLength(1);
      expect(await h.rows()).toEqual([
        [0, 'executed', 'ineffective'],
        [1, 'withdrawn', null],
        [null, 'resolved', null],
      ]);
    });
  });
}
