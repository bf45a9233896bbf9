/**
 * Silence while handled (issue 41), against Debian's Alertmanager: a request made from an alert that awaits
 * approval or is verifying gets a silence for the alert's labels (createdBy baremetal-exporter, its comment
 * naming the journal entry), expired once the request is no longer handled — verified, ineffective, withdrawn.
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
const MIN = 60_000;

describe.skipIf(binary.skip)("silences while handled, against Debian's Alertmanager", () => {
  let am: Awaited<ReturnType<typeof startQuietAlertmanager>>['am'];
  let client: AlertmanagerClient;

  /** Posts the alert of `serverId` to Alertmanager and returns it as Alertmanager lists it. */
  const fire = async (serverId: string) => {
    const labels = { alertname: 'ServerDown', server_id: serverId };
    const res = await request(`${am.url}/api/v2/alerts`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([{ labels }]),
    });
    await res.body.dump();
    const listed = await eventually('the alert to be listed', async () =>
      (await client.alerts()).find((a) => a.labels.server_id === serverId),
    );
    return { labels, listed };
  };
  /** The daemon's silences naming journal entry `id` (each test has its own journal: and its server), by state. */
  const silencesOf = async (id: number, serverId: string) =>
    (await client.silences())
      .filter(
        (s) =>
          s.createdBy === 'baremetal-exporter' &&
          s.comment.includes(`journal entry ${id} `) &&
          s.comment.includes(`of server ${serverId},`),
      )
      .map((s) => s.state);
  const harness = async () => {
    const h = await engineHarness({}, ':memory:', 2000, { alertmanager: client });
    // Alertmanager refuses a silence that ends in the past, and one starting in the future is pending: the
    // engine's clock runs a minute behind the real one here, and each tick moves it by VERIFY_EVERY_MS.
    h.clock.now = Date.now() - MIN;
    const tick = async () => {
      h.clock.now += VERIFY_EVERY_MS;
      await h.engine.tick();
    };
    return { h, tick };
  };

  beforeAll(async () => {
    ({ am, client } = await startQuietAlertmanager(binary.skip ? '' : binary.path, 'bmx-am-silences-'));
  });
  afterAll(async () => {
    await client?.close();
    await am?.stop();
  });

  it('silences the alert while its action is verifying; expires the silence once it is verified', async () => {
    const SERVER = '100001';
    const { labels, listed } = await fire(SERVER);
    const { h, tick } = await harness();
    const alert = { alertname: 'ServerDown', fingerprint: listed.fingerprint, startsAt: listed.startsAt, labels };
    const decided = await h.engine.request(
      powerRequest({ serverId: '100001', source: 'alert', idempotencyKey: 'k1', verifyWithinMs: 10 * MIN, alert }),
    );
    expect(decided.decision).toBe('executed');
    await tick();
    expect(await silencesOf(decided.id, SERVER)).toEqual(['active']);
    const silence = (await client.silences()).find((s) => s.comment.includes(`journal entry ${decided.id} `))!;
    expect(silence.comment).toContain('powercycle of server 100001, verifying until');
    await eventually('the alert to be muted', async () =>
      (await client.alerts()).some((a) => a.silencedBy.includes(silence.id)) ? true : undefined,
    );
    // Reconciled, not repeated: another run keeps the one silence.
    await tick();
    expect(await silencesOf(decided.id, SERVER)).toEqual(['active']);
    await h.engine.alertResolved(listed.fingerprint, listed.startsAt);
    await tick();
    expect(await silencesOf(decided.id, SERVER)).toEqual(['expired']);
  });

  it('expires it when the action was ineffective', async () => {
    const SERVER = '100003';
    const { labels, listed } = await fire(SERVER);
    const { h, tick } = await harness();
    const alert = { alertname: 'ServerDown', fingerprint: listed.fingerprint, startsAt: listed.startsAt, labels };
    const decided = await h.engine.request(
      powerRequest({ serverId: '100003', source: 'alert', idempotencyKey: 'k3', verifyWithinMs: 2 * MIN, alert }),
    );
    await tick();
    expect(await silencesOf(decided.id, SERVER)).toEqual(['active']);
    h.clock.now += 2 * MIN;
    await tick();
    expect((await h.journal.get(decided.id))?.verification).toBe('ineffective');
    expect(await silencesOf(decided.id, SERVER)).toEqual(['expired']);
  });

  it('silences it while the request awaits approval; expires the silence once it is withdrawn', async () => {
    const SERVER = '100002';
    const { labels, listed } = await fire(SERVER);
    const { h, tick } = await harness();
    const alert = { alertname: 'ServerDown', fingerprint: listed.fingerprint, startsAt: listed.startsAt, labels };
    const asked = await h.engine.request(
      powerRequest({ serverId: '100002', source: 'alert', idempotencyKey: 'k2', requireApproval: true, alert }),
    );
    expect(asked.decision).toBe('awaiting_approval');
    await tick();
    expect(await silencesOf(asked.id, SERVER)).toEqual(['active']);
    await h.engine.withdraw((await h.journal.get(asked.id))!, 'ops');
    await tick();
    expect(await silencesOf(asked.id, SERVER)).toEqual(['expired']);
  });
});
