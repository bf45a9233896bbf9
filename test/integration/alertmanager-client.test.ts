import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AlertmanagerClient } from '../../src/alertmanager/client.js';
import { AlertmanagerError } from '../../src/errors.js';
import { startAlertmanager } from '../helpers/alertmanager.js';
import { requireBinary } from '../helpers/binaries.js';
import { captureLogger } from '../helpers/logger.js';
import { eventually } from '../helpers/processes.js';
import { tempDir } from '../helpers/tmp.js';

const binary = requireBinary('/usr/bin/prometheus-alertmanager', 'prometheus-alertmanager');

describe.skipIf(binary.skip)("the Alertmanager client against Debian's Alertmanager", () => {
  let am: Awaited<ReturnType<typeof startAlertmanager>>;
  let client: AlertmanagerClient;
  const outcomes: string[] = [];

  beforeAll(async () => {
    const dir = tempDir('bmx-am-client-', 'all');
    writeFileSync(join(dir, 'token'), 'unused-token-0123456789\n');
    am = await startAlertmanager(binary.skip ? '' : binary.path, {
      dir,
      name: 'am',
      webhookUrl: 'http://127.0.0.1:9/unused',
      tokenFile: join(dir, 'token'),
      route: '  receiver: ignore',
    });
    client = new AlertmanagerClient({
      config: { url: am.url, timeoutMs: 5000, maxResponseBytes: 1 << 20, tls: { insecureSkipVerify: false } },
      logger: captureLogger().logger,
      onOutcome: (operation, ok) => outcomes.push(`${operation}:${ok}`),
    });
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
