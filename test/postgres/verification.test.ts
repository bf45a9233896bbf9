/**
 * Verification (issue 41), on both state-store backends: an executed power action of a rule with
 * `verify_within` is `verifying` until its alert's episode resolves (`verified`, by the resolved webhook) or
 * `verify_within` passes with it still firing (`ineffective`, by the leader's tick) — and a second replica on
 * the same database that becomes leader ends a verification the first one started.
 */
import { describe, expect, it } from 'vitest';
import type { Principal } from '../../src/config/types.js';
import { seriesValue } from '../helpers/metrics.js';
import { engineHarness, remediationApp, rule } from '../helpers/remediation.js';
import { backends } from '../helpers/store-backends.js';
import type { StateStore } from '../../src/store/store.js';

const TOKEN = 'alertmanager-token-0123456789abcdef';
const PRINCIPALS: Principal[] = [{ name: 'alertmanager', bearerToken: TOKEN, roles: ['webhook'] }];
const MIN = 60_000;
const STARTS_AT = '2026-11-21T11:58:00Z';
const RULES = [rule({ alertname: 'ServerDown', action: 'powercycle', verifyWithinMs: 10 * MIN })];

for (const backend of backends()) {
  describe.skipIf(backend.skip)(`verification (${backend.name})`, () => {
    async function setup(store?: StateStore, rules = RULES) {
      const db = store ? undefined : await backend.fresh();
      const h = await engineHarness({ principals: PRINCIPALS, rules }, store ?? (await db!.open()));
      const app = remediationApp(h);
      const deliver = async (status: 'firing' | 'resolved', fingerprint = 'fp-1', serverId = '100002') => {
        const res = await app.inject({
          method: 'POST',
          url: '/api/v1/alertmanager',
          headers: { authorization: `Bearer ${TOKEN}` },
          payload: {
            version: '4',
            status,
            alerts: [
              { status, labels: { alertname: 'ServerDown', server_id: serverId }, startsAt: STARTS_AT, fingerprint },
            ],
          },
        });
        expect(res.statusCode).toBe(200);
        return res.json().results as Array<{ id: number; decision: string }>;
      };
      const verifications = (outcome: string) =>
        seriesValue(h.registry, 'baremetal_remediation_verifications_total', {
          action: 'powercycle',
          rule: 'ServerDown',
          outcome,
        });
      return { h, db, deliver, verifications };
    }

    it('verifying after the call, verified when its alert resolves, with the recovery time', async () => {
      const { h, deliver, verifications } = await setup();
      const [executed] = await deliver('firing');
      expect(executed!.decision).toBe('executed');
      const calledAt = h.clock.now;
      expect(await h.journal.get(executed!.id)).toMatchObject({ verification: 'verifying', verifyWithinMs: 10 * MIN });
      // Another episode's resolution (another fingerprint) does not verify it; a tick inside the deadline neither.
      h.clock.now += 3 * MIN;
      await deliver('resolved', 'fp-other');
      await h.engine.tick();
      expect((await h.journal.get(executed!.id))?.verification).toBe('verifying');
      await deliver('resolved');
      // The row names what it settled on: the resolved delivery, by the row that journaled it.
      const [resolution] = await h.journal.list({ decision: 'resolved', limit: 10 });
      expect(await h.journal.get(executed!.id)).toMatchObject({
        verification: 'verified',
        verifiedAt: calledAt + 3 * MIN,
        verificationEvidence: `a resolved delivery: its alert resolved at ${new Date(calledAt + 3 * MIN).toISOString()} (journal entry ${resolution!.id}, delivered by alertmanager)`,
      });
      expect(await verifications('verified')).toBe(1);
      const exposition = await h.registry.getSingleMetricAsString('baremetal_remediation_recovery_seconds');
      expect(exposition).toContain(
        'baremetal_remediation_recovery_seconds_sum{account="default",action="powercycle"} 180',
      );
      expect(exposition).toContain(
        'baremetal_remediation_recovery_seconds_bucket{le="300",account="default",action="powercycle"} 1',
      );
      // Ended once: a later tick past the deadline leaves it verified.
      h.clock.now += 20 * MIN;
      await h.engine.tick();
      expect((await h.journal.get(executed!.id))?.verification).toBe('verified');
      // Created at 0 for a rule that verifies (so that the first one shows in increase()), and still 0.
      expect(await verifications('ineffective')).toBe(0);
    });

    it('ineffective once verify_within passed with the alert still firing, as of the deadline', async () => {
      const { h, deliver, verifications } = await setup();
      const [executed] = await deliver('firing');
      const calledAt = h.clock.now;
      h.clock.now += 9 * MIN;
      await h.engine.tick();
      expect((await h.journal.get(executed!.id))?.verification).toBe('verifying');
      h.clock.now += 5 * MIN;
      await h.engine.tick();
      expect(await h.journal.get(executed!.id)).toMatchObject({
        verification: 'ineffective',
        verifiedAt: calledAt + 10 * MIN,
        verificationEvidence: `its alert not known resolved at its deadline ${new Date(calledAt + 10 * MIN).toISOString()} (verify_within 600s)`,
      });
      expect(await verifications('ineffective')).toBe(1);
      // A late resolution does not turn it around.
      await deliver('resolved');
      expect((await h.journal.get(executed!.id))?.verification).toBe('ineffective');
    });

    it('a replica that becomes leader ends a verification the first one started', async () => {
      const first = await setup();
      const [executed] = await first.deliver('firing');
      // The first replica stops leading (demoted or gone) before the deadline.
      await first.h.engine.stop();
      const second = await setup(await first.db!.open());
      second.h.clock.now = first.h.clock.now + 11 * MIN;
      await second.h.engine.tick();
      expect((await second.h.journal.get(executed!.id))?.verification).toBe('ineffective');
      expect(await second.verifications('ineffective')).toBe(1);
    });

    it('a restart restores the outcome counter and the recovery times from the journal', async () => {
      const first = await setup();
      await first.deliver('firing');
      first.h.clock.now += 3 * MIN;
      await first.deliver('resolved');
      await first.deliver('firing', 'fp-2', '100003');
      first.h.clock.now += 11 * MIN;
      await first.h.engine.tick();
      expect(await first.verifications('verified')).toBe(1);
      expect(await first.verifications('ineffective')).toBe(1);
      await first.h.engine.stop();
      // The next run starts on the same journal with fresh metrics: the counters are read back, not zero.
      const next = await setup(await first.db!.open());
      expect(await next.verifications('verified')).toBe(1);
      expect(await next.verifications('ineffective')).toBe(1);
      const exposition = await next.h.registry.getSingleMetricAsString('baremetal_remediation_recovery_seconds');
      expect(exposition).toContain(
        'baremetal_remediation_recovery_seconds_sum{account="default",action="powercycle"} 180',
      );
      expect(exposition).toContain(
        'baremetal_remediation_recovery_seconds_count{account="default",action="powercycle"} 1',
      );
    });

    it('a rule without verify_within is not verified (as before)', async () => {
      const { h, deliver } = await setup(undefined, [rule({ alertname: 'ServerDown', action: 'powercycle' })]);
      const [executed] = await deliver('firing');
      expect(await h.journal.get(executed!.id)).toMatchObject({
        decision: 'executed',
        verifyWithinMs: null,
        verification: null,
        verifiedAt: null,
      });
    });
  });
}
