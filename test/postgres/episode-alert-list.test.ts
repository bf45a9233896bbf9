/**
 * Alertmanager's alert list resolves an episode (issue 49 review): a request awaiting approval is silenced on
 * its alert's labels (remediation.alertmanager.silence_while_handled), so Alertmanager never delivers its
 * resolved notification. The leader's tick judges the episodes of awaiting rows against Alertmanager's list
 * too, and an episode it ended is resolved as a resolved delivery resolves it: journaled (`resolved`, delivered
 * by "alertmanager (alert list)"), the request withdrawn, a later approval refused with nothing sent. Against
 * Debian's Alertmanager on loopback, on both state-store backends.
 */
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AlertmanagerClient } from '../../src/alertmanager/client.js';
import type { LadderStep } from '../../src/config/types.js';
import { DEFAULT_RESEND_INTERVAL_MS } from '../../src/remediation/episode.js';
import { VERIFY_EVERY_MS } from '../../src/remediation/verify.js';
import { startQuietAlertmanager, unreadableAlertmanager } from '../helpers/alertmanager.js';
import { requireBinary } from '../helpers/binaries.js';
import { eventually } from '../helpers/processes.js';
import { engineHarness, powerRequest, remediationApp, rule } from '../helpers/remediation.js';
import { backends } from '../helpers/store-backends.js';

const binary = requireBinary('/usr/bin/prometheus-alertmanager', 'prometheus-alertmanager');
/** Long enough for the leader's tick to read again and for Alertmanager to be up a resend interval. */
const LATER = Math.max(VERIFY_EVERY_MS, DEFAULT_RESEND_INTERVAL_MS);
const POWERCYCLE = '/api/v1/dedicated/powercycle';
const MIN = 60_000;
const step = (verifyMin: number): LadderStep => ({
  action: 'powercycle',
  verifyWithinMs: verifyMin * MIN,
  requireApproval: false,
  cooldownMs: 5 * MIN,
});

for (const backend of backends()) {
  describe.skipIf(binary.skip || backend.skip)(`an episode ended in Alertmanager's list (${backend.name})`, () => {
    let am: Awaited<ReturnType<typeof startQuietAlertmanager>>['am'];
    let client: AlertmanagerClient;
    const post = async (alert: object) => {
      const res = await request(`${am.url}/api/v2/alerts`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify([alert]),
      });
      await res.body.dump();
    };

    beforeAll(async () => {
      ({ am, client } = await startQuietAlertmanager(binary.skip ? '' : binary.path, 'bmx-am-episode-list-'));
    });
    afterAll(async () => {
      await client?.close();
      await am?.stop();
    });

    it('withdraws a request awaiting approval whose alert resolved while silenced; the approval sends nothing', async () => {
      const serverId = '100002';
      const labels = { alertname: 'ServerDown', server_id: serverId };
      await post({ labels });
      const listed = await eventually('the alert to be listed', async () =>
        (await client.alerts()).find((a) => a.labels.server_id === serverId),
      );
      const db = await backend.fresh();
      const h = await engineHarness({}, await db.open(), 2000, { alertmanager: client });
      h.clock.now = Date.now();
      const asked = await h.engine.request(
        powerRequest({
          source: 'alert',
          serverId,
          idempotencyKey: `alert:${serverId}`,
          requireApproval: true,
          verifyWithinMs: 600_000,
          alert: { alertname: 'ServerDown', fingerprint: listed.fingerprint, startsAt: listed.startsAt, labels },
        }),
      );
      expect(asked.decision).toBe('awaiting_approval');
      await h.engine.tick();
      // Handled: silenced on its labels, so no resolved notification will reach the daemon.
      await eventually('the silence', async () =>
        (await client.alerts()).find((a) => a.fingerprint === listed.fingerprint && a.silencedBy.length > 0),
      );
      await post({ labels, endsAt: new Date(Date.now() - 1000).toISOString() });
      await eventually('the alert to be gone', async () =>
        (await client.alerts()).some((a) => a.fingerprint === listed.fingerprint) ? undefined : true,
      );
      h.clock.now += LATER;
      await h.engine.tick();
      const resolution = (await h.journal.list({ decision: 'resolved', limit: 10 }))[0];
      expect(resolution).toMatchObject({
        principal: 'alertmanager (alert list)',
        serverId,
        fingerprint: listed.fingerprint,
        message: `its alert resolved (delivered by alertmanager (alert list)): withdrew what awaited approval (journal entry ${asked.id}); nothing more is sent for it`,
      });
      const row = await h.journal.get(asked.id);
      expect(row?.decision).toBe('withdrawn');
      await expect(h.engine.approve(row!, 'bob')).rejects.toThrow(/its alert resolved at/);
      expect(h.sim.callsTo(POWERCYCLE)).toHaveLength(0);
    });

    it('ends a verification unknown, not ineffective, when Alertmanager was unreadable until the deadline: no ladder step', async () => {
      const down = unreadableAlertmanager();
      try {
        const steps = [step(10), step(20)];
        const db = await backend.fresh();
        const h = await engineHarness(
          {
            bearerTokens: ['alertmanager-token-0123456789abcdef'],
            rules: [
              rule({
                alertname: 'ServerDown',
                action: 'powercycle',
                verifyWithinMs: 10 * MIN,
                cooldownMs: 5 * MIN,
                steps,
              }),
            ],
          },
          await db.open(),
          2000,
          { alertmanager: down },
        );
        const app = remediationApp(h);
        const res = await app.inject({
          method: 'POST',
          url: '/api/v1/alertmanager',
          headers: { authorization: 'Bearer alertmanager-token-0123456789abcdef' },
          payload: {
            version: '4',
            status: 'firing',
            alerts: [
              {
                status: 'firing',
                labels: { alertname: 'ServerDown', server_id: '100002' },
                startsAt: '2026-11-21T11:58:00Z',
                fingerprint: 'fp-a',
              },
            ],
          },
        });
        expect(res.statusCode).toBe(200);
        const [fired] = res.json().results as Array<{ id: number; decision: string }>;
        expect(fired).toMatchObject({ decision: 'executed' });
        h.clock.now += 11 * MIN;
        await h.engine.tick();
        h.clock.now += 60 * MIN;
        await h.engine.tick();
        expect(await h.journal.get(fired!.id)).toMatchObject({ decision: 'executed', verification: 'unknown' });
        expect(h.sim.callsTo(POWERCYCLE)).toHaveLength(1);
        expect((await h.journal.list({ limit: 10 })).map((r) => r.id)).toEqual([fired!.id]);
      } finally {
        await down.close();
      }
    });
  });
}
