import { execFile } from 'node:child_process';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Daemon } from '../../src/daemon/start.js';
import type { Simulator } from '../../src/simulator/server.js';
import { startHarness, type Harness } from '../helpers/daemon.js';
import { requireBinary } from '../helpers/binaries.js';
import { eventually } from '../helpers/processes.js';
import { promQuery, scrapeConfig, startPrometheus } from '../helpers/prometheus.js';
import { tempDir } from '../helpers/tmp.js';

const prometheus = requireBinary('/usr/bin/prometheus', 'prometheus');
const promtool = requireBinary('/usr/bin/promtool', 'prometheus');
const skip = prometheus.skip || promtool.skip;

describe.skipIf(skip)('a real Prometheus scrapes the daemon running on the simulator', () => {
  let harness: Harness;
  let sim: Simulator;
  let daemon: Daemon;
  let prom: Awaited<ReturnType<typeof startPrometheus>>;
  let promUrl: string;
  let attackedIp: string;

  const query = (expr: string) => promQuery(promUrl, expr);

  beforeAll(async () => {
    const dir = tempDir('bmx-e2e-', 'all');
    // The simulator's clock stands still, so its history cannot change between a scrape and an assertion.
    let simNow = Date.now();
    harness = await startHarness({
      key: 'e2e-key',
      start: false,
      stateDir: join(dir, 'state'),
      simulator: { servers: 5, colocations: 1, transits: 1, attackRate: 0, seed: 5, now: () => simNow },
      config: {
        schedules: {
          servers: '*/5 * * * * *',
          firewall: '*/2 * * * * *',
          graphs: '*/30 * * * * *',
          catalog: '0 0 * * * *',
        },
        services: { colocation_ids: ['colo-1'], transit_ids: ['transit-1'] },
      },
      logLevel: 'warn',
      daemon: { schedule: true, listen: true },
    });
    sim = harness.sim;
    attackedIp = sim.state.servers.get('100003')!.ips[1]!;
    sim.state.startAttack(attackedIp);
    simNow += 10 * 60_000;
    daemon = await harness.start();
    await daemon.ready;
    const target = new URL(daemon.url).host;
    prom = await startPrometheus(prometheus.skip ? '' : prometheus.path, dir, scrapeConfig(target));
    promUrl = prom.url;
  });

  afterAll(async () => {
    await prom?.stop();
    await harness?.stop();
  });

  it('stores baremetal_servers equal to the simulator server count', async () => {
    const [sample] = await eventually('baremetal_servers', async () => {
      const r = await query('baremetal_servers');
      return r.length ? r : undefined;
    });
    expect(Number(sample!.value[1])).toBe(sim.state.servers.size);
  });

  it('stores attack events for the attacked IP only, equal to the simulator history', async () => {
    const attacked = await eventually('attack series', async () => {
      const r = await query('baremetal_firewall_attack_events_last_hour > 0');
      return r.length ? r : undefined;
    });
    expect(attacked.map((s) => s.metric.ip)).toEqual([attackedIp]);
    expect(attacked[0]!.metric).toMatchObject({ service_type: 'dedicated', service_id: '100003', job: 'baremetal' });
    // One event a minute since the attack began ten minutes ago.
    expect(Number(attacked[0]!.value[1])).toBe(11);
    expect(sim.state.eventsFor(attackedIp, 3600)).toHaveLength(11);
    const all = await query('baremetal_firewall_attack_events_last_hour');
    expect(all.length).toBe(10);
    expect((await query('baremetal_firewall_history_up == 1')).length).toBe(5 + 1 + 1);
  });

  it('scrapes an exposition that promtool check metrics finds no problem in', async () => {
    const body = await (await request(`${daemon.url}/metrics`)).body.text();
    const result = await new Promise<{ code: number; output: string }>((resolve) => {
      const child = execFile(promtool.skip ? '' : promtool.path, ['check', 'metrics'], (error, stdout, stderr) =>
        resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, output: stdout + stderr }),
      );
      child.stdin!.end(body);
    });
    expect(result).toEqual({ code: 0, output: '' });
  });
});
