/**
 * One size of `npm run bench`, in a process of its own (so that its RSS and heap are this size's alone; run.ts
 * starts one per `--servers` value): the simulator with `--servers` servers in a child process, the daemon in
 * this one, driven by hand. Measures a first and a steady `servers` + `firewall` cycle (event-loop delay, and
 * /metrics latency from another process while it runs, 4 plain-text scrapes a second), the bare-undici floor in
 * between, a third cycle scraped with gzip as Prometheus asks, RSS after the first cycle, the live heap per
 * server after a full GC, the exposition's size plain and gzipped, and /metrics idle (plain and gzip) against
 * fastify serving the same bytes from a static buffer, then a graphs poll (the default types × scales) and RSS
 * after it. The simulator attacks the default share of IPs (~3 % within an hour). With `--extras`, also the rows
 * that need one daemon only: /metrics under a flood of wrong credentials, valid sporadic users under a flood
 * from another address, the request budget, two accounts.
 * Prints one JSON line (`SizeResult`) last.
 *
 *   node --max-semi-space-size=2 --expose-gc bench/size.ts --servers 10000 [--extras] [--no-graphs]
 *        [--profile steady.cpuprofile] [--alloc-profile steady.heapprofile] [--profile-cycles 3] [--memory-detail]
 *
 * `--no-graphs` leaves out the graphs poll (its row then reads NaN); `--profile FILE` takes a CPU profile (V8's
 * sampling profiler, as `node --cpu-prof` takes it, through node:inspector) of `--profile-cycles` more steady
 * cycles after the measured ones, so that the profiler's cost is in none of the figures; `node
 * bench/profile-top.ts FILE` lists its heaviest self-time entries. `--alloc-profile FILE`: V8's sampling heap
 * profile of those cycles, counting what the collections freed too (where the garbage comes from); profile-top
 * reads it as well. `--heap-snapshot FILE`: `v8.writeHeapSnapshot` (it collects first) of the daemon where the live
 * heap is measured (after the steady cycles, and after the graphs poll unless `--no-graphs`), with
 * `process.memoryUsage()` just before it on stderr; `node bench/heap-summary.ts FILE` tabulates it.
 * `--memory-detail`: at start and at each RSS row, what the RSS is made of (memoryDetail) on stderr, and again 12 s
 * after the steady cycle and the graphs poll, once the allocator has purged what was freed (issue 53).
 */
import { fork } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Session } from 'node:inspector/promises';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { getHeapSpaceStatistics, writeHeapSnapshot } from 'node:v8';
import Fastify from 'fastify';
import { Agent, request } from 'undici';
import { buildApp } from '../dist/http/app.js';
import { buildConfig } from '../dist/config/load.js';
import { BcryptPool } from '../dist/http/bcrypt-pool.js';
import { startDaemon } from '../dist/daemon/start.js';
import { createLogger } from '../dist/logger.js';
import { ATTACKED_PER_HOUR } from '../dist/simulator/state.js';
import { percentile, type Row, SIZE_OPTIONS } from './options.ts';
import { spawnSimulator } from './simulator.ts';
import { spawnFlood } from './spawn-flood.ts';

const { values } = parseArgs({
  options: {
    ...SIZE_OPTIONS,
    extras: { type: 'boolean', default: false },
    graphs: { type: 'boolean', default: true },
    profile: { type: 'string' },
    'alloc-profile': { type: 'string' },
    'profile-cycles': { type: 'string', default: '3' },
    'heap-snapshot': { type: 'string' },
    'memory-detail': { type: 'boolean', default: false },
  },
  allowNegative: true,
});
const servers = Number(values.servers);

/**
 * With `--memory-detail`: where RSS is at `where`, on stderr as one JSON line: process.memoryUsage(), V8's heap
 * spaces (committed, used) and /proc/self/smaps_rollup's resident anonymous and file-backed pages, MB.
 */
