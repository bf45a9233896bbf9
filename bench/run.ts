/**
 * `npm run bench`: one full `servers` + `firewall` poll cycle of the daemon against the simulator (in a
 * child process, so its CPU is not the daemon's), then /metrics latency against fastify serving the same
 * bytes from a static buffer, in the same run. Prints one table; exits 1 when a target is missed.
 *
 *   node --max-semi-space-size=8 bench/run.ts [--servers 10000] [--ips 2] [--latency 5] [--concurrency 16] [--scrapes 300]
 *
 * The daemon runs in this process, so this process gets the V8 flag the CLI's shebang gives the daemon.
 * The "floor" row is a bare undici loop making the same requests to the same simulator: what the
 * simulator and loopback allow, for reading the cycle rows.
 *
 * The flood rows: /metrics latency with `web.auth` set (one basic-auth user; or only bearer tokens), idle
 * and while `--flood` loops in another process (bench/flood.ts) send wrong `Authorization: Basic …`
 * headers; the scraper's own credentials were verified before, as Prometheus's would be.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import Fastify from 'fastify';
import bcrypt from 'bcryptjs';
import { Agent, request } from 'undici';
import { buildApp } from '../dist/app.js';
import { buildConfig } from '../dist/config/load.js';
import { BcryptPool } from '../dist/http/bcrypt-pool.js';
import { startDaemon } from '../dist/daemon.js';
import { createLogger } from '../dist/logger.js';
import { startSimulator } from '../dist/simulator/server.js';
import { measureHugeReply } from './huge-reply.ts';

const { values } = parseArgs({
  options: {
    servers: { type: 'string', default: '10000' },
    ips: { type: 'string', default: '2' },
    latency: { type: 'string', default: '5' },
    concurrency: { type: 'string', default: '16' },
    scrapes: { type: 'string', default: '300' },
    flood: { type: 'string', default: '16' },
    budget: { type: 'string', default: '200' },
    'budget-servers': { type: 'string', default: '2000' },
  },
});
const servers = Number(values.servers);
const latencyMs = Number(values.latency);
const concurrency = Number(values.concurrency);
const scrapes = Number(values.scrapes);

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)]!;
}

// 0. First, while the process is small: peak RSS while one 400 MB reply is refused at the size cap (reported in 4).
const huge = await measureHugeReply();

// 1. The simulator, in its own process (its CPU is not the daemon's).
async function spawnSimulator(count: number, apiKey: string): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(
    process.execPath,
    [
      'dist/main.js',
      'simulate',
      '--port',
      '0',
      '--servers',
      String(count),
      '--ips-per-server',
      values.ips!,
      '--latency',
      String(latencyMs),
      '--colocations',
      '0',
      '--transits',
      '0',
      '--api-key',
      apiKey,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let output = '';
  child.stdout!.on('data', (d) => {
    output += String(d);
  });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`simulator did not start: ${output}`)), 30_000);
    child.stdout!.on('data', () => {
      const match = /listening on (\S+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
  });
  return { child, url };
}
const { child: sim, url: simUrl } = await spawnSimulator(servers, 'bench-key');

// 2. The daemon, in this process, driven by hand.
const stateDir = mkdtempSync(join(tmpdir(), 'bmx-bench-'));
const config = buildConfig(
  {
    upstream: { base_url: simUrl, concurrency, timeout: '30s', max_requests_per_second: 10000 },
    web: { listen_address: '127.0.0.1:0' },
    state_dir: stateDir,
  },
  { BAREMETAL_API_KEY: 'bench-key' },
);
const daemon = await startDaemon(config, { logger: createLogger('error'), schedule: false, initialPolls: false });

async function cycle(): Promise<{ ms: number; outcomes: string[] }> {
  const started = performance.now();
  const outcomes = [await daemon.poller.run('servers'), await daemon.poller.run('firewall')];
  return { ms: performance.now() - started, outcomes };
}
const loop = monitorEventLoopDelay({ resolution: 5 });
loop.enable();
const cold = await cycle();
const exposition = await daemon.exposition.render();
loop.disable();
const rssMb = process.memoryUsage().rss / 2 ** 20;
// The steady state: every minute in production the same servers are polled again.
const warm = await cycle();
await daemon.exposition.render();

// The floor: the same requests from a bare undici loop, no daemon.
const floorAgent = new Agent({ connections: concurrency });
const floorStarted = performance.now();
let next = -1;
await Promise.all(
  Array.from({ length: concurrency }, async () => {
    while (next < servers) {
      const i = next++;
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
await floorAgent.close();
const requests = 1 + servers;
const boundMs = (requests * latencyMs) / concurrency;
const series = exposition.body
  .toString()
  .split('\n')
  .filter((l) => l && !l.startsWith('#')).length;

// 3. Scrapes: the daemon's /metrics against fastify serving the same bytes from a static buffer.
const baseline = Fastify();
const staticBody = Buffer.from(exposition.body);
baseline.get('/metrics', (_req, reply) => reply.type(exposition.contentType).send(staticBody));
const baselineUrl = await baseline.listen({ host: '127.0.0.1', port: 0 });
const agent = new Agent({ connections: 1 });
async function scrape(url: string, headers: Record<string, string> = {}): Promise<number> {
  const t = performance.now();
  const res = await request(`${url}/metrics`, { dispatcher: agent, headers });
  if (res.statusCode !== 200) throw new Error(`/metrics answered ${res.statusCode}`);
  await res.body.arrayBuffer();
  return performance.now() - t;
}
const daemonTimes: number[] = [];
const baselineTimes: number[] = [];
for (let i = 0; i < 10; i++) {
  await scrape(daemon.url);
  await scrape(baselineUrl);
}
for (let i = 0; i < scrapes; i++) {
  daemonTimes.push(await scrape(daemon.url));
  baselineTimes.push(await scrape(baselineUrl));
}
daemonTimes.sort((a, b) => a - b);
baselineTimes.sort((a, b) => a - b);

// 4. /metrics behind web.auth, idle and under a flood of wrong Basic credentials from another process.
const floodLoops = Number(values.flood);
const PASSWORD = 'bench-password-0123';
const TOKEN = 'bench-token-0123456789';
const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
/** `scrapes` scrapes, and more until 5 s have passed, so that the flood reaches its steady state. */
async function latencies(url: string, headers: Record<string, string>): Promise<number[]> {
  const times: number[] = [];
  const started = performance.now();
  while (times.length < scrapes || performance.now() - started < 5000) times.push(await scrape(url, headers));
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
    graphStores: new Map([['default', daemon.graphStore]]),
    graphMaxWidth: 2000,
    webAuth,
    passwordVerifier: pool,
  });
  const url = await app.listen({ host: '127.0.0.1', port: 0 });
  for (let i = 0; i < 10; i++) await scrape(url, scraper);
  const idle = await latencies(url, scraper);
  const flood = spawn(
    process.execPath,
    ['bench/flood.ts', `${url}/metrics`, String(floodLoops), basic('prometheus', 'wrong-password')],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let out = '';
  flood.stdout!.on('data', (d) => (out += String(d)));
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`flood did not start: ${out}`)), 30_000);
    flood.stdout!.on('data', () => {
      if (!out.includes('started')) return;
      clearTimeout(timer);
      resolve();
    });
  });
  const floodStarted = performance.now();
  const loaded = await latencies(url, scraper);
  const flooded = performance.now() - floodStarted;
  flood.kill('SIGTERM');
  await once(flood, 'exit');
  const { requests: floodRequests } = JSON.parse(out.trim().split('\n').pop()!) as { requests: number };
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
const floodRows = [
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
];

