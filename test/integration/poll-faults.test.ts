/**
 * The poll side of the fault matrix (issue 8): a daemon against the simulator with one fault per row,
 * each with what it must lead to — series bounded, stale state retired, `baremetal_api_up` telling the
 * truth, a slow reply cut at the run's deadline. Polls are driven by hand; the clock is injected.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import type { Daemon } from '../../src/daemon/start.js';
import type { Simulator } from '../../src/simulator/server.js';
import { accountOf, startDaemonProcess, startHarness } from '../helpers/daemon.js';
import { seriesOf, seriesValue } from '../helpers/metrics.js';

const KEY = 'poll-faults-key-7d2a91c4';
const START = Date.UTC(2026, 10, 21, 12, 0, 0);
const HOUR = 3600_000;

/** What a row works with: the simulator, a way to (re)start the daemon, and the injected clock. */
interface Fixture {
  sim: Simulator;
  start(): Promise<Daemon>;
  stateDir: string;
  clock: { now: number };
}

async function fixture(file: Record<string, unknown> = {}): Promise<Fixture> {
  const clock = { now: START };
  const h = await startHarness({
    key: KEY,
    start: false,
    simulator: { servers: 6, colocations: 2, transits: 1, attackRate: 0, seed: 5, now: () => clock.now },
    config: {
      graphs: { types: ['port_bits'], scales: ['day'] },
      services: { colocation_ids: ['colo-1', 'colo-2'], transit_ids: ['transit-1'] },
      ...file,
      upstream: { concurrency: 4, ...(file.upstream as object | undefined) },
    },
    daemon: { now: () => clock.now, initialPolls: false },
  });
  return { sim: h.sim, start: () => h.start(), stateDir: h.stateDir, clock };
}

const metric = (d: Daemon, name: string, labels: Record<string, string> = {}) => seriesValue(d.registry, name, labels);
const seriesFor = async (d: Daemon, name: string, serviceId: string) =>
  (await seriesOf(d.registry, name)).filter((s) => s.service_id === serviceId).length;

interface Row {
  name: string;
  /** config file keys besides the defaults of `fixture` */
  file?: Record<string, unknown>;
  /** drives the fault and returns what was observed */
  scenario: (f: Fixture) => Promise<Record<string, unknown>>;
  expected: Record<string, unknown>;
}

