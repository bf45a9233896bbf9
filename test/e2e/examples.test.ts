import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
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
