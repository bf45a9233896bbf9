/**
 * An expired approval never swallows its alert (issue 40), on both state-store backends: Alertmanager repeats
 * a still-firing alert whose request expired unapproved, and the repeat asks again through every guard (a new
 * `awaiting_approval` row, the gauge back up), where it used to be a `duplicate` that did nothing. A denial
 * stays final for that alert's episode, and so does an approval.
 */
import { describe, expect, it } from 'vitest';
import type { Principal } from '../../src/config/types.js';
import { engineHarness, remediationApp, rule } from '../helpers/remediation.js';
import { backends } from '../helpers/store-backends.js';

const token = (name: string) => `${name}-token-0123456789abcdef`;
const bearer = (name: string) => ({ authorization: `Bearer ${token(name)}` });
const PRINCIPALS: Principal[] = [
  { name: 'alertmanager', bearerToken: token('alertmanager'), roles: ['webhook'] },
  { name: 'alice', bearerToken: token('alice'), roles: ['operator'], requireApproval: true },
  { name: 'bob', bearerToken: token('bob'), roles: ['operator'] },
];
const POWERCYCLE = '/api/v1/dedicated/powercycle';
const MIN = 60_000;
const STARTS_AT = '2026-11-21T11:00:00Z';

for (const backend of backends()) {
  describe.skipIf(backend.skip)(`a repeat of an alert after its request expired (${backend.name})`, () => {
    async function setup() {
      const db = await backend.fresh();
      const h = await engineHarness(
        {
          principals: PRINCIPALS,
          rules: [rule({ alertname: 'BaremetalServerUnreachable', action: 'powercycle', requireApproval: true })],
        },
        await db.open(),
      );
      const app = remediationApp(h);
      /** Alertmanager delivers the same firing alert (one episode: same fingerprint and startsAt). */
      const deliver = async (startsAt = STARTS_AT) => {
        const res = await app.inject({
          method: 'POST',
          url: '/api/v1/alertmanager',
          headers: bearer('alertmanager'),
          payload: {
            version: '4',
            status: 'firing',
            alerts: [
              {
                status: 'firing',
                labels: { alertname: 'BaremetalServerUnreachable', server_id: '100002' },
                startsAt,
                fingerprint: 'fp-1',
              },
            ],
          },
        });
        expect(res.statusCode).toBe(200);
        return res.json().results[0] as { id: number; decision: string; message: string };
      };
      const settle = (verb: 'approve' | 'deny', id: number, payload: object = {}) =>
        app.inject({ method: 'POST', url: `/api/v1/actions/${id}/${verb}`, headers: bearer('bob'), payload });
      const awaiting = async () =>
        (await h.metrics.actionAwaitingApproval.get()).values.find((v) => v.labels.action === 'powercycle')?.value;
      /** Lets the request expire (remediation.approval_timeout is 15 minutes in the harness). */
      const expire = async () => {
        h.clock.now += 16 * MIN;
        await h.engine.tick();
      };
      return { ...h, app, deliver, settle, awaiting, expire };
    }

    it('asks again through every guard, and the new request can be approved', async () => {
      const { deliver, settle, expire, awaiting, journal, sim } = await setup();
      const first = await deliver();
      expect(first.decision).toBe('awaiting_approval');
      await expire();
      expect(await journal.get(first.id)).toMatchObject({ decision: 'expired' });
      expect(await awaiting()).toBe(0);

      const again = await deliver();
      expect(again).toMatchObject({ decision: 'awaiting_approval' });
      expect(again.id).toBeGreaterThan(first.id);
      expect(await awaiting()).toBe(1);
      // Repeated while the new request waits: that one holds the delivery now.
      expect(await deliver()).toMatchObject({
        decision: 'duplicate',
        message: `already acted on this delivery (journal entry ${again.id})`,
      });
      expect(sim.callsTo(POWERCYCLE)).toHaveLength(0);

      expect((await settle('approve', again.id)).json().execution).toMatchObject({ decision: 'executed' });
      expect(await deliver()).toMatchObject({ decision: 'duplicate' });
      expect(sim.callsTo(POWERCYCLE)).toHaveLength(1);
    });

    it('asks again every time it expires', async () => {
      const { deliver, expire, journal } = await setup();
      const ids: number[] = [];
      for (let i = 0; i < 3; i++) {
        const asked = await deliver();
        expect(asked.decision).toBe('awaiting_approval');
        ids.push(asked.id);
        await expire();
      }
      expect(new Set(ids).size).toBe(3);
      for (const id of ids) expect(await journal.get(id)).toMatchObject({ decision: 'expired' });
    });

    it('runs the guards again: a power cycle made meanwhile answers cooldown, not a duplicate', async () => {
      const { deliver, expire, app } = await setup();
      await deliver();
      await expire();
      const direct = await app.inject({
        method: 'POST',
        url: '/api/v1/actions/powercycle',
        headers: bearer('bob'),
        payload: { server_id: '100002' },
      });
      expect(direct.json()).toMatchObject({ decision: 'executed' });
      expect(await deliver()).toMatchObject({ decision: 'cooldown' });
    });

    it('keeps a denial final for the episode', async () => {
      const { deliver, settle, sim } = await setup();
      const first = await deliver();
      expect((await settle('deny', first.id, { reason: 'maintenance' })).statusCode).toBe(200);
      expect(await deliver()).toMatchObject({
        decision: 'duplicate',
        message: `already acted on this delivery (journal entry ${first.id})`,
      });
      expect(sim.callsTo(POWERCYCLE)).toHaveLength(0);
    });

    it("holds a denial for the alert's labels for the rule's cooldown, whatever the episode (issue 49)", async () => {
      const { deliver, settle, sim, clock, journal } = await setup();
      const first = await deliver();
      expect((await settle('deny', first.id, { reason: 'maintenance' })).statusCode).toBe(200);
      const deniedAt = clock.now;
      // The alert resolved and fires again: a new episode (a new startsAt), the same labels, inside the cooldown.
      clock.now += 10 * MIN;
      const again = await deliver('2026-11-21T12:05:00Z');
      expect(again).toMatchObject({
        decision: 'denied_by_approver',
        message: `denied by bob at ${new Date(deniedAt).toISOString()} for these alert labels (journal entry ${first.id}); the denial holds until ${new Date(deniedAt + 30 * MIN).toISOString()} (the rule's cooldown); nothing sent`,
      });
      expect(await journal.get(again.id)).toMatchObject({ approver: null });
      // Past the rule's cooldown (30m) the same episode's repeat asks again: nothing was claimed.
      clock.now += 21 * MIN;
      expect(await deliver('2026-11-21T12:05:00Z')).toMatchObject({ decision: 'awaiting_approval' });
      expect(sim.callsTo(POWERCYCLE)).toHaveLength(0);
    });

    it("keeps an operator's Idempotency-Key spent after its request expired", async () => {
      const { app, expire } = await setup();
      const ask = () =>
        app.inject({
          method: 'POST',
          url: '/api/v1/actions/powercycle',
          headers: { ...bearer('alice'), 'idempotency-key': 'k-1' },
          payload: { server_id: '100002' },
        });
      const first = (await ask()).json();
      expect(first).toMatchObject({ decision: 'awaiting_approval' });
      await expire();
      expect((await ask()).json()).toMatchObject({ decision: 'duplicate' });
    });
  });
}
