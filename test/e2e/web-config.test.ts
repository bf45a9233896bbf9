import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import bcrypt from 'bcryptjs';
import { Agent, request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Simulator } from '../../src/simulator/server.js';
import { requireBinary } from '../helpers/binaries.js';
import { makeTestPki } from '../helpers/certs.js';
import { startDaemonProcess, type DaemonProcess, type RunProcess } from '../helpers/daemon.js';
import { eventually, freePort, startProcess } from '../helpers/processes.js';
import { promQuery } from '../helpers/prometheus.js';
import { tempDir } from '../helpers/tmp.js';

const prometheus = requireBinary('/usr/bin/prometheus', 'prometheus');
const API_KEY = 'web-config-key-4b8d1e';
const PASSWORD = 'scrape-password-91c2';

describe.skipIf(prometheus.skip)(
  'the daemon with an exporter-toolkit web config on two addresses, scraped by a real Prometheus',
  () => {
    let harness: DaemonProcess;
    let sim: Simulator;
    let daemon: RunProcess;
    let prom: ReturnType<typeof startProcess>;
    let promUrl: string;
    let ports: number[];
    let dir: string;
    const pki = makeTestPki({ client: true });
    const withClientCert = new Agent({ connect: { ca: pki.ca, cert: pki.clientCert, key: pki.clientKey } });
    const withoutClientCert = new Agent({ connect: { ca: pki.ca } });
    const basic = `Basic ${Buffer.from(`prom:${PASSWORD}`).toString('base64')}`;

    const query = (expr: string) => promQuery(promUrl, expr);

    beforeAll(async () => {
      dir = tempDir('bmx-e2e-webconfig-', 'all');
      harness = await startDaemonProcess({
        key: API_KEY,
        stateDir: join(dir, 'state'),
        simulator: { servers: 4, colocations: 1, transits: 1, attackRate: 0 },
        config: { services: { colocation_ids: ['colo-1'], transit_ids: ['transit-1'] } },
      });
      sim = harness.sim;
      for (const [name, text] of Object.entries({
        'ca.pem': pki.ca,
        'server.pem': pki.cert,
        'server.key': pki.key,
        'client.pem': pki.clientCert,
        'client.key': pki.clientKey,
      }))
        writeFileSync(join(dir, name), text);
      writeFileSync(
        join(dir, 'web.yml'),
        `tls_server_config:
  cert_file: ${join(dir, 'server.pem')}
  key_file: ${join(dir, 'server.key')}
  client_ca_file: ${join(dir, 'ca.pem')}
  client_auth_type: RequireAndVerifyClientCert
  min_version: TLS12
http_server_config:
  headers: { X-Frame-Options: deny }
basic_auth_users:
  prom: "${bcrypt.hashSync(PASSWORD, 4)}"
`,
      );
      ports = [await freePort(), await freePort()];
      // The flags' addresses replace web.listen_address; the web config file brings TLS and basic auth.
      daemon = harness.spawn([
        `--web.config.file=${join(dir, 'web.yml')}`,
        ...ports.map((port) => `--web.listen-address=127.0.0.1:${port}`),
        '--log.level=info',
      ]);
      const promPort = await freePort();
      promUrl = `http://127.0.0.1:${promPort}`;
      const tls = `{ ca_file: ${join(dir, 'ca.pem')}, cert_file: ${join(dir, 'client.pem')}, key_file: ${join(dir, 'client.key')} }`;
      const auth = `{ username: prom, password: ${PASSWORD} }`;
      writeFileSync(
        join(dir, 'prometheus.yml'),
        `global: { scrape_interval: 1s, evaluation_interval: 1s }
scrape_configs:
  - job_name: baremetal
    scheme: https
    tls_config: ${tls}
    basic_auth: ${auth}
    static_configs: [{ targets: [${ports.map((p) => `'127.0.0.1:${p}'`).join(', ')}] }]
  - job_name: no-client-cert
    scheme: https
    tls_config: { ca_file: ${join(dir, 'ca.pem')} }
    basic_auth: ${auth}
    static_configs: [{ targets: ['127.0.0.1:${ports[0]}'] }]
`,
      );
      prom = startProcess(prometheus.skip ? '' : prometheus.path, [
        `--config.file=${join(dir, 'prometheus.yml')}`,
        `--storage.tsdb.path=${join(dir, 'tsdb')}`,
        `--web.listen-address=127.0.0.1:${promPort}`,
        '--log.level=warn',
      ]);
      await eventually(`Prometheus to scrape both addresses (${prom.output()}) (${daemon.output()})`, async () =>
        (await query('up{job="baremetal"} == 1')).length === 2 ? true : undefined,
      );
    });

    afterAll(async () => {
      await prom?.stop();
      daemon?.child.kill('SIGTERM');
      await daemon?.exited;
      await harness?.stop();
      await withClientCert.close();
      await withoutClientCert.close();
    });

    it('stores baremetal_ series scraped over TLS with a client certificate and basic auth, on each address', async () => {
      const servers = await eventually('baremetal_servers from both addresses', async () => {
        const r = await query('baremetal_servers{job="baremetal"}');
        return r.length === 2 ? r : undefined;
      });
      expect(servers.map((s) => [s.metric.instance, s.value[1]]).sort()).toEqual(
        ports.map((port) => [`127.0.0.1:${port}`, String(sim.state.servers.size)]).sort(),
      );
    });

    it('fails the scrape that presents no client certificate', async () => {
      const [sample] = await eventually('a scrape by the job without a client certificate', async () => {
        const r = await query('up{job="no-client-cert"}');
        return r.length === 1 ? r : undefined;
      });
      expect(sample!.value[1]).toBe('0');
      const targets = (await (await request(`${promUrl}/api/v1/targets?state=active`)).body.json()) as {
        data: { activeTargets: Array<{ scrapePool: string; lastError: string }> };
      };
      const target = targets.data.activeTargets.find((t) => t.scrapePool === 'no-client-cert');
      expect(target?.lastError).toMatch(/remote error: tls: certificate required/);
    });

    it.each([0, 1])(
      'address %i: 200 with both, 401 without basic auth (with the configured header), refused without the certificate',
      async (i) => {
        const url = `https://127.0.0.1:${ports[i]}/metrics`;
        const ok = await request(url, { dispatcher: withClientCert, headers: { authorization: basic } });
        expect((await ok.body.text()).includes('baremetal_servers')).toBe(true);
        expect([ok.statusCode, ok.headers['x-frame-options']]).toEqual([200, 'deny']);
        const noAuth = await request(url, { dispatcher: withClientCert });
        await noAuth.body.text();
        expect([noAuth.statusCode, noAuth.headers['x-frame-options']]).toEqual([401, 'deny']);
        await expect(
          request(url, { dispatcher: withoutClientCert, headers: { authorization: basic } }).then((r) => r.body.text()),
        ).rejects.toThrow();
      },
    );

    it('keeps the previous web config when a reload finds the new one invalid', async () => {
      writeFileSync(join(dir, 'web.yml'), 'tls_server_config: { cert_file: /nonexistent.pem }\n');
      daemon.child.kill('SIGHUP');
      await eventually(
        `the reload failure log line (${daemon.output()})`,
        async () => (daemon.output().includes('web config reload failed') ? true : undefined),
        10_000,
      );
      expect(daemon.output()).toContain('tls_server_config.cert_file: cannot read /nonexistent.pem (ENOENT)');
      const still = await request(`https://127.0.0.1:${ports[0]}/metrics`, {
        dispatcher: withClientCert,
        headers: { authorization: basic },
      });
      await still.body.text();
      expect(still.statusCode).toBe(200);
    });
  },
);
