/**
 * Four eyes on the riskiest override (issue 40, item 6): a principal with require_approval that closes the
 * circuit breaker does not close it; the close awaits another operator's approval like any action, on both
 * state-store backends. The requester cannot approve its own, another operator's approval closes it (journaled
 * under the requester, with the approver), a denial leaves it open, and a principal without require_approval
 * still closes it alone.
 */
import { describe, expect, it } from 'vitest';
import type { Principal } from '../../src/config/types.js';
import { engineHarness, remediationApp } from '../helpers/remediation.js';
import { backends } from '../helpers/store-backends.js';

const token = (name: string) => `${name}-token-0123456789abcdef`;
const bearer = (name: string) => ({ authorization: `Bearer ${token(name)}` });
const PRINCIPALS: Principal[] = [
  { name: 'alice', bearerToken: token('alice'), roles: ['operator', 'reader'], requireApproval: true },
  { name: 'bob', bearerToken: token('bob'), roles: ['operator'] },
  { name: 'eu-bob', bearerToken: token('eu-bob'), roles: ['operator'], accounts: ['eu'] },
];

for (const backend of backends()) {
  describe.skipIf(backend.skip)(`closing the circuit breaker with four eyes (${backend.name})`, () => {
    async function setup() {
      const db = await backend.fresh();
      const h = await engineHarness({ principals: PRINCIPALS }, await db.open());
      await h.journal.transaction('default', (tx) => tx.openCircuit('default', h.clock.now, 'test: 4 servers'));
      const app = remediationApp(h);
      const close = (who: string) =>
        app.inject({
          method: 'POST',
          url: '/api/v1/remediation/circuit/close',
          headers: bearer(who),
          payload: { reason: 'checked: the provider had an outage' },
        });
      const settle = (verb: 'approve' | 'deny', id: number, who: string) =>
        app.inject({ method: 'POST', url: `/api/v1/actions/${id}/${verb}`, headers: bearer(who), payload: {} });
      const isOpen = async () => (await h.journal.circuit('default')).openedAt !== null;
      return { ...h, close, settle, isOpen };
    }

    it('a require_approval principal asks; another operator approves and it closes', async () => {
      const { close, settle, isOpen, journal } = await setup();
      const asked = await close('alice');
      expect(asked.statusCode).toBe(200);
      expect(asked.json()).toMatchObject({ decision: 'awaiting_approval', was_open: true });
      expect(asked.json().message).toContain('awaiting approval by an operator other than alice');
      expect(await isOpen()).toBe(true);
      const id = asked.json().id as number;
      expect((await settle('approve', id, 'alice')).statusCode).toBe(403);
      expect((await settle('approve', id, 'eu-bob')).json().message).toContain('may not act on account default');
      expect(await isOpen()).toBe(true);

      const approved = await settle('approve', id, 'bob');
      expect(approved.statusCode).toBe(200);
      expect(approved.json()).toMatchObject({
        approved: id,
        approver: 'bob',
        decision: 'circuit_closed',
        message: expect.stringContaining('the circuit breaker is closed'),
      });
      expect(await isOpen()).toBe(false);
      expect(await journal.get(id)).toMatchObject({ decision: 'approved', principal: 'alice', approver: 'bob' });
      expect(await journal.get(approved.json().execution.id)).toMatchObject({
        action: 'circuit_close',
        decision: 'circuit_closed',
        principal: 'alice',
        reason: 'checked: the provider had an outage',
        approver: 'bob',
      });
      expect((await settle('approve', id, 'bob')).statusCode).toBe(409);
    });

    it('a denial leaves the breaker open; a principal without require_approval closes it alone', async () => {
      const { close, settle, isOpen } = await setup();
      const id = (await close('alice')).json().id as number;
      expect((await settle('deny', id, 'bob')).json()).toMatchObject({ decision: 'denied_by_approver' });
      expect(await isOpen()).toBe(true);
      const alone = await close('bob');
      expect(alone.json()).toMatchObject({ decision: 'circuit_closed', was_open: true });
      expect(await isOpen()).toBe(false);
    });
  });
}
