import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Daemon } from '../../src/daemon/start.js';
import type { Simulator } from '../../src/simulator/server.js';
import { requireBinary } from '../helpers/binaries.js';
import { startHarness, type Harness } from '../helpers/daemon.js';
import { eventually } from '../helpers/processes.js';
import { promQuery, scrapeConfig, startPrometheus } from '../helpers/prometheus.js';
import { tempDir } from '../helpers/tmp.js';

const prometheus = requireBinary('/usr/bin/prometheus', 'prometheus');

/** An IP the colocation service has never reported: its attack series is new when its first events arrive. */
const NEW_IP = '203.0.113.77';

// Debian's Prometheus (2.42) ingests no created timestamps: increase() sees a new counter's first events only
// if a scrape saw the series at 0 before them (docs/metrics-counters.md).
describe.skipIf(prometheus.skip)('a real Prometheus sees the first events of a new attack series', () => {
  let harness: Harness;
  let sim: Simulator;
  let daemon: Daemon;
  let prom: Awaited<ReturnType<typeof startPrometheus>>;
  let promUrl: string;
  const query = (expr: string) => promQuery(promUrl, expr);
  const selector = `baremetal_firewall_attack_events_total{service_type="colocation",service_id="colo-1",ip="${NEW_IP}"}`;

  beforeAll(async () => {
    const dir = tempDir('bmx-e2e-counters-', 'all');
    harness = await startHarness({
      key: 'e2e-key',
      stateDir: join(dir, 'state'),
      simulator: { servers: 2, colocations: 1, transits: 0, attackRate: 0, seed: 3 },
      config: {
        schedules: {
          servers: '*/5 * * * * *',
          firewall: '*/2 * * * * *',
          graphs: '0 0 * * * *',
          catalog: '0 0 * * * *',
        },
        services: { colocation_ids: ['colo-1'] },
      },
      logLevel: 'warn',
      daemon: { schedule: true, listen: true },
    });
    ({ sim, daemon } = harness);
    await daemon.ready;
    prom = await startPrometheus(prometheus.skip ? '' : prometheus.path, dir, scrapeConfig(new URL(daemon.url).host));
    promUrl = prom.url;
  });

  afterAll(async () => {
    await prom?.stop();
    await harness?.stop();
  });

  it('increase() over 10m counts the 3 events that created the series', async () => {
    expect(await query(selector)).toEqual([]);
    sim.state.injectEvents('colocation', 'colo-1', [
      { id: 'first-1', ip: NEW_IP },
      { id: 'first-2', ip: NEW_IP },
      { id: 'first-3', ip: NEW_IP },
    ]);
    await eventually('the new series at 3 in Prometheus', async () =>
      (await query(`${selector} == 3`)).length === 1 ? true : undefined,
    );
    const [increase] = await query(`increase(${selector}[10m])`);
    expect(Number(increase!.value[1])).toBeGreaterThanOrEqual(2.5);
    // The series was stored at 0 first: what a dashboard panel's increase() or rate() needs.
    const [lowest] = await query(`min_over_time(${selector}[10m])`);
    expect(Number(lowest!.value[1])).toBe(0);
  });

  it('stores the _created samples of the OpenMetrics scrape (2.42 keeps them as a series of their own)', async () => {
    const created = await eventually('the _created series', async () => {
      const r = await query(`baremetal_firewall_attack_events_created{ip="${NEW_IP}"}`);
      return r.length ? r : undefined;
    });
    const at = Number(created[0]!.value[1]);
    expect(at).toBeGreaterThan(Date.now() / 1000 - 600);
    expect(at).toBeLessThanOrEqual(Date.now() / 1000);
  });
});