const rows = [
  {
    what: 'servers+firewall cycle (first)',
    measured: cold.ms,
    unit: 'ms',
    reference: `bound ${boundMs.toFixed(0)} ms (${requests} req × ${latencyMs} ms ÷ ${concurrency})`,
    target: 1.25 * boundMs,
    rule: '≤ 1.25 × bound',
  },
  {
    what: 'servers+firewall cycle (steady)',
    measured: warm.ms,
    unit: 'ms',
    reference: `bound ${boundMs.toFixed(0)} ms; floor ${floorMs.toFixed(0)} ms (bare undici loop)`,
    target: 1.25 * boundMs,
    rule: '≤ 1.25 × bound',
  },
  {
    what: '/metrics p50',
    measured: percentile(daemonTimes, 50),
    unit: 'ms',
    reference: `static ${percentile(baselineTimes, 50).toFixed(2)} ms`,
    target: 2 * percentile(baselineTimes, 50),
    rule: '≤ 2 × static',
  },
  {
    what: '/metrics p99',
    measured: percentile(daemonTimes, 99),
    unit: 'ms',
    reference: `static ${percentile(baselineTimes, 99).toFixed(2)} ms`,
    target: 2 * percentile(baselineTimes, 99),
    rule: '≤ 2 × static',
  },
  { what: 'RSS after cycle', measured: rssMb, unit: 'MB', reference: '—', target: 256, rule: '≤ 256 MB' },
  {
    what: 'event-loop delay p99 (cycle)',
    measured: loop.percentile(99) / 1e6,
    unit: 'ms',
    reference: `max ${(loop.max / 1e6).toFixed(1)} ms`,
    target: 20,
    rule: '≤ 20 ms',
  },
  ...floodRows,
];