const rows: Row[] = [
  {
    name: '20k junk IPs and 300 real ones in one colocation history → at most max_ips_per_service series, each dropped event counted once, series gone after recovery + retention',
    file: { firewall: { max_ips_per_service: 50, ip_retention: '1h' } },
    scenario: async ({ sim, start, clock }) => {
      const d = await start();
      sim.state.injectEvents('colocation', 'colo-1', [
        ...Array.from({ length: 20_000 }, (_, i) => ({ id: `junk-${i}`, ip: `junk-${i}` })),
        ...Array.from({ length: 300 }, (_, i) => ({ id: `flood-${i}`, ip: `10.9.${i >> 8}.${i & 255}` })),
      ]);
      await accountOf(d, 'default').polls.run('servers');
      const first = await accountOf(d, 'default').polls.run('firewall');
      const during = await seriesFor(d, 'baremetal_firewall_attack_events_last_hour', 'colo-1');
      await accountOf(d, 'default').polls.run('firewall');
      sim.state.clearInjectedEvents();
      clock.now += 30 * 60_000;
      await accountOf(d, 'default').polls.run('firewall');
      const withinRetention = await seriesFor(d, 'baremetal_firewall_attack_events_last_hour', 'colo-1');
      clock.now += HOUR;
      await accountOf(d, 'default').polls.run('firewall');
      return {
        first,
        during,
        invalidIp: await metric(d, 'baremetal_firewall_events_dropped_total', { reason: 'invalid_ip' }),
        ipLimit: await metric(d, 'baremetal_firewall_events_dropped_total', { reason: 'ip_limit' }),
        withinRetention,
        afterRetention: await seriesFor(d, 'baremetal_firewall_attack_events_last_hour', 'colo-1'),
        totalsAfterRetention: await seriesFor(d, 'baremetal_firewall_attack_events_total', 'colo-1'),
        up: await metric(d, 'baremetal_firewall_history_up', { service_id: 'colo-1' }),
      };
    },
    expected: {
      first: 'success',
      during: 50,
      invalidIp: 20_000,
      ipLimit: 250,
      withinRetention: 50,
      afterRetention: 0,
      totalsAfterRetention: 0,
      up: 1,
    },
  },
  {
    name: 'servers deleted while the daemon was down → their images (disk and memory) removed after the first server list',
    scenario: async ({ sim, start, stateDir }) => {
      const first = await start();
      await accountOf(first, 'default').polls.run('servers');
      await accountOf(first, 'default').polls.run('graphs');
      await first.stop();
      sim.state.removeServer('100002');
      sim.state.removeServer('100005');
      const d = await start();
      const servedBefore = (await d.app.inject('/graphs/dedicated/100002/port_bits/day.png')).statusCode;
      const imagesBefore = accountOf(d, 'default').graphStore.size;
      await accountOf(d, 'default').polls.run('servers');
      return {
        servedBefore,
        imagesBefore,
        servedAfter: (await d.app.inject('/graphs/dedicated/100002/port_bits/day.png')).statusCode,
        keptServed: (await d.app.inject('/graphs/dedicated/100001/port_bits/day.png')).statusCode,
        onDisk: ['100001', '100002', '100005'].map((id) => existsSync(join(stateDir, 'graphs/default/dedicated', id))),
        images: accountOf(d, 'default')
          .graphStore.list()
          .map((g) => g.serverId),
        imagesMetric: await metric(d, 'baremetal_graph_images'),
      };
    },
    expected: {
      servedBefore: 200,
      imagesBefore: 6,
      servedAfter: 404,
      keptServed: 200,
      onDisk: [true, false, false],
      images: ['100001', '100003', '100004', '100006'],
      imagesMetric: 4,
    },
  },
  {
    name: 'server list 100% failing while other calls succeed → baremetal_api_up 0 after every run',
    scenario: async ({ sim, start }) => {
      const d = await start();
      await accountOf(d, 'default').polls.run('servers');
      const before = await metric(d, 'baremetal_api_up');
      sim.setFaults({ errorRate: 1, paths: ['/api/v1/dedicated'] });
      const outcomes: string[] = [];
      const up: Array<number | undefined> = [];
      for (const job of ['servers', 'firewall', 'graphs', 'catalog', 'firewall'] as const) {
        outcomes.push(await accountOf(d, 'default').polls.run(job));
        up.push(await metric(d, 'baremetal_api_up'));
      }
      sim.setFaults({});
      await accountOf(d, 'default').polls.run('servers');
      return { before, outcomes, up, recovered: await metric(d, 'baremetal_api_up') };
    },
    expected: {
      before: 1,
      outcomes: ['failure', 'success', 'success', 'success', 'success'],
      up: [0, 0, 0, 0, 0],
      recovered: 1,
    },
  },
  {
    name: 'one failing server among many → api_up 1, firewall_history_up 0 for it',
    scenario: async ({ sim, start }) => {
      const d = await start();
      sim.setFaults({ errorRate: 1, ids: ['100004'], paths: ['/api/v1/dedicated/firewall'] });
      await accountOf(d, 'default').polls.run('servers');
      const outcome = await accountOf(d, 'default').polls.run('firewall');
      const up = Object.fromEntries(
        (await d.registry.getSingleMetric('baremetal_firewall_history_up')!.get()).values.map((v) => [
          v.labels.service_id,
          v.value,
        ]),
      );
      return {
        outcome,
        apiUp: await metric(d, 'baremetal_api_up'),
        failing: up['100004'],
        others: Object.values(up).filter((v) => v === 1).length,
        itemsFailed: await metric(d, 'baremetal_poll_items_failed', { poll: 'firewall' }),
      };
    },
    expected: { outcome: 'partial', apiUp: 1, failing: 0, others: 8, itemsFailed: 1 },
  },
  {
    name: 'one server never read → the oldest read age counts from the first run that had it, the status page names it',
    scenario: async ({ sim, start, clock }) => {
      const d = await start();
      sim.setFaults({ errorRate: 1, ids: ['100004'], paths: ['/api/v1/dedicated/firewall'] });
      await accountOf(d, 'default').polls.run('servers');
      await accountOf(d, 'default').polls.run('firewall');
      const first = await metric(d, 'baremetal_firewall_history_oldest_read_age_seconds');
      clock.now += 60_000;
      await accountOf(d, 'default').polls.run('firewall');
      const unread = await metric(d, 'baremetal_firewall_history_oldest_read_age_seconds');
      const page = (await d.app.inject('/')).body.match(/<p id="coverage">.*<\/p>/)?.[0];
      sim.setFaults({});
      clock.now += 10_000;
      await accountOf(d, 'default').polls.run('firewall');
      return { first, unread, page, read: await metric(d, 'baremetal_firewall_history_oldest_read_age_seconds') };
    },
    expected: {
      first: 0,
      unread: 60,
      page: '<p id="coverage">Oldest firewall history read: <strong>60 s</strong> waiting for its first read (dedicated 100004)</p>',
      read: 0,
    },
  },
  {
    name: 'every request of the cycle failing after a good server list → api_up 0 once the run ends',
    scenario: async ({ sim, start }) => {
      const d = await start();
      await accountOf(d, 'default').polls.run('servers');
      sim.setFaults({ htmlErrorRate: 1 });
      const outcome = await accountOf(d, 'default').polls.run('firewall');
      return { outcome, apiUp: await metric(d, 'baremetal_api_up') };
    },
    expected: { outcome: 'failure', apiUp: 0 },
  },
  {
    name: 'a slow-drip history reply → the firewall run ends at its deadline, counted, the next run runs',
    // Period 1 s, so the deadline is 900 ms; the dripped reply would take about 3 s. A request budget that
    // fits every service in one run: the real-time token bucket never holds a request back.
    file: { schedules: { firewall: '* * * * * *' }, upstream: { max_requests_per_second: 1000 } },
    scenario: async ({ sim, start }) => {
      const d = await start();
      await accountOf(d, 'default').polls.run('servers');
      sim.setFaults({
        mode: 'drip',
        dripIntervalMs: 100,
        modeCount: 1,
        paths: ['/api/v1/colocation/firewall'],
        ids: ['colo-1'],
      });
      const first = await accountOf(d, 'default').polls.run('firewall');
      const cancelled = await metric(d, 'baremetal_poll_items_cancelled', { poll: 'firewall' });
      const colo1 = await metric(d, 'baremetal_firewall_history_up', { service_id: 'colo-1' });
      const lastSuccess = await metric(d, 'baremetal_poll_last_success_timestamp_seconds', { poll: 'firewall' });
      const next = await accountOf(d, 'default').polls.run('firewall');
      return {
        first,
        cancelled,
        colo1,
        lastSuccess,
        next,
        cancelledAfter: await metric(d, 'baremetal_poll_items_cancelled', { poll: 'firewall' }),
        colo1After: await metric(d, 'baremetal_firewall_history_up', { service_id: 'colo-1' }),
        runs: await metric(d, 'baremetal_poll_runs_total', { poll: 'firewall', outcome: 'partial' }),
        skipped: await metric(d, 'baremetal_poll_runs_total', { poll: 'firewall', outcome: 'skipped' }),
      };
    },
    expected: {
      first: 'partial',
      cancelled: 1,
      colo1: 0,
      lastSuccess: START / 1000,
      next: 'success',
      cancelledAfter: 0,
      colo1After: 1,
      runs: 1,
      skipped: 0,
    },
  },
  {
    name: 'one service whose history always drips past the deadline → every other service is polled in every run, only its history_up is 0',
    // Period 1 s, so the deadline is 900 ms; the dripped reply would take about 3 s, every time. A request
    // budget that fits every service in one run (the round-robin under a tight budget: round-robin.test.ts).
    file: { schedules: { firewall: '* * * * * *' }, upstream: { max_requests_per_second: 1000 } },
    scenario: async ({ sim, start }) => {
      const d = await start();
      await accountOf(d, 'default').polls.run('servers');
      sim.setFaults({ mode: 'drip', dripIntervalMs: 100, paths: ['/api/v1/colocation/firewall'], ids: ['colo-1'] });
      const history = /^\/api\/v1\/(dedicated|colocation|transit)\/firewall$/;
      const before = sim.calls.length;
      const outcomes: string[] = [];
      for (let run = 0; run < 3; run++) outcomes.push(await accountOf(d, 'default').polls.run('firewall'));
      const polls = new Map<string, number>();
      for (const call of sim.calls.slice(before).filter((c) => history.test(c.path))) {
        const id = call.params.server_id ?? call.params.colocation_id ?? call.params.transit_id ?? '';
        polls.set(id, (polls.get(id) ?? 0) + 1);
      }
      const { values } = await d.registry.getSingleMetric('baremetal_firewall_history_up')!.get();
      return {
        outcomes,
        polls: Object.fromEntries(polls),
        down: values.filter((s) => s.value === 0).map((s) => s.labels.service_id),
        up: values.filter((s) => s.value === 1).length,
      };
    },
    // Each run: the 8 others answered, colo-1 cut at the deadline.
    expected: {
      outcomes: ['partial', 'partial', 'partial'],
      polls: Object.fromEntries(
        ['100001', '100002', '100003', '100004', '100005', '100006', 'colo-1', 'colo-2', 'transit-1'].map((id) => [
          id,
          3,
        ]),
      ),
      down: ['colo-1'],
      up: 8,
    },
  },
  {
    name: 'daemon.stop() during a run stuck on a slow-drip reply → stop resolves, the run is cancelled and counted',
    scenario: async ({ sim, start }) => {
      const d = await start();
      await accountOf(d, 'default').polls.run('servers');
      sim.setFaults({ mode: 'drip', dripIntervalMs: 100, paths: ['/api/v1/transit/firewall'] });
      const run = accountOf(d, 'default').polls.run('firewall');
      // Stop once the dripping request is the only one left: every other history has been applied, and the
      // dripping one has reached the simulator (sent, not still queued for a budget token: issue 33).
      // (Real HTTP has no clock to inject: a bounded wait, at most 10 s.)
      const stuck = async () =>
        (await seriesOf(d.registry, 'baremetal_firewall_history_up')).length >= 8 &&
        sim.callsTo('/api/v1/transit/firewall').length > 0;
      for (let i = 0; i < 1000 && !(await stuck()); i++) await new Promise((r) => setTimeout(r, 10));
      await d.stop();
      return {
        stopped: true,
        outcome: await run,
        cancelled: await metric(d, 'baremetal_poll_items_cancelled', { poll: 'firewall' }),
        transit: await metric(d, 'baremetal_firewall_history_up', { service_id: 'transit-1' }),
      };
    },
    expected: { stopped: true, outcome: 'partial', cancelled: 1, transit: 0 },
  },
];