function memoryDetail(where: string): void {
  if (!values['memory-detail']) return;
  const mb = (bytes: number) => Math.round((bytes / 2 ** 20) * 10) / 10;
  const usage = Object.fromEntries(Object.entries(process.memoryUsage()).map(([k, v]) => [k, mb(v)]));
  const spaces = Object.fromEntries(
    getHeapSpaceStatistics().map((s) => [s.space_name, [mb(s.space_size), mb(s.space_used_size)]]),
  );
  const rollup = readFileSync('/proc/self/smaps_rollup', 'utf8');
  const kb = (key: string) => mb(Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(rollup)?.[1] ?? 0) * 1024);
  const smaps = { anonymous: kb('Anonymous'), fileBacked: kb('Rss') - kb('Anonymous') };
  console.error(JSON.stringify({ memoryDetail: where, usage, smaps, spaces }));
}

/**
 * With `--memory-detail`: memoryDetail again once the allocator has had time to give back what was freed (jemalloc
 * purges dirty pages over `dirty_decay_ms`, 10 s by default). Only then: it delays every row after it.
 */
async function settled(where: string): Promise<void> {
  if (!values['memory-detail']) return;
  await sleep(12_000);
  memoryDetail(`12 s ${where}`);
}

const latencyMs = Number(values.latency);
const concurrency = Number(values.concurrency);
const scrapes = Number(values.scrapes);
const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('bench/size.ts needs --expose-gc (run.ts passes it)');

// The simulator, in its own process (its CPU is not the daemon's), with the default attack mix.
const { child: sim, url: simUrl } = await spawnSimulator({
  servers,
  ips: Number(values.ips),
  latencyMs,
  apiKey: 'bench-key',
  attacksPerHour: ATTACKED_PER_HOUR,
});

