/**
 * Issue 9, items 2, 3 and 5 against the simulator: the request budget keeps under the provider's rate
 * limit over a full firewall cycle, a period too short for the budget still covers every service
 * round-robin, services under attack follow their own schedule, and the attacks are shown to people
 * (`GET /api/v1/attacks`, the status page) without becoming labels.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runDeadlineMs, schedulePeriodMs } from '../../src/polls/poll.js';
import { runCapacity } from '../../src/polls/round-robin.js';
import type { Simulator, SimulatorServerOptions } from '../../src/simulator/server.js';
import { accountOf, startHarness } from '../helpers/daemon.js';
import { seriesOf, seriesValue } from '../helpers/metrics.js';

const KEY = 'budget-key-3b7e91c4';
const TOKEN = 'attacks-reader-token-0123456789';

async function setup(simOptions: SimulatorServerOptions, file: Record<string, unknown>) {
  const h = await startHarness({
    key: KEY,
    simulator: { colocations: 0, transits: 0, attackRate: 0, seed: 3, ...simOptions },
    config: ({ stateDir }) => {
      const tokenFile = join(stateDir, 'token');
      writeFileSync(tokenFile, TOKEN);
      return {
        ...file,
        upstream: { concurrency: 16, ...(file.upstream as object) },
        web: { auth: { bearer_token_files: [tokenFile] } },
      };
    },
    // The client's own backoff (a 429 is waited out as the reply says).
    daemon: { initialPolls: false, retryMinDelayMs: 250 },
  });
  return { daemon: h.daemon, sim: h.sim, log: h.log, config: h.config };
}

/** The most requests the simulator received in any one-second window (by its real clock). */
function busiestSecond(sim: Simulator): number {
  const times = sim.calls.map((c) => c.at).sort((a, b) => a - b);
  let most = 0;
  let start = 0;
  for (let end = 0; end < times.length; end++) {
    while (times[end]! - times[start]! >= 1000) start++;
    most = Math.max(most, end - start + 1);
  }
  return most;
}