// 4. Faults: one 400 MB reply is refused at the size cap without buffering it.

rows.push({
  what: 'peak RSS growth, one 400 MB reply refused',
  measured: huge.peakMb - huge.baselineMb,
  unit: 'MB',
  reference: `outcome ${huge.outcome} after ${huge.ms.toFixed(0)} ms; RSS ${huge.baselineMb.toFixed(0)} → ${huge.peakMb.toFixed(0)} MB (cap 32 MiB)`,
  target: 96,
  rule: '≤ 96 MB',
});

// 5. The request budget: a full firewall cycle against a simulator limited to 10 % above the budget.
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
await budgetDaemon.poller.run('servers');
const budgetStarted = performance.now();
const budgetOutcome = await budgetDaemon.poller.run('firewall');
const budgetSeconds = (performance.now() - budgetStarted) / 1000;
const sentPerSecond = budgetServers / budgetSeconds;
rows.push(
  {
    what: 'budget: requests/s sent ÷ max_requests_per_second',
    measured: sentPerSecond / budget,
    unit: '×',
    reference: `${budgetServers} firewall requests in ${budgetSeconds.toFixed(2)} s at ${budget}/s (expected ${(budgetServers / budget).toFixed(2)} s); outcome ${budgetOutcome}`,
    target: 1,
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
const budgetLow = sentPerSecond / budget < 0.9;
await budgetDaemon.stop();
await limited.close();
rmSync(budgetDir, { recursive: true, force: true });

// 6. Two accounts, each with half the servers on its own simulator (own key, own client and budget), polled at once.
const half = Math.floor(servers / 2);
const [simA, simB] = await Promise.all([spawnSimulator(half, 'bench-key-a'), spawnSimulator(half, 'bench-key-b')]);
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
    [await account.poller.run('servers'), await account.poller.run('firewall')].join('/'),
  ),
);
const twoMs = performance.now() - twoStarted;
const twoBoundMs = ((1 + half) * latencyMs) / concurrency;
rows.push({
  what: `two accounts × ${half} servers, servers+firewall cycle`,
  measured: twoMs,
  unit: 'ms',
  reference: `bound ${twoBoundMs.toFixed(0)} ms per account, both at once (each its own concurrency ${concurrency}); outcomes ${twoOutcomes.join(', ')}`,
  target: 1.25 * twoBoundMs,
  rule: '≤ 1.25 × bound',
});
await twoDaemon.stop();
for (const s of [simA, simB]) {
  s.child.kill('SIGTERM');
  await once(s.child, 'exit');
}
rmSync(twoDir, { recursive: true, force: true });

console.log(
  `\nbaremetal-exporter bench — ${servers} servers × ${values.ips} IPs, ${latencyMs} ms simulated latency, concurrency ${concurrency}, ${series} series (${(exposition.body.length / 2 ** 20).toFixed(1)} MiB exposition), Node ${process.version}`,
);
console.log(
  `poll outcomes: first ${cold.outcomes.join('/')}, steady ${warm.outcomes.join('/')}; ${scrapes} scrapes each\n`,
);
console.log('| measure | measured | compared with | target | result |');
console.log('|---|---|---|---|---|');
let missed = 0;
for (const row of rows) {
  const ok = row.measured <= row.target;
  if (!ok) missed++;
  console.log(
    `| ${row.what} | ${row.measured.toFixed(row.unit === 'MB' ? 0 : 2)} ${row.unit} | ${row.reference} | ${row.rule} (${row.target.toFixed(2)} ${row.unit}) | ${ok ? 'PASS' : 'MISS'} |`,
  );
}
if ([...cold.outcomes, ...warm.outcomes].some((o) => o !== 'success')) missed++;
if (budgetLow) missed++;

await agent.close();
await baseline.close();
await daemon.stop();
sim.kill('SIGTERM');
await once(sim, 'exit');
rmSync(stateDir, { recursive: true, force: true });
process.exitCode = missed ? 1 : 0;
