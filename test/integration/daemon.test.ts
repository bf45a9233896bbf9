import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { SimulatorServerOptions } from '../../src/simulator/server.js';
import { accountOf, startHarness } from '../helpers/daemon.js';
import { seriesOf, seriesValue } from '../helpers/metrics.js';
import { tempDir } from '../helpers/tmp.js';

const KEY = 'integration-key-5f1c2d9e';
const NOW = Date.UTC(2026, 10, 21, 12, 0, 0);

async function setup(simOptions: SimulatorServerOptions = {}, stateDir = tempDir()) {
  const h = await startHarness({
    key: KEY,
    stateDir,
    simulator: { servers: 6, colocations: 2, transits: 1, attackRate: 0.25, seed: 11, now: () => NOW, ...simOptions },
    config: {
      upstream: { concurrency: 4, retries: 1 },
      graphs: { types: ['port_bits', 'port_errors'], scales: ['day'] },
      services: { colocation_ids: ['colo-1', 'colo-2'], transit_ids: ['transit-1'] },
    },
    daemon: { now: () => NOW, initialPolls: false },
  });
  return { daemon: h.daemon, sim: h.sim, log: h.log, stateDir, stop: h.stop };
}

describe('daemon against the simulator', () => {
  it('exposes the simulator state: server count and events per IP of every service', async () => {
    const { daemon, sim } = await setup();
    expect(await accountOf(daemon, 'default').polls.run('servers')).toBe('success');
    expect(await accountOf(daemon, 'default').polls.run('firewall')).toBe('success');
    expect(await seriesValue(daemon.registry, 'baremetal_servers')).toBe(6);

    // Every attack series is new: exposed at 0, its events added at the next poll (docs/metrics-counters.md).
    const born = await seriesOf(daemon.registry, 'baremetal_firewall_attack_events_total');
    expect(born.length).toBeGreaterThan(0);
    for (const labels of born)
      expect(await seriesValue(daemon.registry, 'baremetal_firewall_attack_events_total', labels as never)).toBe(0);
    expect(await accountOf(daemon, 'default').polls.run('firewall')).toBe('success');

    let attacked = 0;
    for (const service of sim.state.services.values()) {
      for (const ip of service.ips) {
        const expected = sim.state.eventsFor(ip, 3600).length;
        attacked += expected > 0 ? 1 : 0;
        const labels = { service_type: service.serviceType, service_id: service.serviceId, ip };
        const value = await seriesValue(daemon.registry, 'baremetal_firewall_attack_events_last_hour', labels);
        // Colocation and transit IPs are known only from their events.
        expect(value ?? 0, `${service.serviceType}/${service.serviceId} ${ip}`).toBe(expected);
        expect((await seriesValue(daemon.registry, 'baremetal_firewall_attack_events_total', labels)) ?? 0).toBe(
          expected,
        );
      }
    }
    expect(attacked).toBeGreaterThan(0);
    expect((await seriesOf(daemon.registry, 'baremetal_firewall_history_up')).length).toBe(6 + 2 + 1);
    expect(sim.callsTo('/api/v1/dedicated/firewall').every((c) => c.params.scale === 'hour')).toBe(true);
  });

  it('serves the exposition rendered after the polls, with every core metric', async () => {
    const { daemon } = await setup();
    for (const job of ['servers', 'firewall', 'graphs', 'catalog'] as const)
      await accountOf(daemon, 'default').polls.run(job);
    await daemon.exposition.render();
    const body = (await daemon.app.inject('/metrics')).body;
    for (const name of [
      'baremetal_api_up{account="default"} 1',
      'baremetal_api_requests_total{account="default",operation="list_servers",outcome="success"} 1',
      'baremetal_api_request_duration_seconds_count{account="default",operation="graphs"} 12',
      'baremetal_poll_last_success_timestamp_seconds{account="default",poll="firewall"} 1795262400',
      'baremetal_poll_duration_seconds{account="default",poll="graphs"}',
      'baremetal_poll_runs_total{account="default",poll="catalog",outcome="success"} 1',
      'baremetal_servers{account="default"} 6',
      'baremetal_server_info{account="default",server_id="100001",hostname="srv100001.example.net",ip="198.18.0.1"',
      'baremetal_firewall_attack_events_last_hour{account="default",service_type="transit",service_id="transit-1"',
      'baremetal_firewall_history_up{account="default",service_type="colocation",service_id="colo-2"} 1',
      'baremetal_graph_last_success_timestamp_seconds{account="default",server_id="100006",graph="port_errors",scale="day"} 1795262400',
      'baremetal_graph_images{account="default"} 12',
      'baremetal_catalog_operating_systems{account="default"} 5',
      'baremetal_catalog_locations{account="default"} 4',
    ])
      expect(body).toContain(name);
    const png = await daemon.app.inject('/graphs/dedicated/100003/port_errors/day.png');
    expect(png.statusCode).toBe(200);
    expect(png.headers['content-type']).toBe('image/png');
  });

  it('removes every series of a server that disappears, and its graphs', async () => {
    const { daemon, sim, stateDir } = await setup({ attackRate: 0 });
    sim.state.startAttack(sim.state.servers.get('100002')!.ips[0]!);
    for (const job of ['servers', 'firewall', 'graphs'] as const) await accountOf(daemon, 'default').polls.run(job);
    expect(existsSync(join(stateDir, 'graphs/default/dedicated/100002/port_bits-day.png'))).toBe(true);
    sim.state.removeServer('100002');
    await accountOf(daemon, 'default').polls.run('servers');
    for (const metric of [
      'baremetal_server_info',
      'baremetal_server_ips',
      'baremetal_graph_last_success_timestamp_seconds',
    ]) {
      expect(
        (await seriesOf(daemon.registry, metric)).map((l) => l.server_id),
        metric,
      ).not.toContain('100002');
    }
    for (const metric of [
      'baremetal_firewall_attack_events_last_hour',
      'baremetal_firewall_attack_events_total',
      'baremetal_firewall_history_up',
    ]) {
      expect(
        (await seriesOf(daemon.registry, metric)).map((l) => l.service_id),
        metric,
      ).not.toContain('100002');
    }
    expect(await seriesValue(daemon.registry, 'baremetal_servers')).toBe(5);
    expect((await daemon.app.inject('/graphs/dedicated/100002/port_bits/day.png')).statusCode).toBe(404);
    expect(existsSync(join(stateDir, 'graphs/default/dedicated/100002'))).toBe(false);
  });

  it('fails only the server whose history reply is malformed; the job is partial', async () => {
    const { daemon } = await setup({
      faults: { malformedRate: 1, ids: ['100004'], paths: ['/api/v1/dedicated/firewall'] },
    });
    await accountOf(daemon, 'default').polls.run('servers');
    expect(await accountOf(daemon, 'default').polls.run('firewall')).toBe('partial');
    const up = Object.fromEntries(
      (await daemon.registry.getSingleMetric('baremetal_firewall_history_up')!.get()).values.map((v) => [
        v.labels.service_id,
        v.value,
      ]),
    );
    expect(up).toEqual({
      '100001': 1,
      '100002': 1,
      '100003': 1,
      '100004': 0,
      '100005': 1,
      '100006': 1,
      'colo-1': 1,
      'colo-2': 1,
      'transit-1': 1,
    });
    expect(await seriesValue(daemon.registry, 'baremetal_poll_items_failed', { poll: 'firewall' })).toBe(1);
    expect(
      await seriesValue(daemon.registry, 'baremetal_api_requests_total', {
        operation: 'firewall_history_dedicated',
        outcome: 'invalid_reply',
      }),
    ).toBe(1);
  });

  it('fails only the image that does not decode', async () => {
    const { daemon } = await setup({
      faults: { malformedRate: 1, ids: ['100003'], paths: ['/api/v1/dedicated/graphs'] },
    });
    await accountOf(daemon, 'default').polls.run('servers');
    expect(await accountOf(daemon, 'default').polls.run('graphs')).toBe('partial');
    expect(accountOf(daemon, 'default').graphStore.size).toBe(10);
    expect(
      accountOf(daemon, 'default')
        .graphStore.list()
        .map((g) => g.serverId),
    ).not.toContain('100003');
  });

  it('retries reads through transient HTML 502s and counts each attempt', async () => {
    const { daemon, sim } = await setup({ faults: { htmlErrorRate: 1, paths: ['/api/v1/dedicated'] } });
    expect(await accountOf(daemon, 'default').polls.run('servers')).toBe('failure');
    expect(sim.callsTo('/api/v1/dedicated')).toHaveLength(2);
    expect(await seriesValue(daemon.registry, 'baremetal_api_up')).toBe(0);
    expect(
      await seriesValue(daemon.registry, 'baremetal_api_requests_total', {
        operation: 'list_servers',
        outcome: 'http_error',
      }),
    ).toBe(2);
    sim.setFaults({});
    expect(await accountOf(daemon, 'default').polls.run('servers')).toBe('success');
    expect(await seriesValue(daemon.registry, 'baremetal_api_up')).toBe(1);
  });

  it('serves graphs kept on disk at once after a restart', async () => {
    const stateDir = tempDir();
    const first = await setup({}, stateDir);
    await accountOf(first.daemon, 'default').polls.run('servers');
    await accountOf(first.daemon, 'default').polls.run('graphs');
    await first.stop();
    const second = await setup({}, stateDir);
    expect((await second.daemon.app.inject('/graphs/dedicated/100001/port_bits/day.png')).statusCode).toBe(200);
    expect(second.sim.callsTo('/api/v1/dedicated/graphs')).toHaveLength(0);
  });

  it('never writes the API key to a log line, an error or /metrics', async () => {
    const { daemon, log, sim } = await setup({ faults: { errorRate: 0.5, htmlErrorRate: 0.2 } });
    for (const job of ['servers', 'firewall', 'graphs', 'catalog'] as const)
      await accountOf(daemon, 'default').polls.run(job);
    sim.setFaults({});
    await accountOf(daemon, 'default').polls.run('servers');
    await daemon.exposition.render();
    expect(log.lines.length).toBeGreaterThan(5);
    expect(log.lines.some((l) => l.includes('"level":"warn"'))).toBe(true);
    expect(log.lines.join('\n')).not.toContain(KEY);
    expect((await daemon.app.inject('/metrics')).body).not.toContain(KEY);
  });
});