// These rows measure requests per second of the real clock against a provider's limit, in the one process that
// runs both the daemon and the simulator: on a loaded 2-core CI machine a stall of that process can bunch
// requests into one second (seen once in about ten full CI runs). A retry keeps them honest (a budget that
// really exceeds the limit fails every attempt; the control row shows the check can fail) without making the
// suite's result depend on the machine's load. The coverage row of issue 33 depends on the same clock (a run's
// deadline) and gets the same retry; the rows after it assert no rate and get none.
describe('request budget against a rate-limited provider', { retry: 2 }, () => {
  it.each([
    // 340/s with bursts of a twentieth of a second stays under 400 in any second: no 429 over 2,000 servers.
    {
      name: 'just below the limit: a full cycle of 2,000 servers',
      servers: 2000,
      rate: 340,
      limit: 400,
      refused: false,
    },
    // Issue 22: the provider allows 10 % more than the budget. A burst of a tenth of a second's worth used all of
    // that headroom (the first second, or any second after a stall), and jitter made it 221 > 220: a 429.
    {
      name: '10 % below the limit from the first request: 1,000 servers',
      servers: 1000,
      rate: 200,
      limit: 220,
      refused: false,
    },
    // The control: a budget far above the provider's limit is refused; so the test above can fail. The limit is
    // low enough that a loaded 2-core machine (PostgreSQL tests alongside) still exceeds it.
    { name: 'above the limit (control)', servers: 600, rate: 2000, limit: 100, refused: true },
  ])('$name', async ({ servers, rate, limit, refused }) => {
    const { daemon, sim, log } = await setup(
      { servers, ipsPerServer: 1, rateLimit: { perSecond: limit } },
      { upstream: { max_requests_per_second: rate }, schedules: { firewall: '0 * * * * *' } },
    );
    expect(await accountOf(daemon, 'default').polls.run('servers')).toBe('success');
    const outcome = await accountOf(daemon, 'default').polls.run('firewall');
    const rateLimited =
      (await seriesValue(daemon.registry, 'baremetal_api_requests_total', {
        operation: 'firewall_history_dedicated',
        outcome: 'rate_limited',
      })) ?? 0;
    if (refused) {
      expect(sim.rateLimited).toBeGreaterThan(0);
      expect(rateLimited).toBeGreaterThan(0);
      return;
    }
    expect(outcome, `the run's warnings:\n${log.lines.filter((l) => l.includes('"warn"')).join('\n')}`).toBe('success');
    expect(sim.rateLimited).toBe(0);
    expect(rateLimited).toBe(0);
    expect(sim.callsTo('/api/v1/dedicated/firewall').length).toBe(servers);
    expect(busiestSecond(sim)).toBeLessThanOrEqual(limit);
    expect(await seriesValue(daemon.registry, 'baremetal_poll_items_pending', { poll: 'firewall' })).toBe(0);
  });

  // Runs cut by their deadline on a loaded machine are `partial` (a reply cut there goes to the back of the round):
  // the row asserts what the round-robin guarantees whatever the machine's speed, not how much each run read.
  it('covers every server round-robin within ⌈servers ÷ per-run capacity⌉ + 2 runs when a period is too short', async () => {
    const servers = 300;
    const rate = 100;
    const schedule = '* * * * * *';
    const { daemon, sim, log } = await setup(
      { servers, ipsPerServer: 1 },
      { upstream: { max_requests_per_second: rate }, schedules: { firewall: schedule } },
    );
    const perRun = runCapacity(rate, runDeadlineMs(schedulePeriodMs(schedule)));
    const runs = Math.ceil(servers / perRun);
    expect(runs).toBeGreaterThan(1);
    expect(await accountOf(daemon, 'default').polls.run('servers')).toBe('success');
    expect(
      log.lines.some(
        (l) =>
          l.includes('do not fit in its period') &&
          l.includes(`"requests":${servers}`) &&
          l.includes(`"max_requests_per_second":${rate}`),
      ),
    ).toBe(true);
    const requested = () => sim.callsTo('/api/v1/dedicated/firewall').map((c) => c.params.server_id);
    let pending = servers;
    let run = 0;
    while (pending > 0) {
      run++;
      expect(run, `every server read within ${runs} + 2 runs; ${pending} pending`).toBeLessThanOrEqual(runs + 2);
      expect(['success', 'partial']).toContain(await accountOf(daemon, 'default').polls.run('firewall'));
      const now = await seriesValue(daemon.registry, 'baremetal_poll_items_pending', { poll: 'firewall' });
      // Each run reads a slice the runs before did not: what is left never grows (the bound above: it shrinks).
      expect(now, `after run ${run}`).toBeLessThanOrEqual(pending);
      pending = now!;
      // Before every server was asked once, none is asked twice (a reply cut at the deadline is asked again
      // at the back of the round, after all the others).
      const asked = requested();
      if (new Set(asked).size < servers) expect(new Set(asked).size, `after run ${run}`).toBe(asked.length);
    }
    expect(run).toBeGreaterThan(1);
    expect(new Set(requested()).size).toBe(servers);
    expect((await seriesOf(daemon.registry, 'baremetal_firewall_history_last_success_timestamp_seconds')).length).toBe(
      servers,
    );
    // The next run starts a new round from the first server.
    const before = sim.callsTo('/api/v1/dedicated/firewall', { server_id: '100001' }).length;
    await accountOf(daemon, 'default').polls.run('firewall');
    expect(sim.callsTo('/api/v1/dedicated/firewall', { server_id: '100001' }).length).toBe(before + 1);
  });
});

describe('a budget that cannot fit one firewall run, with graphs on (issue 33)', { retry: 2 }, () => {
  it('reads every server within ⌈servers ÷ per-run capacity⌉ + 1 runs while graphs poll, without a 429', async () => {
    const servers = 250;
    const rate = 50;
    // Every 2 s (a deadline of 1.8 s): the tenth of it left after the last token is granted is the time its
    // reply has to arrive from the simulator, which shares this loaded machine; a reply cut there is deferred.
    const schedule = '*/2 * * * * *';
    const { daemon, sim } = await setup(
      // The provider allows a quarter more than the budget, as in the 20/s against 25/s.
      { servers, ipsPerServer: 1, rateLimit: { perSecond: rate * 1.25 } },
      {
        upstream: { max_requests_per_second: rate },
        schedules: { firewall: schedule, graphs: '*/6 * * * * *' },
        graphs: { types: ['port_bits'], scales: ['day'] },
      },
    );
    const polls = accountOf(daemon, 'default').polls;
    const perRun = runCapacity(rate, runDeadlineMs(schedulePeriodMs(schedule)));
    const runs = Math.ceil(servers / perRun) + 1;
    expect(Math.ceil(servers / perRun)).toBeGreaterThan(1);
    expect(await polls.run('servers')).toBe('success');
    // The graphs poll runs all along: each of its runs wants 250 images, five seconds of the whole budget.
    let graphing = true;
    const graphs = (async () => {
      while (graphing) await polls.run('graphs');
    })();
    for (let run = 0; run < runs; run++) await polls.run('firewall');
    graphing = false;
    await graphs;
    const read = new Set(sim.callsTo('/api/v1/dedicated/firewall').map((c) => c.params.server_id));
    expect(sim.callsTo('/api/v1/dedicated/graphs').length).toBeGreaterThan(0);
    expect(sim.rateLimited).toBe(0);
    expect(read.size).toBe(servers);
    expect((await seriesOf(daemon.registry, 'baremetal_firewall_history_last_success_timestamp_seconds')).length).toBe(
      servers,
    );
  });
});