// The scraper (bench/scraper.ts), in its own process like Prometheus.
const scraper = fork(new URL('./scraper.ts', import.meta.url), [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
const next = <T>() => once(scraper, 'message').then(([message]) => message as T);
await next<'ready'>();
/** `count` scrapes of `url`, one at a time (asking for gzip when `gzip`); the latencies sorted, in ms. */
async function scrapeTimes(url: string, count: number, gzip = false): Promise<number[]> {
  scraper.send({ url, count, gzip });
  return (await next<number[]>()).sort((a, b) => a - b);
}
/**
 * Scrapes `url` while `during` runs, one scrape every SCRAPE_EVERY_MS: a scraper's pace, not back to back (a
 * 10 MB exposition served without a pause would cost the daemon more CPU than its polls); asking for gzip,
 * as Prometheus does, when `gzip`.
 */
const SCRAPE_EVERY_MS = 250;
async function scrapeDuring<T>(
  url: string,
  during: () => Promise<T>,
  gzip = false,
): Promise<{ value: T; times: number[] }> {
  scraper.send({ url, everyMs: SCRAPE_EVERY_MS, gzip });
  await next<'started'>();
  const value = await during();
  scraper.send('stop');
  return { value, times: (await next<number[]>()).sort((a, b) => a - b) };
}

// The daemon, in this process, driven by hand.
const stateDir = mkdtempSync(join(tmpdir(), 'bmx-bench-'));
const config = buildConfig(
  {
    upstream: { base_url: simUrl, concurrency, timeout: '30s', max_requests_per_second: 10000 },
    // A firewall run's deadline is its period: every 10 minutes, so that 50,000 servers on a busy machine
    // are all polled in one run (the bench drives the runs by hand; the schedule only sets the deadline).
    schedules: { firewall: '0 */10 * * * *' },
    web: { listen_address: '127.0.0.1:0' },
    state_dir: stateDir,
  },
  { BAREMETAL_API_KEY: 'bench-key' },
);
const daemon = await startDaemon(config, { logger: createLogger('error'), schedule: false, initialPolls: false });
const metricsUrl = `${daemon.url}/metrics`;
gc();
const heapBefore = process.memoryUsage().heapUsed;
memoryDetail('after start');

/** CPU time of this thread (the event loop's), ms: unlike wall time, what other processes do moves it little. */
function threadCpuMs(): number {
  const { user, system } = process.threadCpuUsage();
  return (user + system) / 1000;
}

/**
 * The event loop while `during` runs. Its delay (monitorEventLoopDelay) is wall time: on a shared machine it
 * also counts the time the OS gave the CPU to other processes. A block is measured as this thread's CPU
 * time between two ticks of a 5 ms timer (process.threadCpuUsage): what the loop itself spent before it
 * could come back to its timers, whatever the neighbours do.
 */
async function watchLoop<T>(during: () => Promise<T>) {
  const delay = monitorEventLoopDelay({ resolution: 5 });
  delay.enable();
  let last = threadCpuMs();
  let blockMaxMs = 0;
  const tick = setInterval(() => {
    const now = threadCpuMs();
    blockMaxMs = Math.max(blockMaxMs, now - last);
    last = now;
  }, 5);
  const value = await during();
  clearInterval(tick);
  delay.disable();
  return { value, blockMaxMs, delayMaxMs: delay.max / 1e6, delayP99Ms: delay.percentile(99) / 1e6 };
}

/** One servers + firewall cycle, then the rendering a finished poll asks for; the event loop throughout. */
async function cycle() {
  const started = performance.now();
  const cpuStarted = threadCpuMs();
  let ms = 0;
  let cpuMs = 0;
  let renderCpuMs = 0;
  let render: { blockMaxMs: number } | undefined;
  const { value: outcomes, ...loop } = await watchLoop(async () => {
    const outcomes = [
      await daemon.accounts.get('default')!.polls.run('servers'),
      await daemon.accounts.get('default')!.polls.run('firewall'),
    ];
    ms = performance.now() - started;
    cpuMs = threadCpuMs() - cpuStarted;
    // The rendering the cycle asks for, apart: its CPU and the longest turn of the loop it takes.
    const renderStarted = threadCpuMs();
    render = await watchLoop(() => daemon.exposition.render());
    renderCpuMs = threadCpuMs() - renderStarted;
    return outcomes;
  });
  return { ms, cpuMs, outcomes, ...loop, renderCpuMs, renderBlockMaxMs: render?.blockMaxMs ?? Number.NaN };
}
const cold = await scrapeDuring(metricsUrl, cycle);
const rssMb = process.memoryUsage().rss / 2 ** 20;
memoryDetail('after the first cycle');

// The floor: the same requests from a bare undici loop, no daemon.
const floorAgent = new Agent({ connections: concurrency });
const floorStarted = performance.now();
const floorCpuStarted = threadCpuMs();
let cursor = -1;
await Promise.all(
  Array.from({ length: concurrency }, async () => {
    while (cursor < servers) {
      const i = cursor++;
      const body = i < 0 ? '' : `server_id=${100001 + i}&scale=hour`;
      const res = await request(`${simUrl}/api/v1/dedicated${i < 0 ? '' : '/firewall'}`, {
        method: 'POST',
        dispatcher: floorAgent,
        headers: { authorization: 'bench-key', 'content-type': 'application/x-www-form-urlencoded' },
        body,
      });
      await res.body.text();
    }
  }),
);
const floorMs = performance.now() - floorStarted;
const floorCpuMs = threadCpuMs() - floorCpuStarted;
await floorAgent.close();

// The steady state: every minute in production the same servers are polled again.
const warm = await scrapeDuring(metricsUrl, cycle);
const rssSteadyMb = process.memoryUsage().rss / 2 ** 20;
memoryDetail('after the steady cycle');
await settled('after the steady cycle');
// One more steady cycle, scraped the way Prometheus scrapes (gzip): the plain-text cycle above is the harder case.
// One gzip scrape before it, as Prometheus would have made since the start (the first one of a format waits).
await scrapeTimes(metricsUrl, 1, true);
const warmGzip = await scrapeDuring(metricsUrl, cycle, true);
// A CPU profile of more steady cycles (--profile), after every cycle measured.
if (values.profile || values['alloc-profile']) {
  const session = new Session();
  session.connect();
  if (values.profile) {
    await session.post('Profiler.enable');
    await session.post('Profiler.start');
  }
  if (values['alloc-profile'])
    await session.post('HeapProfiler.startSampling', {
      samplingInterval: 16_384,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });
  for (let i = 0; i < Number(values['profile-cycles']); i++) await cycle();
  if (values.profile) writeFileSync(values.profile, JSON.stringify((await session.post('Profiler.stop')).profile));
  if (values['alloc-profile'])
    writeFileSync(values['alloc-profile'], JSON.stringify((await session.post('HeapProfiler.stopSampling')).profile));
  session.disconnect();
}
// A graphs poll (the default types × scales: one image per server), as every installation runs one.
const graphsStarted = performance.now();
const graphsCpu = process.cpuUsage();
const graphsOutcome = values.graphs ? await daemon.accounts.get('default')!.polls.run('graphs') : 'not run';
const graphsMs = values.graphs ? performance.now() - graphsStarted : Number.NaN;
const { user: graphsUser, system: graphsSystem } = process.cpuUsage(graphsCpu);
const rssGraphsMb = values.graphs ? process.memoryUsage().rss / 2 ** 20 : Number.NaN;
memoryDetail('after the graphs poll');
await settled('after the graphs poll');
const exposition = await daemon.exposition.get();
const gzipBytes = (await exposition.gzipped('text')).length;
gc();
const heapAfter = process.memoryUsage().heapUsed;
if (values['heap-snapshot']) {
  // Read before the snapshot, whose own making grows the RSS.
  const memoryUsage = process.memoryUsage();
  writeHeapSnapshot(values['heap-snapshot']);
  console.error(JSON.stringify({ heapSnapshot: values['heap-snapshot'], memoryUsage }));
}

// Idle scrapes: the daemon's /metrics against fastify serving the same bytes from a static buffer.
const baseline = Fastify();
const staticBody = exposition.bytes('text');
baseline.get('/metrics', (_req, reply) => reply.type(exposition.contentType).send(staticBody));
const baselineUrl = `${await baseline.listen({ host: '127.0.0.1', port: 0 })}/metrics`;
await scrapeTimes(metricsUrl, 10);
await scrapeTimes(baselineUrl, 10);
const idle = await scrapeTimes(metricsUrl, scrapes);
const idleGzip = await scrapeTimes(metricsUrl, scrapes, true);
const staticTimes = await scrapeTimes(baselineUrl, scrapes);
await baseline.close();

const series = exposition
  .bytes('text')
  .toString()
  .split('\n')
  .filter((l) => l && !l.startsWith('#')).length;

/** What one size measured (run.ts prints the table). */
const result = {
  servers,
  series,
  requests: 1 + servers,
  outcomes: [...cold.value.outcomes, ...warm.value.outcomes],
  coldMs: cold.value.ms,
  warmMs: warm.value.ms,
  floorMs,
  cpuColdMs: cold.value.cpuMs,
  cpuWarmMs: warm.value.cpuMs,
  renderCpuColdMs: cold.value.renderCpuMs,
  renderCpuWarmMs: warm.value.renderCpuMs,
  renderBlockMaxMs: Math.max(cold.value.renderBlockMaxMs, warm.value.renderBlockMaxMs),
  floorCpuMs,
  rssMb,
  rssSteadyMb,
  graphsOutcome,
  graphsMs,
  graphsCpuMs: (graphsUser + graphsSystem) / 1000,
  rssGraphsMb,
  heapMb: heapAfter / 2 ** 20,
  heapPerServerKb: (heapAfter - heapBefore) / 1024 / servers,
  blockMaxMs: Math.max(cold.value.blockMaxMs, warm.value.blockMaxMs),
  delayMaxMs: Math.max(cold.value.delayMaxMs, warm.value.delayMaxMs),
  delayP99Ms: Math.max(cold.value.delayP99Ms, warm.value.delayP99Ms),
  expositionBytes: exposition.byteLength('text'),
  gzipBytes,
  scrapeIdleP50: percentile(idle, 50),
  scrapeIdleP99: percentile(idle, 99),
  scrapeDuringP50: percentile(warm.times, 50),
  scrapeDuringP99: percentile(warm.times, 99),
  scrapesDuring: warm.times.length,
  scrapeIdleGzipP99: percentile(idleGzip, 99),
  scrapeDuringGzipP99: percentile(warmGzip.times, 99),
  scrapesDuringGzip: warmGzip.times.length,
  gzipCycleOutcomes: warmGzip.value.outcomes,
  staticP50: percentile(staticTimes, 50),
  staticP99: percentile(staticTimes, 99),
  rows: [] as Row[],
};

if (values.extras) {
  // What only the extras use is imported here, after the memory rows: the daemon loads none of it (bcryptjs only
  // in its password worker, issue 53), so this process's RSS above is the daemon's and the bench's own.
  const { default: bcrypt } = await import('bcryptjs');
  const { startSimulator } = await import('../dist/simulator/server.js');
  const { sporadicUsersRow } = await import('./sporadic-users.ts');
  const rows = result.rows;
  const agent = new Agent({ connections: 1 });
  async function scrape(url: string, headers: Record<string, string> = {}): Promise<number> {
    const t = performance.now();
    const res = await request(`${url}/metrics`, { dispatcher: agent, headers });
    if (res.statusCode !== 200) throw new Error(`/metrics answered ${res.statusCode}`);
    await res.body.arrayBuffer();
    return performance.now() - t;
  }
  // /metrics behind web.auth, idle and under a flood of wrong Basic credentials from another process.
  const floodLoops = Number(values.flood);
  const PASSWORD = 'bench-password-0123';
  const TOKEN = 'bench-token-0123456789';
  const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
  /** `scrapes` scrapes, and more until `--flood-seconds` have passed, so that the flood reaches its steady state. */
  const floodMs = Number(values['flood-seconds']) * 1000;
  async function latencies(url: string, headers: Record<string, string>): Promise<number[]> {
    const times: number[] = [];
    const started = performance.now();
    while (times.length < scrapes || performance.now() - started < floodMs) times.push(await scrape(url, headers));
    return times.sort((a, b) => a - b);
  }
  async function underFlood(
    what: string,
    webAuth: { bearerTokens: string[]; basicAuthUsers: Record<string, string> },
    scraper: Record<string, string>,
  ) {
    const pool = new BcryptPool();
    const app = buildApp({
      logger: createLogger('error'),
      exposition: daemon.exposition,
      graphStores: new Map([['default', daemon.accounts.get('default')!.graphStore]]),
      graphMaxWidth: 2000,
      webAuth,
      passwordVerifier: pool,
    });
    const url = await app.listen({ host: '127.0.0.1', port: 0 });
    for (let i = 0; i < 10; i++) await scrape(url, scraper);
    const idle = await latencies(url, scraper);
    const flood = await spawnFlood(`${url}/metrics`, floodLoops, basic('prometheus', 'wrong-password'));
    const floodStarted = performance.now();
    const loaded = await latencies(url, scraper);
    const flooded = performance.now() - floodStarted;
    const { requests: floodRequests } = await flood.stop();
    await app.close();
    await pool.close();
    const note = `idle %s ms; ${floodLoops} loops, ${floodRequests} wrong requests in ${(flooded / 1000).toFixed(1)} s, bcrypt ran ${pool.compared}×, ${pool.refused} refused unchecked`;
    return [50, 99].map((p) => ({
      what: `/metrics p${p}, wrong-Basic flood, ${what}`,
      measured: percentile(loaded, p),
      unit: 'ms',
      reference: note.replace('%s', percentile(idle, p).toFixed(2)),
      target: 2 * percentile(idle, p),
      rule: '≤ 2 × idle',
    }));
  }
  rows.push(
    ...(await underFlood(
      'basic user',
      { bearerTokens: [], basicAuthUsers: { prometheus: bcrypt.hashSync(PASSWORD, 10) } },
      { authorization: basic('prometheus', PASSWORD) },
    )),
    ...(await underFlood(
      'bearer only',
      { bearerTokens: [TOKEN], basicAuthUsers: {} },
      { authorization: `Bearer ${TOKEN}` },
    )),
    // Valid users logging in once each (uncached) while another address floods: none refused.
    await sporadicUsersRow({
      exposition: daemon.exposition,
      graphStores: new Map([['default', daemon.accounts.get('default')!.graphStore]]),
      loops: Number(values['sporadic-loops']),
      users: Number(values['sporadic-users']),
    }),
  );

  // The request budget: a full firewall cycle against a simulator limited to 10 % above the budget.
  const budget = Number(values.budget);
  const budgetServers = Number(values['budget-servers']);
  const limited = await startSimulator({
    apiKey: 'bench-key',
    servers: budgetServers,
    ipsPerServer: 1,
    colocations: 0,
    transits: 0,
    attackRate: 0,
    rateLimit: { perSecond: Math.ceil(budget * 1.1) },
  });
  const budgetDir = mkdtempSync(join(tmpdir(), 'bmx-bench-budget-'));
  const budgetDaemon = await startDaemon(
    buildConfig(
      {
        upstream: { base_url: limited.url, concurrency, max_requests_per_second: budget },
        schedules: { firewall: '0 */5 * * * *' },
        web: { listen_address: '127.0.0.1:0' },
        state_dir: budgetDir,
      },
      { BAREMETAL_API_KEY: 'bench-key' },
    ),
    { logger: createLogger('error'), schedule: false, initialPolls: false, listen: false },
  );
  const budgetAccount = budgetDaemon.accounts.get('default')!;
  await budgetAccount.polls.run('servers');
  const budgetStarted = performance.now();
  const budgetOutcome = await budgetAccount.polls.run('firewall');
  const budgetSeconds = (performance.now() - budgetStarted) / 1000;
  // The bucket starts full (its burst, a twentieth of a second's worth): the sustained rate is what follows.
  const burst = Math.floor(budgetAccount.client.budget!.burst);
  const sentPerSecond = (budgetServers - burst) / budgetSeconds;
  rows.push(
    {
      what: 'budget: requests/s sent ÷ max_requests_per_second',
      measured: sentPerSecond / budget,
      unit: '×',
      reference: `${budgetServers} firewall requests in ${budgetSeconds.toFixed(2)} s at ${budget}/s (expected ${((budgetServers - burst) / budget).toFixed(2)} s after the bucket's burst of ${burst}); outcome ${budgetOutcome}`,
      target: 1,
      min: 0.9,
      rule: '0.9–1.0',
    },
    {
      what: 'budget: 429s seen',
      measured: limited.rateLimited,
      unit: '',
      reference: `simulator limit ${Math.ceil(budget * 1.1)}/s per key`,
      target: 0,
      rule: '= 0',
    },
  );
  await budgetDaemon.stop();
  await limited.close();
  rmSync(budgetDir, { recursive: true, force: true });

  // Two accounts, each with half the servers on its own simulator (own key, own client and budget), polled at once.
  const half = Math.floor(servers / 2);
  const simOf = (apiKey: string) =>
    spawnSimulator({ servers: half, ips: Number(values.ips), latencyMs, apiKey, attacksPerHour: ATTACKED_PER_HOUR });
  const [simA, simB] = await Promise.all([simOf('bench-key-a'), simOf('bench-key-b')]);
  const twoDir = mkdtempSync(join(tmpdir(), 'bmx-bench-accounts-'));
  const twoDaemon = await startDaemon(
    buildConfig({
      accounts: [
        {
          name: 'a',
          base_url: simA.url,
          api_key: 'bench-key-a',
          concurrency,
          timeout: '30s',
          max_requests_per_second: 10000,
        },
        {
          name: 'b',
          base_url: simB.url,
          api_key: 'bench-key-b',
          concurrency,
          timeout: '30s',
          max_requests_per_second: 10000,
        },
      ],
      web: { listen_address: '127.0.0.1:0' },
      state_dir: twoDir,
    }),
    { logger: createLogger('error'), schedule: false, initialPolls: false, listen: false },
  );
  const twoStarted = performance.now();
  const twoOutcomes = await Promise.all(
    [...twoDaemon.accounts.values()].map(async (account) =>
      [await account.polls.run('servers'), await account.polls.run('firewall')].join('/'),
    ),
  );
  const twoMs = performance.now() - twoStarted;
  const twoBoundMs = ((1 + half) * latencyMs) / concurrency;
  rows.push({
    what: `two accounts × ${half} servers, servers+firewall cycle`,
    measured: twoMs,
    unit: 'ms',
    reference: `floor ${floorMs.toFixed(0)} ms (all ${servers} servers, one bare loop); bound ${twoBoundMs.toFixed(0)} ms per account, both at once (each its own concurrency ${concurrency}, its own simulator process); outcomes ${twoOutcomes.join(', ')}`,
    target: 1.25 * floorMs,
    rule: '≤ 1.25 × floor',
  });
  await twoDaemon.stop();
  for (const s of [simA, simB]) {
    s.child.kill('SIGTERM');
    await once(s.child, 'exit');
  }
  rmSync(twoDir, { recursive: true, force: true });

  await agent.close();
}

scraper.send('exit');
await once(scraper, 'exit');
await daemon.stop();
sim.kill('SIGTERM');
await once(sim, 'exit');
rmSync(stateDir, { recursive: true, force: true });
console.log(JSON.stringify(result));
