import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AlertmanagerClient } from '../../src/alertmanager/client.js';
import { AlertmanagerError } from '../../src/errors.js';
import { startQuietAlertmanager } from '../helpers/alertmanager.js';
import { requireBinary } from '../helpers/binaries.js';
import { eventually } from '../helpers/processes.js';

const binary = requireBinary('/usr/bin/prometheus-alertmanager', 'prometheus-alertmanager');

describe.skipIf(binary.skip)("the Alertmanager client against Debian's Alertmanager", () => {
  let am: Awaited<ReturnType<typeof startQuietAlertmanager>>['am'];
  let client: AlertmanagerClient;
  const outcomes: string[] = [];

  beforeAll(async () => {
    ({ am, client } = await startQuietAlertmanager(binary.skip ? '' : binary.path, 'bmx-am-client-', (operation, ok) =>
      outcomes.push(`${operation}:${ok}`),
    ));
    const res = await request(`${am.url}/api/v2/alerts`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([{ labels: { alertname: 'ServerDown', server_id: '42' } }]),
    });
    await res.body.dump();
  });
  afterAll(async () => {
    await client?.close();
    await am?.stop();
  });

  it('reads the alerts, silences one (the silence listed on the alert) and expires the silence', async () => {
    const [down] = await eventually('the alert to be listed', async () => {
      const alerts = await client.alerts();
      return alerts.some((a) => a.labels.alertname === 'ServerDown') ? alerts : undefined;
    });
    expect(down).toMatchObject({ labels: { alertname: 'ServerDown', server_id: '42' } });
    const id = await client.createSilence({
      matchers: [{ name: 'server_id', value: '42', isRegex: false, isEqual: true }],
      startsAt: Date.now(),
      endsAt: Date.now() + 600_000,
      createdBy: 'baremetal-exporter',
      comment: 'test',
    });
    await eventually('the alert to be silenced', async () =>
      (await client.alerts()).some((a) => a.silencedBy.includes(id)) ? true : undefined,
    );
    await client.expireSilence(id);
    await eventually('the silence to be gone from the alert', async () =>
      (await client.alerts()).every((a) => !a.silencedBy.includes(id)) ? true : undefined,
    );
    expect(outcomes).toContain('create_silence:true');
    expect(outcomes).toContain('expire_silence:true');
  });

  it('fails with AlertmanagerError, no crash, once Alertmanager is stopped', async () => {
    await am.stop();
    await expect(client.alerts()).rejects.toBeInstanceOf(AlertmanagerError);
    expect(outcomes.at(-1)).toBe('get_alerts:false');
  });
});
