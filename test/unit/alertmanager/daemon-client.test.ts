/**
 * The daemon's one Alertmanager client (daemon/alertmanager.ts): none without remediation.alertmanager (and no
 * series), and with it every request counted by operation and outcome, `baremetal_alertmanager_up{url}` set.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../src/config/load.js';
import { alertmanagerClient } from '../../../src/daemon/alertmanager.js';
import { captureLogger } from '../../helpers/logger.js';
import { freshMetrics, seriesValue } from '../../helpers/metrics.js';

const env = { BAREMETAL_API_KEY: 'env-key' };
const base = 'upstream:\n  base_url: https://api.provider.test\n';

describe('the daemon’s Alertmanager client', () => {
  it('is none without remediation.alertmanager, and exposes no series', async () => {
    const { registry, metrics } = freshMetrics();
    expect(alertmanagerClient(parseConfigText(base, env), metrics, captureLogger().logger)).toBeUndefined();
    expect(await registry.getSingleMetricAsString('baremetal_alertmanager_up')).not.toMatch(
      /^baremetal_alertmanager_up\{/m,
    );
  });

  it('counts each request and sets up{url} from its outcome', async () => {
    let fail = true;
    const server = createServer((_req, res) => {
      res.writeHead(fail ? 500 : 200, { 'content-type': 'application/json' }).end(fail ? 'down' : '[]');
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const { registry, metrics } = freshMetrics();
      const config = parseConfigText(`${base}remediation:\n  alertmanager:\n    url: ${url}\n`, env);
      const client = alertmanagerClient(config, metrics, captureLogger().logger)!;
      const requests = (outcome: string) =>
        seriesValue(registry, 'baremetal_alertmanager_requests_total', { operation: 'get_alerts', outcome });
      expect([await requests('success'), await requests('failure')]).toEqual([0, 0]);
      await expect(client.alerts()).rejects.toThrow('500 down');
      expect(await seriesValue(registry, 'baremetal_alertmanager_up', { url })).toBe(0);
      fail = false;
      expect(await client.alerts()).toEqual([]);
      expect(await seriesValue(registry, 'baremetal_alertmanager_up', { url })).toBe(1);
      expect([await requests('success'), await requests('failure')]).toEqual([1, 1]);
      await client.close();
    } finally {
      server.close();
    }
  });
});
