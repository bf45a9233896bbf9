import { writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Daemon } from '../../src/daemon/start.js';
import type { Simulator } from '../../src/simulator/server.js';
import { startHarness, type Harness } from '../helpers/daemon.js';
import { requireBinary } from '../helpers/binaries.js';
import { dashboards, substitute } from '../helpers/dashboards.js';
import { startAlertmanager } from '../helpers/alertmanager.js';
import { eventually, freePort, startProcess } from '../helpers/processes.js';
import { TOKEN } from '../helpers/remediation.js';
import { tempDir } from '../helpers/tmp.js';

const prometheus = requireBinary('/usr/bin/prometheus', 'prometheus');
const alertmanager = requireBinary('/usr/bin/prometheus-alertmanager', 'prometheus-alertmanager');

interface Sample {
  metric: Record<string, string>;
  value: [number, string];
}

/**
 * The whole loop on loopback: the daemon on the simulator (one IP under attack), a real Prometheus loading
 * alerts/ and scraping it, a real Alertmanager routing BaremetalIpUnderAttack to the daemon's webhook.
 */
describe.skipIf(prometheus.skip || alertmanager.skip)(
  'dashboards and alerts against a real Prometheus and Alertmanager',
  () => {
    let harness: Harness;
    let sim: Simulator;
    let daemon: Daemon;
    const processes: Array<ReturnType<typeof startProcess>> = [];
    let promUrl = '';
    const attackedServer = '100003';
    const attackedIp = '198.18.0.6';

    const query = async (expr: string): Promise<Sample[]> => {
      const res = await request(`${promUrl}/api/v1/query?query=${encodeURIComponent(expr)}`);
      const body = (await res.body.json()) as { status: string; error?: string; data: { result: Sample[] } };
      if (body.status !== 'success') throw new Error(`query failed: ${body.error}`);
      return body.data.result;
    };

    beforeAll(async () => {
      const dir = tempDir('bmx-loop-', 'all');
      writeFileSync(join(dir, 'token'), TOKEN);
      harness = await startHarness({
        key: 'loop-key',
        start: false,
        stateDir: join(dir, 'state'),
        simulator: { servers: 4, colocations: 1, transits: 1, attackRate: 0 },
        logLevel: 'warn',
        daemon: { remediationTickMs: 250, schedule: true, listen: true },
        config: {
          schedules: {
            servers: '*/5 * * * * *',
            firewall: '*/2 * * * * *',
            graphs: '*/10 * * * * *',
            catalog: '*/30 * * * * *',
          },
          graphs: { types: ['port_bits'], scales: ['day', 'week'] },
          services: { colocation_ids: ['colo-1'], transit_ids: ['transit-1'] },
          remediation: {
            dry_run: false,
            auth: { bearer_token_files: [join(dir, 'token')] },
            rules: [
              {
                alertname: 'BaremetalIpUnderAttack',
                matchers: { severity: 'critical' },
                action: 'firewall_state',
                hold: '5m',
                // The verification panels read series created at 0 for a rule that verifies (issue 41).
                verify_within: '1h',
              },
            ],
          },
        },
      });
      sim = harness.sim;
      sim.state.startAttack(attackedIp);
      // The server dashboard's cancellation panel has a series to show (issue 32).
      sim.state.servers.get(attackedServer)!.cancellation = 'end';
      daemon = await harness.start();
      await daemon.ready;

      const am = await startAlertmanager(alertmanager.skip ? '' : alertmanager.path, {
        dir,
        name: 'alertmanager',
        webhookUrl: `${daemon.url}/api/v1/alertmanager`,
        tokenFile: join(dir, 'token'),
        route: `  receiver: ignore
  group_wait: 1s
  group_interval: 1s
  repeat_interval: 1h
  routes:
    - matchers: ['alertname="BaremetalIpUnderAttack"']
      receiver: baremetal
      group_by: [alertname, server_id, ip]`,
      });
      processes.push(am);
      const promPort = await freePort();
      promUrl = `http://127.0.0.1:${promPort}`;
      writeFileSync(
        join(dir, 'prometheus.yml'),
        `global: { scrape_interval: 1s, evaluation_interval: 1s }
rule_files: ['${resolve('alerts/baremetal.rules.yml')}']
alerting:
  alertmanagers: [{ static_configs: [{ targets: ['127.0.0.1:${am.port}'] }] }]
scrape_configs:
  - job_name: baremetal
    static_configs: [{ targets: ['${new URL(daemon.url).host}'] }]
`,
      );
      processes.push(
        startProcess(prometheus.skip ? '' : prometheus.path, [
          `--config.file=${join(dir, 'prometheus.yml')}`,
          `--storage.tsdb.path=${join(dir, 'tsdb')}`,
          `--web.listen-address=127.0.0.1:${promPort}`,
          '--log.level=warn',
        ]),
      );
      await eventually('Prometheus to scrape the daemon', async () =>
        (await query('up{job="baremetal"} == 1')).length === 1 ? true : undefined,
      );
    });

    afterAll(async () => {
      await Promise.all(processes.map((p) => p.stop()));
      await harness?.stop();
    });

    it('fires BaremetalIpUnderAttack for the attacked IP and no other', async () => {
      const firing = await eventually('BaremetalIpUnderAttack to fire', async () => {
        const res = await request(`${promUrl}/api/v1/alerts`);
        const body = (await res.body.json()) as {
          data: { alerts: Array<{ labels: Record<string, string>; state: string }> };
        };
        const alerts = body.data.alerts.filter(
          (a) => a.labels.alertname === 'BaremetalIpUnderAttack' && a.state === 'firing',
        );
        return alerts.length ? alerts : undefined;
      });
      expect(firing.map((a) => [a.labels.server_id, a.labels.ip])).toEqual([[attackedServer, attackedIp]]);
    });

    it('closes the loop: Prometheus → Alertmanager → webhook → the simulator switches the IP to Always On', async () => {
      await eventually('the firewall state call', async () =>
        sim.callsTo('/api/v1/dedicated/firewall/state', { ip: attackedIp, state: '1' }).length ? true : undefined,
      );
      expect(sim.callsTo('/api/v1/dedicated/firewall/state')).toEqual([
        expect.objectContaining({ params: { server_id: attackedServer, ip: attackedIp, state: '1' } }),
      ]);
      expect(sim.state.firewallSetting(attackedIp).state).toBe('1');
    });

    it('returns at least one series for every panel query and annotation of every dashboard', async () => {
      // Give the remediation panels a denial and a deferral to show, as an operator would cause them.
      const headers = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };
      await request(`${daemon.url}/api/v1/actions/powercycle`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ server_id: '999999' }),
      });
      await request(`${daemon.url}/api/v1/actions/firewall-state`, {
        method: 'POST',
        headers,
        body: JSON.stringify({ server_id: attackedServer, ip: attackedIp, state: 0 }),
      });
      const variables = { server_id: attackedServer, exporter_url: daemon.url };
      const empty: string[] = [];
      for (const { file, dashboard } of dashboards()) {
        for (const panel of dashboard.panels) {
          for (const target of panel.targets ?? []) {
            const expr = substitute(target.expr, variables);
            const result = await eventually(
              `${file} / ${panel.title}`,
              async () => {
                const r = await query(expr);
                return r.length ? r : undefined;
              },
              30_000,
            ).catch(() => [] as Sample[]);
            if (result.length === 0)
              empty.push(`${dashboard.title} (${file}) › panel "${panel.title}" ${target.refId}: ${expr}`);
          }
        }
      }
      // The annotations: the attack started minutes ago, and the two calls above were decided just now.
      for (const { file, dashboard } of dashboards()) {
        for (const annotation of dashboard.annotations.list) {
          const expr = substitute(annotation.expr, variables);
          const result = await eventually(
            `${file} / annotation ${annotation.name}`,
            async () => {
              const r = await query(expr);
              return r.length ? r : undefined;
            },
            30_000,
          ).catch(() => [] as Sample[]);
          if (result.length === 0)
            empty.push(`${dashboard.title} (${file}) › annotation "${annotation.name}": ${expr}`);
        }
      }
      expect(empty, `panels and annotations whose query returned nothing:\n${empty.join('\n')}`).toEqual([]);
    });

    it('serves the images the server dashboard shows', async () => {
      for (const scale of ['day', 'week']) {
        const res = await request(`${daemon.url}/graphs/dedicated/${attackedServer}/port_bits/${scale}.png`);
        expect(res.statusCode).toBe(200);
        expect(res.headers['content-type']).toBe('image/png');
        await res.body.arrayBuffer();
      }
    });
  },
);
