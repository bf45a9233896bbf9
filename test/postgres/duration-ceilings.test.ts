/**
 * No config value makes a decision answer 500 (issue 49): with every duration at the longest the config takes
 * — a cooldown, a hold and the cap window at Prometheus's 292y, the approval timeout and verify_within at their
 * ceilings — the webhook decides and answers 200 on both state-store backends. `approval_timeout: 280000y`
 * used to pass check-config and then fail every decision with `RangeError: Invalid time value`; the loader
 * refuses it now (test/unit/config/duration-ceilings.test.ts).
 */
import { describe, expect, it } from 'vitest';
import type { Principal } from '../../src/config/types.js';
import { prometheusDurationMs } from '../../src/config/formats.js';
import { MAX_APPROVAL_TIMEOUT, MAX_VERIFY_WITHIN } from '../../src/config/schema.js';
import { engineHarness, remediationApp, rule, SAFETY_WITHOUT_ATTACK_GUARD } from '../helpers/remediation.js';
import { backends } from '../helpers/store-backends.js';

const TOKEN = 'alertmanager-token-0123456789abcdef';
const PRINCIPALS: Principal[] = [{ name: 'alertmanager', bearerToken: TOKEN, roles: ['webhook'] }];
const LONGEST = prometheusDurationMs('292y')!;

for (const backend of backends()) {
  describe.skipIf(backend.skip)(`decisions with the longest durations (${backend.name})`, () => {
    it('answer 200 with what they decided', async () => {
      const db = await backend.fresh();
      const h = await engineHarness(
        {
          principals: PRINCIPALS,
          approvalTimeoutMs: prometheusDurationMs(MAX_APPROVAL_TIMEOUT)!,
          safety: { ...SAFETY_WITHOUT_ATTACK_GUARD, capWindowMs: LONGEST },
          rules: [
            rule({
              alertname: 'ServerDown',
              action: 'powercycle',
              cooldownMs: LONGEST,
              verifyWithinMs: prometheusDurationMs(MAX_VERIFY_WITHIN)!,
            }),
            rule({ alertname: 'Held', action: 'powercycle', requireApproval: true, cooldownMs: LONGEST }),
            rule({ alertname: 'Attack', action: 'firewall_state', cooldownMs: LONGEST, holdMs: LONGEST }),
          ],
        },
        await db.open(),
      );
      const app = remediationApp(h);
      const deliver = async (alertname: string, startsAt: string, labels: Record<string, string> = {}) => {
        const res = await app.inject({
          method: 'POST',
          url: '/api/v1/alertmanager',
          headers: { authorization: `Bearer ${TOKEN}` },
          payload: {
            version: '4',
            status: 'firing',
            alerts: [
              {
                status: 'firing',
                labels: { alertname, server_id: '100001', ...labels },
                startsAt,
                fingerprint: startsAt,
              },
            ],
          },
        });
        expect(res.statusCode).toBe(200);
        return (res.json().results as Array<{ decision: string; message: string }>)[0]!;
      };
      expect(await deliver('ServerDown', '2026-11-21T11:00:00Z')).toMatchObject({ decision: 'executed' });
      const cooling = await deliver('ServerDown', '2026-11-21T11:30:00Z');
      expect(cooling.decision).toBe('cooldown');
      expect(await deliver('Held', '2026-11-21T11:31:00Z', { server_id: '100002' })).toMatchObject({
        decision: 'awaiting_approval',
      });
      const ip = [...h.sim.state.servers.get('100003')!.ips][0]!;
      expect((await deliver('Attack', '2026-11-21T11:32:00Z', { server_id: '100003', ip })).decision).toBe('executed');
    });
  });
}
