/**
 * A requester withdraws its own request while it awaits approval, on both state-store backends: journaled
 * `withdrawn` under its principal, nothing sent, no longer counted as awaiting; nobody else may withdraw an
 * operator's request. An alert's request is withdrawn by any operator of its account (issue 51), journaled with
 * that operator as the one who settled it.
 */
import { describe, expect, it } from 'vitest';
import type { Principal } from '../../src/config/types.js';
import { engineHarness, remediationApp, rule, unreachableAlert } from '../helpers/remediation.js';
import { backends } from '../helpers/store-backends.js';

const token = (name: string) => `${name}-token-0123456789abcdef`;
const bearer = (name: string) => ({ authorization: `Bearer ${token(name)}` });
const PRINCIPALS: Principal[] = [
  { name: 'alice', bearerToken: token('alice'), roles: ['operator', 'reader'], requireApproval: true },
  { name: 'bob', bearerToken: token('bob'), roles: ['operator'] },
  { name: 'audit', bearerToken: token('audit'), roles: ['reader'] },
  { name: 'alertmanager', bearerToken: token('alertmanager'), roles: ['webhook'] },
  { name: 'eu-ops', bearerToken: token('eu-ops'), roles: ['operator'], accounts: ['eu'] },
];
const POWERCYCLE = '/api/v1/dedicated/powercycle';
const MIN = 60_000;

for (const backend of backends()) {
  describe.skipIf(backend.skip)(`withdrawing a request awaiting approval (${backend.name})`, () => {
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
      const ask = async () =>
        (
          await app.inject({
            method: 'POST',
            url: '/api/v1/actions/powercycle',
            headers: bearer('alice'),
            payload: { server_id: '100001', reason: 'hung' },
          })
        ).json().id as number;
      const call = (verb: 'approve' | 'withdraw', id: number, who: string, payload: object = {}) =>
        app.inject({ method: 'POST', url: `/api/v1/actions/${id}/${verb}`, headers: bearer(who), payload });
      const awaiting = async () =>
        (await h.metrics.actionAwaitingApproval.get()).values.find((v) => v.labels.action === 'powercycle')?.value;
      /** Alertmanager's request for server 100002, awaiting approval under the rule; its journal id. */
      const alert = async () => {
        const res = await app.inject({
          method: 'POST',
          url: '/api/v1/alertmanager',
          headers: bearer('alertmanager'),
          payload: unreachableAlert(new Date(h.clock.now - MIN).toISOString()),
        });
        expect(res.statusCode).toBe(200);
        const [row] = await h.journal.list({ decision: 'awaiting_approval', limit: 1 });
        expect(row).toMatchObject({ source: 'alert', principal: 'alertmanager' });
        return row!.id;
      };
      return { ...h, app, ask, alert, call, awaiting };
    }

    it('journals withdrawn under the requester; nothing sent, nothing left to approve', async () => {
      const { ask, call, sim, journal, awaiting, metrics } = await setup();
      const id = await ask();
      expect(await awaiting()).toBe(1);
      const res = await call('withdraw', id, 'alice', { reason: 'rebooted it by hand' });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({
        withdrawn: id,
        principal: 'alice',
        id,
        decision: 'withdrawn',
        message: 'withdrawn by alice: rebooted it by hand; nothing sent',
      });
      expect(await journal.get(id)).toMatchObject({
        decision: 'withdrawn',
        principal: 'alice',
        reason: 'hung',
        approver: null,
        approverReason: null,
        approvedAt: null,
      });
      expect(await awaiting()).toBe(0);
      const counted = (await metrics.actionRequests.get()).values.find(
        (v) => v.labels.action === 'powercycle' && v.labels.decision === 'withdrawn',
      );
      expect(counted?.value).toBe(1);
      const late = await call('approve', id, 'bob');
      expect(late.statusCode).toBe(409);
      expect(late.json().message).toContain('is withdrawn');
      expect((await call('withdraw', id, 'alice')).statusCode).toBe(409);
      expect(sim.callsTo(POWERCYCLE)).toHaveLength(0);
    });

    it.each([
      { name: 'another operator', who: 'bob', status: 403, message: 'only its requester (alice) may withdraw it' },
      { name: 'a reader', who: 'audit', status: 403, message: 'lacks the role operator' },
    ])('refuses $name, and the request still awaits', async ({ who, status, message }) => {
      const { ask, call, journal } = await setup();
      const id = await ask();
      const res = await call('withdraw', id, who);
      expect(res.statusCode).toBe(status);
      expect(res.json().message).toContain(message);
      expect(await journal.get(id)).toMatchObject({ decision: 'awaiting_approval' });
    });

    it("lets any operator of the account withdraw an alert's request, journaled as the one who settled it", async () => {
      const { alert, call, journal, sim } = await setup();
      const id = await alert();
      // Alertmanager's own credential is no operator's; an operator of another account may not either.
      const webhook = await call('withdraw', id, 'alertmanager');
      expect(webhook.statusCode).toBe(403);
      expect(webhook.json().message).toContain('lacks the role operator');
      const elsewhere = await call('withdraw', id, 'eu-ops');
      expect(elsewhere.statusCode).toBe(403);
      expect(elsewhere.json().message).toContain('may not act on account default');
      expect(await journal.get(id)).toMatchObject({ decision: 'awaiting_approval' });

      const res = await call('withdraw', id, 'bob', { reason: 'the host came back' });
      expect(res.statusCode).toBe(200);
      expect(res.json()).toMatchObject({ withdrawn: id, principal: 'bob', decision: 'withdrawn' });
      expect(await journal.get(id)).toMatchObject({
        decision: 'withdrawn',
        principal: 'alertmanager',
        approver: 'bob',
        approvedAt: null,
        message: 'withdrawn by bob: the host came back; nothing sent',
      });
      // Filtered as what bob settled.
      expect((await journal.list({ approver: 'bob', limit: 10 })).map((r) => r.id)).toEqual([id]);
      expect(sim.callsTo(POWERCYCLE)).toHaveLength(0);
    });

    it('is a 404 for an unknown row and a 409 once the request expired', async () => {
      const { ask, call, clock, journal } = await setup();
      expect((await call('withdraw', 999_999, 'alice')).statusCode).toBe(404);
      const id = await ask();
      clock.now += 16 * MIN;
      const res = await call('withdraw', id, 'alice');
      expect(res.statusCode).toBe(409);
      expect(res.json().message).toContain('expired');
      expect(await journal.get(id)).toMatchObject({ decision: 'expired' });
    });
  });
}
