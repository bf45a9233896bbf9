/**
 * An operator's `Idempotency-Key` is scoped to its account and principal (remediation/request.ts
 * `operatorKey`), on both state-store backends: the same principal's retry acts once, another principal's
 * request with the same key string is its own request (it was a 422, or a `duplicate` naming the other's
 * journal entry); a claim a journal holds from before keys were scoped still makes the same principal's retry
 * a duplicate, and nobody else's; and the unscoped key is claimed too, for a replica of the version before.
 */
import { describe, expect, it } from 'vitest';
import type { Principal } from '../../src/config/types.js';
import { operatorKey } from '../../src/remediation/request.js';
import { engineHarness, remediationApp } from '../helpers/remediation.js';
import { backends } from '../helpers/store-backends.js';

const token = (name: string) => `${name}-token-0123456789abcdef`;
const PRINCIPALS: Principal[] = ['alice', 'bob'].map((name) => ({
  name,
  bearerToken: token(name),
  roles: ['operator', 'reader'],
}));
const POWERCYCLE = '/api/v1/dedicated/powercycle';

for (const backend of backends()) {
  describe.skipIf(backend.skip)(`an operator's Idempotency-Key (${backend.name})`, () => {
    async function setup() {
      const db = await backend.fresh();
      const h = await engineHarness({ principals: PRINCIPALS }, await db.open());
      const app = remediationApp(h);
      const powercycle = async (who: string, serverId: string, key: string) => {
        const res = await app.inject({
          method: 'POST',
          url: '/api/v1/actions/powercycle',
          headers: { authorization: `Bearer ${token(who)}`, 'idempotency-key': key },
          payload: { server_id: serverId },
        });
        return { status: res.statusCode, body: res.json() as { decision: string; id: number; message: string } };
      };
      return { h, powercycle };
    }

    it("is the principal's own: another principal's request with the same key acts, a retry does not", async () => {
      const { h, powercycle } = await setup();
      expect(await powercycle('alice', '100001', 'reboot-ticket-7')).toMatchObject({
        status: 200,
        body: { decision: 'executed' },
      });
      // bob's script names its keys the same way: his request is his own, not a 422 nor alice's duplicate.
      expect(await powercycle('bob', '100002', 'reboot-ticket-7')).toMatchObject({
        status: 200,
        body: { decision: 'executed' },
      });
      // Each one's retry is a duplicate of their own entry; another target under the key is a 422.
      const retry = await powercycle('bob', '100002', 'reboot-ticket-7');
      expect(retry).toMatchObject({ status: 200, body: { decision: 'duplicate' } });
      expect(await powercycle('alice', '100002', 'reboot-ticket-7')).toMatchObject({ status: 422 });
      expect(h.sim.callsTo(POWERCYCLE).map((c) => c.params.server_id)).toEqual(['100001', '100002']);
      // A replica of the version before (a rolling upgrade) reads the unscoped key: alice's, who came first.
      const first = (await h.journal.list({ limit: 10 })).find(
        (r) => r.principal === 'alice' && r.decision === 'executed',
      );
      expect(await h.journal.delivery('operator:reboot-ticket-7')).toMatchObject({ actionId: first!.id });
    });

    it("counts a claim from before keys were scoped for the same principal's retry only", async () => {
      const { h, powercycle } = await setup();
      const first = await powercycle('alice', '100001', 'k-1');
      expect(first.body.decision).toBe('executed');
      // The journal as an earlier version left it: the key claimed unscoped only.
      const scoped = operatorKey('default', 'alice', 'k-1');
      const claim = (await h.journal.delivery(scoped))!;
      expect(await h.journal.releaseDelivery(scoped, claim.actionId)).toBe(true);
      expect(await h.journal.delivery('operator:k-1')).toMatchObject({ actionId: claim.actionId });

      const retry = await powercycle('alice', '100001', 'k-1');
      expect(retry.body).toMatchObject({ decision: 'duplicate' });
      expect(retry.body.message).toContain(`journal entry ${first.body.id}`);
      expect(await powercycle('alice', '100003', 'k-1')).toMatchObject({ status: 422 });
      expect(await powercycle('bob', '100003', 'k-1')).toMatchObject({ status: 200, body: { decision: 'executed' } });
      expect(h.sim.callsTo(POWERCYCLE).map((c) => c.params.server_id)).toEqual(['100001', '100003']);
    });
  });
}