describe('poll faults', () => {
  it.each(rows)('$name', async ({ file, scenario, expected }) => {
    const f = await fixture(file);
    expect(await scenario(f)).toEqual(expected);
  });
});

describe('a scope pattern exponential under backtracking (issue 28)', () => {
  // The daemon runs as a process of its own: a loop blocked by the pattern could not even be observed from
  // inside it. Under V8's backtracking engine, this pattern tries 2^60 ways to split the long name before it fails
  // on the domain: the first servers poll would never end, /readyz and /healthz never answer.
  it('a long hostname in another domain: the servers poll completes, /healthz answers, the server is out of scope', async () => {
    const h = await startDaemonProcess({
      key: KEY,
      simulator: { servers: 2, colocations: 0, transits: 0, attackRate: 0, seed: 5 },
      config: {
        log_level: 'warn',
        servers: { include: [{ hostname: '([a-z0-9]+-?)+\\.example\\.net' }] },
      },
    });
    h.sim.state.addServer('100009', ['10.99.0.9']).hostname = `${'a'.repeat(60)}.other.org`;
    // Resolves once /readyz says the first servers and firewall polls worked.
    await h.start();
    const healthz = await request(`${h.url}/healthz`);
    await healthz.body.dump();
    const discovery = await request(`${h.url}/api/v1/discovery`);
    const targets = ((await discovery.body.json()) as Array<{ labels: Record<string, string> }>).map(
      (group) => group.labels.__meta_baremetal_server_id,
    );
    const exposition = await (await request(`${h.url}/metrics`)).body.text();
    const servers = /^baremetal_servers(?:\{[^}]*\})? (\d+)$/m.exec(exposition)?.[1];
    expect({ healthz: healthz.statusCode, targets: targets.sort(), servers }).toEqual({
      healthz: 200,
      targets: ['100001', '100002'],
      servers: '2',
    });
  }, 90_000);
});
