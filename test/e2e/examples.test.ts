import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { parse, stringify } from 'yaml';
import { requireBinary } from '../helpers/binaries.js';
import { eventually, freePort, startProcess } from '../helpers/processes.js';
import { tempDir } from '../helpers/tmp.js';

const amtool = requireBinary('/usr/bin/amtool', 'prometheus-alertmanager');
const promtool = requireBinary('/usr/bin/promtool', 'prometheus');
const alertmanager = requireBinary('/usr/bin/prometheus-alertmanager', 'prometheus-alertmanager');
const check = (bin: string, args: string[]) =>
  execFileSync(bin, args, { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'] });

describe('shipped examples', () => {
  it.skipIf(amtool.skip).each(['examples/alertmanager.yml', 'examples/ha/alertmanager.yml'])(
    '%s passes amtool check-config',
    (file) => {
      expect(check(amtool.skip ? '' : amtool.path, ['check-config', file])).toContain('SUCCESS');
    },
  );
  it.skipIf(promtool.skip).each(['examples/prometheus.yml', 'examples/ha/prometheus.yml'])(
    '%s passes promtool check config (its rule files too)',
    (file) => {
      expect(check(promtool.skip ? '' : promtool.path, ['check', 'config', file])).toMatch(
        /SUCCESS: 1 rule files found[\s\S]*SUCCESS: \d+ rules found/,
      );
    },
  );
});

/** The alerts the exporter's remediation handles, as the shipped rules name them. */
const HANDLED = ['BaremetalServerUnreachable', 'BaremetalIpUnderAttack'];

describe('the shipped routing pages the on-call for every alert the exporter handles (issue 49)', () => {
  it
    .skipIf(amtool.skip)
    .each(
      ['examples/alertmanager.yml', 'examples/ha/alertmanager.yml'].flatMap((file) => HANDLED.map((a) => [file, a])),
    )('%s routes %s to the remediation receiver and to the on-call (amtool config routes test)', (file, alertname) => {
    const out = check(amtool.skip ? '' : amtool.path, [
      'config',
      'routes',
      'test',
      `--config.file=${file}`,
      `alertname=${alertname}`,
      'server_id=100002',
      'ip=198.18.0.1',
    ]);
    expect(out.trim().split(',').sort()).toEqual(['baremetal-remediation', 'oncall']);
  });

  it.skipIf(alertmanager.skip)(
    "Debian's Alertmanager with examples/alertmanager.yml notifies both receivers of a handled alert",
    async () => {
      /** A webhook receiver on loopback: the alertnames of the notifications it got. */
      const receiver = async () => {
        const got: string[] = [];
        const server: Server = createServer((req, res) => {
          let body = '';
          req.on('data', (d) => (body += String(d)));
          req.on('end', () => {
            const alerts = (JSON.parse(body) as { alerts: Array<{ labels: { alertname: string } }> }).alerts;
            got.push(...alerts.map((a) => a.labels.alertname));
            res.end();
          });
        });
        await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
        const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
        return { got, url, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
      };
      const [oncall, remediation] = await Promise.all([receiver(), receiver()]);
      const dir = tempDir('bmx-am-routes-');
      writeFileSync(join(dir, 'token'), 'a-token-of-24-characters');
      // The shipped routes as they are; only the receivers' ends point at the loopback servers.
      const config = parse(readFileSync('examples/alertmanager.yml', 'utf8')) as {
        receivers: Array<{ name: string; webhook_configs?: Array<Record<string, unknown>> }>;
      };
      for (const r of config.receivers) {
        if (r.name === 'oncall') r.webhook_configs = [{ url: oncall.url }];
        if (r.name === 'baremetal-remediation')
          r.webhook_configs = r.webhook_configs!.map((w) => ({
            ...w,
            url: remediation.url,
            http_config: { authorization: { credentials_file: join(dir, 'token') } },
          }));
      }
      writeFileSync(join(dir, 'alertmanager.yml'), stringify(config));
      const port = await freePort();
      const am = startProcess(alertmanager.skip ? '' : alertmanager.path, [
        `--config.file=${join(dir, 'alertmanager.yml')}`,
        `--storage.path=${join(dir, 'data')}`,
        `--web.listen-address=127.0.0.1:${port}`,
        '--cluster.listen-address=',
        '--log.level=warn',
      ]);
      try {
        const url = `http://127.0.0.1:${port}`;
        await eventually('Alertmanager to start', async () =>
          (await request(`${url}/-/ready`)).statusCode === 200 ? true : undefined,
        );
        const labels = { alertname: 'BaremetalServerUnreachable', account: 'default', server_id: '100002' };
        const res = await request(`${url}/api/v2/alerts`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify([{ labels }]),
        });
        await res.body.dump();
        expect(res.statusCode).toBe(200);
        // Both routes wait group_wait (10s) before their first notification.
        await eventually(
          'a notification at both receivers',
          async () => (oncall.got.length > 0 && remediation.got.length > 0 ? true : undefined),
          45_000,
        );
        expect(oncall.got).toContain('BaremetalServerUnreachable');
        expect(remediation.got).toContain('BaremetalServerUnreachable');
      } finally {
        await am.stop();
        await Promise.all([oncall.close(), remediation.close()]);
      }
    },
  );
});

describe.skipIf(alertmanager.skip)('examples/ha: two Alertmanagers started as its README says', () => {
  it('form one cluster of two peers', async () => {
    const dir = tempDir('bmx-am-ha-');
    writeFileSync(join(dir, 'token'), 'a-token-of-24-characters');
    const config = join(dir, 'alertmanager.yml');
    writeFileSync(
      config,
      readFileSync('examples/ha/alertmanager.yml', 'utf8').replaceAll(
        '/etc/alertmanager/baremetal-token',
        join(dir, 'token'),
      ),
    );
    const [webA, clusterA, webB, clusterB] = await Promise.all([freePort(), freePort(), freePort(), freePort()]);
    const peer = (name: string, web: number, cluster: number, other: number) =>
      startProcess(alertmanager.skip ? '' : alertmanager.path, [
        `--config.file=${config}`,
        `--storage.path=${join(dir, name)}`,
        `--web.listen-address=127.0.0.1:${web}`,
        `--cluster.listen-address=127.0.0.1:${cluster}`,
        `--cluster.peer=127.0.0.1:${other}`,
        '--log.level=warn',
      ]);
    const peers = [peer('a', webA, clusterA, clusterB), peer('b', webB, clusterB, clusterA)];
    try {
      for (const web of [webA, webB]) {
        const names = await eventually(`Alertmanager on ${web} to see both peers`, async () => {
          const res = await request(`http://127.0.0.1:${web}/api/v2/status`);
          const body = (await res.body.json()) as { cluster?: { peers?: Array<{ address: string }> } };
          const addresses = (body.cluster?.peers ?? []).map((p) => p.address).sort();
          return addresses.length === 2 ? addresses : undefined;
        });
        expect(names).toEqual([`127.0.0.1:${clusterA}`, `127.0.0.1:${clusterB}`].sort());
      }
    } finally {
      await Promise.all(peers.map((p) => p.stop()));
    }
  });
});
