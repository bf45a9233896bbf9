/**
 * Verification reads Alertmanager's own list (issue 41): a silence mutes the daemon's receiver too, so a
 * resolved notification may never come. Against Debian's Alertmanager, on both state-store backends: the
 * action's episode still listed → verifying; resolved in Alertmanager (no webhook at all) → verified by the
 * leader's tick. Absence alone is no evidence (issue 49): an Alertmanager that restarted lists nothing until
 * Prometheus sends its alerts again, and the row stays verifying; one that cannot be read proves nothing.
 */
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AlertmanagerClient } from '../../src/alertmanager/client.js';
import { DEFAULT_RESEND_INTERVAL_MS } from '../../src/remediation/episode.js';
import { VERIFY_EVERY_MS } from '../../src/remediation/verify.js';
import { startQuietAlertmanager, unreadableAlertmanager } from '../helpers/alertmanager.js';
import { requireBinary } from '../helpers/binaries.js';
import { eventually } from '../helpers/processes.js';
import { engineHarness, powerRequest } from '../helpers/remediation.js';
import { backends } from '../helpers/store-backends.js';

const binary = requireBinary('/usr/bin/prometheus-alertmanager', 'prometheus-alertmanager');
/** Long enough for the leader's tick to read again and for Alertmanager to be up a resend interval. */
const LATER = Math.max(VERIFY_EVERY_MS, DEFAULT_RESEND_INTERVAL_MS);

for (const backend of backends()) {
  describe.skipIf(binary.skip || backend.skip)(
    `verification by Debian's Alertmanager's alert list (${backend.name})`,
    () => {
      let am: Awaited<ReturnType<typeof startQuietAlertmanager>>['am'];
      let client: AlertmanagerClient;
      let restart: Awaited<ReturnType<typeof startQuietAlertmanager>>['restart'];
      const post = async (alert: object) => {
        const res = await request(`${am.url}/api/v2/alerts`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify([alert]),
        });
        await res.body.dump();
      };

      beforeAll(async () => {
        ({ am, client, restart } = await startQuietAlertmanager(binary.skip ? '' : binary.path, 'bmx-am-verify-'));
      });
      afterAll(async () => {
        await client?.close();
        await am?.stop();
      });

      /** A power action on `serverId`'s alert episode, executed and verifying, with the engine's clock at real time. */
      async function verifying(serverId: string, engineClient = client) {
        const labels = { alertname: 'ServerDown', server_id: serverId };
        await post({ labels });
        const listed = await eventually('the alert to be listed', async () =>
          (await client.alerts()).find((a) => a.labels.server_id === serverId),
        );
        const db = await backend.fresh();
        const h = await engineHarness({}, await db.open(), 2000, { alertmanager: engineClient });
        // Alertmanager's start is real time: the engine's clock starts there too.
        h.clock.now = Date.now();
        const decided = await h.engine.request(
          powerRequest({
            source: 'alert',
            idempotencyKey: `alert:${serverId}`,
            verifyWithinMs: 600_000,
            alert: { alertname: 'ServerDown', fingerprint: listed.fingerprint, startsAt: listed.startsAt, labels },
          }),
        );
        expect(decided.decision).toBe('executed');
        await h.engine.tick();
        expect((await h.journal.get(decided.id))?.verification).toBe('verifying');
        return { h, id: decided.id, labels, listed };
      }

      it('verified once Alertmanager no longer lists the episode, with no resolved webhook', async () => {
        const { h, id, labels, listed } = await verifying('100002');
        await post({ labels, endsAt: new Date(Date.now() - 1000).toISOString() });
        await eventually('the alert to be gone', async () =>
          (await client.alerts()).some((a) => a.fingerprint === listed.fingerprint) ? undefined : true,
        );
        h.clock.now += LATER;
        await h.engine.tick();
        expect(await h.journal.get(id)).toMatchObject({ verification: 'verified', verifiedAt: h.clock.now });
        // Resolved as a resolved delivery resolves it: journaled, naming Alertmanager's list.
        const resolutions = await h.journal.list({ decision: 'resolved', limit: 10 });
        expect(resolutions).toMatchObject([
          { principal: 'alertmanager (alert list)', fingerprint: listed.fingerprint, serverId: '100001' },
        ]);
        // The row names its evidence: that resolution, by Alertmanager's list.
        expect((await h.journal.get(id))?.verificationEvidence).toContain(
          `journal entry ${resolutions[0]!.id}, delivered by alertmanager (alert list)`,
        );
      });

      it('stays verifying while a restarted Alertmanager is younger than a resend interval', async () => {
        const { h, id, labels, listed } = await verifying('100003');
        am = await restart(am);
        expect((await client.alerts()).some((a) => a.fingerprint === listed.fingerprint)).toBe(false);
        h.clock.now += VERIFY_EVERY_MS;
        await h.engine.tick();
        expect(await h.journal.get(id)).toMatchObject({ decision: 'executed', verification: 'verifying' });
        // Prometheus sends the still-firing alert again (its own start): listed, still verifying after a resend interval.
        await post({ labels, startsAt: listed.startsAt });
        h.clock.now += 2 * LATER;
        await h.engine.tick();
        expect(await h.journal.get(id)).toMatchObject({ decision: 'executed', verification: 'verifying' });
      });

      it('verified once a restarted Alertmanager, up a resend interval, does not list it: no one need have seen it', async () => {
        const { h, id, listed } = await verifying('100004');
        am = await restart(am);
        // This Alertmanager never listed the episode (nor would a new leader's tick have seen it listed).
        h.clock.now += VERIFY_EVERY_MS;
        await h.engine.tick();
        expect(await h.journal.get(id)).toMatchObject({ verification: 'verifying' });
        // Prometheus would have sent it again within a resend interval had it still fired: it resolved meanwhile.
        h.clock.now += 2 * LATER;
        await h.engine.tick();
        expect(await h.journal.get(id)).toMatchObject({ verification: 'verified', verifiedAt: h.clock.now });
        expect(await h.journal.list({ decision: 'resolved', limit: 10 })).toMatchObject([
          { principal: 'alertmanager (alert list)', fingerprint: listed.fingerprint },
        ]);
      });

      it('stays verifying while Alertmanager cannot be read', async () => {
        const down = unreadableAlertmanager();
        try {
          const { h, id } = await verifying('100001', down);
          h.clock.now += LATER;
          await h.engine.tick();
          expect(await h.journal.get(id)).toMatchObject({ decision: 'executed', verification: 'verifying' });
          // Unreadable until the deadline: it could not tell, so not ineffective.
          h.clock.now += 600_000;
          await h.engine.tick();
          expect(await h.journal.get(id)).toMatchObject({ decision: 'executed', verification: 'unknown' });
        } finally {
          await down.close();
        }
      });
    },
  );
}
