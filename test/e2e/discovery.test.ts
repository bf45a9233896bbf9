/**
 * Debian's Prometheus discovers the servers through `http_sd_configs` exactly as examples/prometheus.yml
 * configures it (only the host names replaced), and relabels them: the ICMP probe's target and instance are
 * the bare main IP, TCP and node_exporter get `ip:port`, every target carries server_id/account/location.
 * An excluded server is no target. The daemon asks for credentials, which Prometheus sends.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accountOf, startHarness, type Harness } from '../helpers/daemon.js';
import { requireBinary } from '../helpers/binaries.js';
import { eventually, freePort, startProcess } from '../helpers/processes.js';
import { TOKEN } from '../helpers/remediation.js';
import { tempDir } from '../helpers/tmp.js';

const prometheus = requireBinary('/usr/bin/prometheus', 'prometheus');

interface ActiveTarget {
  scrapePool: string;
  labels: Record<string, string>;
  discoveredLabels: Record<string, string>;
}

describe.skipIf(prometheus.skip)('Prometheus discovers the servers through GET /api/v1/discovery', () => {
  let harness: Harness;
  let prom: ReturnType<typeof startProcess>;
  let promUrl: string;

  beforeAll(async () => {
    const dir = tempDir('bmx-e2e-sd-');
    harness = await startHarness({
      key: 'e2e-sd-key',
      simulator: { servers: 4, colocations: 0, transits: 0, attackRate: 0, seed: 8 },
      remediationAuth: true,
      config: ({ stateDir }) => ({
        web: { auth: { bearer_token_files: [join(stateDir, 'token')] } },
        servers: { exclude: [{ id: '100003' }] },
      }),
      logLevel: 'warn',
      daemon: { initialPolls: false, listen: true },
    });
    // The first list is read before Prometheus starts: its first discovery is not a 503.
    await accountOf(harness.daemon, 'default').polls.run('servers');
    const tokenFile = join(dir, 'token');
    writeFileSync(tokenFile, TOKEN);
    const exporter = new URL(harness.daemon.url).host;
    // The shipped example, pointed at this daemon (with its token) and at a blackbox_exporter that is not there.
    const example = readFileSync('examples/prometheus.yml', 'utf8')
      .replace('../alerts/baremetal.rules.yml', resolve('alerts/baremetal.rules.yml'))
      .replaceAll('baremetal-exporter:9877', exporter)
      .replaceAll('blackbox-exporter:9115', '127.0.0.1:9')
      .replaceAll(
        /( {6}- url: http:\/\/[^\n]+\n)/g,
        // `type: Bearer` spelled out: Prometheus 2.42's HTTP SD sends the bare token without it.
        `$1        authorization: { type: Bearer, credentials_file: ${tokenFile} }\n`,
      )
      .replace(
        /(static_configs:\n {6}- targets: \['127\.0\.0\.1:\d+'\]\n)/,
        `$1    authorization: { credentials_file: ${tokenFile} }\n`,
      );
    writeFileSync(join(dir, 'prometheus.yml'), example);
    const port = await freePort();
    promUrl = `http://127.0.0.1:${port}`;
    prom = startProcess(prometheus.skip ? '' : prometheus.path, [
      `--config.file=${join(dir, 'prometheus.yml')}`,
      `--storage.tsdb.path=${join(dir, 'tsdb')}`,
      `--web.listen-address=127.0.0.1:${port}`,
      '--log.level=warn',
    ]);
  });

  afterAll(async () => {
    await prom?.stop();
    await harness?.stop();
  });

  const targets = () =>
    eventually(`Prometheus to discover the servers (${prom.output()})`, async () => {
      const res = await request(`${promUrl}/api/v1/targets?state=active`).catch(() => undefined);
      if (res?.statusCode !== 200) return undefined;
      const body = (await res.body.json()) as { data: { activeTargets: ActiveTarget[] } };
      const pools = new Set(body.data.activeTargets.map((t) => t.scrapePool));
      return ['baremetal', 'blackbox-icmp', 'blackbox-tcp', 'node'].every((p) => pools.has(p))
        ? body.data.activeTargets
        : undefined;
    });

  it('relabels every in-scope server into the ICMP, TCP and node jobs', async () => {
    const active = await targets();
    const sim = harness.sim.state;
    const inScope = [...sim.servers.values()].filter((s) => s.serverId !== '100003');
    const expected = (pool: string, target: (ip: string) => string) =>
      inScope
        .map((s) => ({
          pool,
          instance: target(s.ips[0]!),
          server_id: s.serverId,
          account: 'default',
          location: s.location,
        }))
        .sort((a, b) => a.server_id.localeCompare(b.server_id));
    const seen = (pool: string) =>
      active
        .filter((t) => t.scrapePool === pool)
        .map((t) => ({
          pool,
          instance: t.labels.instance,
          server_id: t.labels.server_id,
          account: t.labels.account,
          location: t.labels.location,
        }))
        .sort((a, b) => a.server_id!.localeCompare(b.server_id!));
    expect({
      icmp: seen('blackbox-icmp'),
      tcp: seen('blackbox-tcp'),
      node: seen('node'),
    }).toEqual({
      icmp: expected('blackbox-icmp', (ip) => ip),
      tcp: expected('blackbox-tcp', (ip) => `${ip}:22`),
      node: expected('node', (ip) => `${ip}:9100`),
    });
    // The probe asks blackbox for the bare IP, and the meta labels arrive as the daemon serves them.
    const icmp = active.find((t) => t.scrapePool === 'blackbox-icmp' && t.labels.server_id === '100001')!;
    const first = sim.servers.get('100001')!;
    expect(icmp.discoveredLabels).toMatchObject({
      __param_module: 'icmp',
      __meta_baremetal_hostname: first.hostname,
      __meta_baremetal_ips: first.ips.join(','),
      __meta_baremetal_status: 'online',
    });
    expect(icmp.labels.__param_target ?? icmp.discoveredLabels.__address__).toBe(first.ips[0]);
    expect(harness.sim.callsTo('/api/v1/dedicated/firewall', { server_id: '100003' })).toHaveLength(0);
  });
});