describe('services under attack on their own schedule', () => {
  it.each([
    { name: 'a different schedule: two jobs, each polls its own services', underAttack: '*/15 * * * * *', split: true },
    { name: 'the default (same schedule): one job polls every service', underAttack: undefined, split: false },
  ])('$name', async ({ underAttack, split }) => {
    const schedules = { firewall: '0 */5 * * * *', ...(underAttack ? { firewall_under_attack: underAttack } : {}) };
    const { daemon, sim } = await setup(
      { servers: 8, ipsPerServer: 1 },
      { upstream: { max_requests_per_second: 1000 }, schedules },
    );
    const attacked = ['100002', '100005'];
    for (const id of attacked)
      sim.state.injectEvents('dedicated', id, [{ id: `ev-${id}`, ip: sim.state.servers.get(id)!.ips[0]! }]);
    await accountOf(daemon, 'default').polls.run('servers');
    expect(await accountOf(daemon, 'default').polls.run('firewall')).toBe('success');
    expect(accountOf(daemon, 'default').polls.jobs.has('firewall_under_attack')).toBe(split);
    const ids = () =>
      sim!
        .callsTo('/api/v1/dedicated/firewall')
        .map((c) => c.params.server_id)
        .sort();
    sim.calls.length = 0;
    await accountOf(daemon, 'default').polls.run('firewall_under_attack');
    expect(ids()).toEqual(split ? attacked : []);
    sim.calls.length = 0;
    await accountOf(daemon, 'default').polls.run('firewall');
    const all = [...sim.state.servers.keys()].sort();
    expect(ids()).toEqual(split ? all.filter((id) => !attacked.includes(id)) : all);
  });
});

describe('the attack itself, for people', () => {
  const RAW = '<script>alert(1)</script> & 9 Gbps "udp" flood';

  async function attackedDaemon() {
    const ctx = await setup({ servers: 3, ipsPerServer: 2 }, {});
    const ip = ctx.sim.state.servers.get('100002')!.ips[1]!;
    ctx.sim.state.injectEvents('dedicated', '100002', [
      { id: 'old', ip, raw: 'older event', time: 1_700_000_000 },
      { id: 'new', ip, raw: RAW, time: 1_700_000_060 },
    ]);
    await accountOf(ctx.daemon, 'default').polls.run('servers');
    await accountOf(ctx.daemon, 'default').polls.run('firewall');
    return { ...ctx, ip };
  }

  it.each([
    { name: 'no credentials', headers: {}, status: 401 },
    { name: 'a wrong token', headers: { authorization: 'Bearer not-the-token-at-all-000' }, status: 401 },
    { name: 'the web.auth token', headers: { authorization: `Bearer ${TOKEN}` }, status: 200 },
  ])('GET /api/v1/attacks with $name answers $status', async ({ headers, status }) => {
    const { daemon, ip } = await attackedDaemon();
    const res = await daemon.app.inject({ method: 'GET', url: '/api/v1/attacks', headers });
    expect(res.statusCode).toBe(status);
    if (status !== 200) return;
    expect(res.json()).toEqual([
      {
        account: 'default',
        service_type: 'dedicated',
        service_id: '100002',
        ip,
        polled_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
        events: [
          { id: 'new', time: '2023-11-14T22:14:20.000Z', raw: RAW },
          { id: 'old', time: '2023-11-14T22:13:20.000Z', raw: 'older event' },
        ],
      },
    ]);
  });

  it('shows the newest raw text and time on the status page, escaped, and never as a label', async () => {
    const { daemon, ip } = await attackedDaemon();
    const res = await daemon.app.inject({ method: 'GET', url: '/', headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.statusCode).toBe(200);
    expect(res.body).toContain(
      `data-raw="${ip}">2023-11-14 22:14:20Z · &lt;script&gt;alert(1)&lt;/script&gt; &amp; 9 Gbps &quot;udp&quot; flood</small>`,
    );
    expect(res.body).not.toContain('<script>');
    expect(res.body).not.toContain('older event');
    const exposition = (await daemon.exposition.render()).bytes('text').toString();
    expect(exposition).not.toContain('9 Gbps');
  });
});
