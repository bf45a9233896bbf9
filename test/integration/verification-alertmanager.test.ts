/**
 * Verification reads Alertmanager's own list (issue 41): a silence mutes the daemon's receiver too, so a
 * resolved notification may never come. Against Debian's Alertmanager: the action's episode still listed →
 * verifying; resolved in Alertmanager (no webhook at all) → verified by the leader's tick.
 */
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AlertmanagerClient } from '../../src/alertmanager/client.js';
import { VERIFY_EVERY_MS } from '../../src/remediation/verify.js';
import { startQuietAlertmanager } from '../helpers/alertmanager.js';
import { requireBinary } from '../helpers/binaries.js';
import { eventually } from '../helpers/processes.js';
import { engineHarness, powerRequest } from '../helpers/remediation.js';

const binary = requireBinary('/usr/bin/prometheus-alertmanager', 'prometheus-alertmanager');

describe.skipIf(binary.skip)("verification by Debian's Alertmanager's alert list", () => {
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
    ({ am, client } = await startQuietAlertmanager(binary.skip ? '' : binary.path, 'bmx-am-verify-'));
  });
  afterAll(async () => {
    await client?.close();
    await am?.stop();
  });

  it('verified once Alertmanager no longer lists the episode, with no resolved webhook', async () => {
    const labels = { alertname: 'ServerDown', server_id: '100002' };
    await post({ labels });
    const listed = await eventually('the alert to be listed', async () =>
      (await client.alerts()).find((a) => a.labels.alertname === 'ServerDown'),
    );
    const h = await engineHarness({}, ':memory:', 2000, { alertmanager: client });
    const decided = await h.engine.request(
      powerRequest({
        source: 'alert',
        idempotencyKey: 'alert:1',
        verifyWithinMs: 600_000,
        alert: { alertname: 'ServerDown', fingerprint: listed.fingerprint, startsAt: listed.startsAt },
      }),
    );
    expect(decided.decision).toBe('executed');
    await h.engine.tick();
    expect((await h.journal.get(decided.id))?.verification).toBe('verifying');
    await post({ labels, endsAt: new Date(Date.now() - 1000).toISOString() });
    await eventually('the alert to be gone', async () =>
      (await client.alerts()).some((a) => a.fingerprint === listed.fingerprint) ? undefined : true,
    );
    // The leader checks the verifying rows every VERIFY_EVERY_MS.
    h.clock.now += VERIFY_EVERY_MS;
    await h.engine.tick();
    expect(await h.journal.get(decided.id)).toMatchObject({ verification: 'verified', verifiedAt: h.clock.now });
  });
});
