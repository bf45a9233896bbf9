/**
 * `npm run bench`: the daemon's poll cycle, memory, event loop and /metrics against what the machine allows,
 * at one or more sizes. Each size runs in a process of its own (bench/size.ts: simulator child, daemon,
 * scraper child), so that RSS and heap are that size's alone; the first size also measures the rows that
 * need one daemon only (/metrics under a credential flood, the request budget, two accounts) and the HA rows
 * (bench/ha.ts: webhook → upstream call on SQLite and PostgreSQL, failover time), and the shared-accounts rows (bench/shares.ts: 1 replica against 3, a rolling restart). Before the sizes, the small account (bench/small-row.ts): 100 servers with graphs, ten cycles of every poll,
 * RSS after each against its floor, with the shipped jemalloc (and glibc for comparison). Each size runs with
 * the allocator the image and the systemd unit ship (jemalloc, when libjemalloc2 is installed) and also runs a graphs
 * poll. The simulator attacks its default share of IPs (~3 % within an hour); the table's header says so. Prints the
 * goal table of the first size, then the scale curve; exits 1 when a goal is missed. The graph-check row
 * (bench/graph-check.ts, CPU per image against inflating its pixel data) also runs alone. The decode rows
 * (bench/decode.ts): CPU to scrub and parse a reply as the client does, against a plain JSON.parse of it. The busy
 * small account (bench/busy-row.ts): 100 servers with graphs, every poll every 10 s for 90 s, the daemon's own
 * entrypoint, its RSS steady maximum against the same floor and against bare Node. Each size's RSS rows (after a
 * cycle, after a graphs poll) also against bare Node (bench/floor.mjs --bare) with the size's own flags and
 * allocator, measured right after it (issue 53), as a comparison beside the MB goal.
 *
 *   node bench/run.ts [--servers 10000 | --servers 1000,10000,50000] [--chart docs/bench-scale.png]
 *                     [--ips 2] [--latency 5] [--concurrency 16] [--scrapes 300] [--node-flags "…"] [--skip-extras]
 *   node bench/run.ts --smoke
 *   node bench/run.ts --only busy,small      (some parts only: PARTS below)
 *
 * `--smoke` runs every row once at its smallest size (SMOKE_SIZE in bench/options.ts and the sizes below) and
 * prints the table without judging a goal: it exits 0 unless a row throws. `npm test` runs it
 * (test/smoke/bench-smoke.test.ts), so that a row that no longer runs fails the suite.
 *
 * The "floor" is a bare undici loop making the same requests to the same simulator in the same run: what the
 * simulator, loopback and this machine allow. Goals are ratios to it (or to idle, or to a static buffer), so
 * that a busy machine moves both sides. Each size's process gets `--node-flags` (default the V8 flag the
 * shipped entrypoints set, bench/shipped.ts) and `--expose-gc` (for the heap after a full GC).
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { parseArgs } from 'node:util';
import { writeScaleChart } from './chart.ts';
import { decodeRows, measureDecode } from './decode.ts';
import { graphCheckRow, measureGraphCheck } from './graph-check.ts';
import { busyRows, measureBusy } from './busy-row.ts';
import { haRows, measureHa } from './ha.ts';
import { measureShares, sharesRows } from './shares.ts';
import { ATTACKED_PER_HOUR } from '../dist/simulator/state.js';
import { measureHugeReply } from './huge-reply.ts';
import { plainJs } from './plain-js.ts';
import { scopeRow } from './scope.ts';
import { SHIPPED_NODE_FLAGS, shippedAllocator } from './shipped.ts';
import { bareNodeMb, floorMb, measureSmall, smallRows } from './small-row.ts';
import { type Row, SIZE_OPTIONS, SMOKE_SIZE, type SizeResult } from './options.ts';

const { values } = parseArgs({
  options: {
    ...SIZE_OPTIONS,
    chart: { type: 'string' },
    /** leave out the flood, budget and two-account rows (they take minutes) */
    'skip-extras': { type: 'boolean', default: false },
    'node-flags': { type: 'string', default: SHIPPED_NODE_FLAGS.join(' ') },
    /** every row once at its smallest size, goals not judged (see the module comment) */
    smoke: { type: 'boolean', default: false },
    /** only these parts, comma-separated (PARTS); default all */
    only: { type: 'string' },
  },
});
/** The parts of the bench, each a set of rows that `--only` names. */
const PARTS = ['huge', 'graph-check', 'decode', 'small', 'busy', 'sizes', 'ha', 'shares', 'scope'] as const;
const only = values.only?.split(',');
const unknown = only?.filter((part) => !(PARTS as readonly string[]).includes(part));
if (unknown?.length) throw new Error(`--only: unknown part ${unknown.join(', ')} (parts: ${PARTS.join(', ')})`);
/** Whether `part` runs: every part unless --only names others. */
const runs = (part: (typeof PARTS)[number]) => !only || only.includes(part);
/** Runs `part` when it is wanted; undefined when --only leaves it out. */
const maybe = <T>(part: (typeof PARTS)[number], measure: () => Promise<T>) =>
  runs(part) ? measure() : Promise.resolve(undefined);
const smoke = values.smoke;
/** What each size runs with: the options given, or the smoke's. */
const sizeOptions: Record<keyof typeof SIZE_OPTIONS, string> = { ...values, ...(smoke ? SMOKE_SIZE : {}) };
const extras = smoke || !values['skip-extras'];
const sizes = sizeOptions.servers.split(',').map(Number);
if (sizes.some((n) => !Number.isInteger(n) || n < 1)) throw new Error(`--servers: ${sizeOptions.servers}`);

// First, while the process is small: peak RSS while one 400 MB reply is refused at the size cap (the smoke:
// 40 MiB, still over the 32 MiB cap).
/** Runs one part of the bench, saying on stderr how long it took (wall time: where a run's minutes go). */
async function timed<T>(what: string, part: () => Promise<T>): Promise<T> {
  const started = performance.now();
  const value = await part();
  process.stderr.write(`bench: ${what} took ${((performance.now() - started) / 1000).toFixed(1)} s\n`);
  return value;
}

const huge = await maybe('huge', () =>
  timed('the huge reply', () => measureHugeReply(smoke ? 40 * 2 ** 20 : 400 * 2 ** 20)),
);

// A graph check against inflating the same PNG's pixel data (issue 32), CPU per image in this process.
const graphCheck = await maybe('graph-check', () =>
  timed('the graph check', () => measureGraphCheck(smoke ? 10 : 500)),
);

// Decoding a reply (issue 43): the client's scrub and parse against a plain JSON.parse, in this process.
const decode = await maybe('decode', () => timed('the decode rows', () => measureDecode(sizes[0]!, smoke ? 0.1 : 1)));

// The small account (issue 22): 100 servers, every poll with graphs, ten cycles; its floor in the same run.
const nodeFlags = values['node-flags'].split(/\s+/).filter(Boolean);
const small = await maybe('small', () =>
  timed('the small account', () => measureSmall(nodeFlags, true, smoke ? { servers: 4, cycles: 2 } : undefined)),
);

// The busy small account (issue 43): every poll every 10 s, the daemon's own entrypoint, RSS steady maximum.
const busy = await maybe('busy', () =>
  timed('the busy small account', () =>
    measureBusy(nodeFlags, !smoke, smoke ? { servers: 4, seconds: 8, warmupSeconds: 4 } : undefined),
  ),
);

/** What the sizes run with: the allocator the image and the systemd unit preload. */
const allocator = shippedAllocator();

/** One size's result, with bare Node and the floor measured right after it with its flags and allocator (issue 53). */
interface SizeRun extends SizeResult {
  /** bare Node's RSS, MB: no import, idle 2 s (bench/floor.mjs --bare) */
  bareMb: number;
  /** the floor's RSS, MB: Node importing every runtime dependency, idle 2 s (bench/floor.mjs) */
  floorMb: number;
}

/** The flags each size's process runs with: `--node-flags` and `--expose-gc` (for the heap after a full GC). */
const sizeFlags = [...nodeFlags, '--expose-gc'];

async function measureSize(servers: number, extras: boolean): Promise<SizeRun> {
  const args = (Object.keys(SIZE_OPTIONS) as Array<keyof typeof SIZE_OPTIONS>).flatMap((key) => [
    `--${key}`,
    key === 'servers' ? String(servers) : sizeOptions[key],
  ]);
  if (extras) args.push('--extras');
  // As plain JavaScript, as the daemon runs: Node's type stripper would add ~25 MB to every RSS row (plain-js.ts).
  const child = spawn(process.execPath, [...sizeFlags, plainJs('bench/size.ts'), ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, ...allocator.env },
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += String(d)));
  const [code] = await once(child, 'exit');
  const last = out.trim().split('\n').pop() ?? '';
  if (code !== 0 || !last.startsWith('{'))
    throw new Error(`bench/size.ts --servers ${servers} failed (${code}): ${out}`);
  const result = JSON.parse(last) as SizeResult;
  // Bare Node and the floor with the size's own flags and allocator, in the same run, for its ÷ bare Node rows.
  return {
    ...result,
    bareMb: await bareNodeMb(sizeFlags, allocator.env),
    floorMb: await floorMb(sizeFlags, allocator.env),
  };
}

const results: SizeRun[] = [];
for (const [i, servers] of (runs('sizes') ? sizes : []).entries()) {
  process.stderr.write(`bench: ${servers} servers…\n`);
  results.push(await timed(`${servers} servers`, () => measureSize(servers, i === 0 && extras)));
}

// High availability (issue 10): webhook → upstream call on SQLite and PostgreSQL, and the failover time.
const ha =
  extras && runs('ha')
    ? await timed('the HA rows', () => measureHa(smoke ? { deliveries: 5, failovers: 1 } : {}))
    : undefined;

// Accounts shared among replicas (issue 42): 1 replica against 3, and a rolling restart of the 3. The smoke's
// window is 6 s, longer than the servers poll's 5 s period, so that it always holds a poll: a 4 s window missed
// every poll when it began less than a second after one (no request on either side, the smoke's row unjudged).
const shares =
  extras && runs('shares')
    ? await timed('the shared-accounts rows', () =>
        measureShares({ nodeFlags, ...(smoke ? { servers: 4, seconds: 6, warmupS: 1, compareServers: 0 } : {}) }),
      )
    : undefined;

const mb = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
const first = results[0];
/**
 * A size's RSS (after a cycle, after a graphs poll) ÷ bare Node with the same flags and allocator, same run
 * (issue 53): a comparison beside the MB goal of the row above it, whose goal it restates as a multiple.
 */
const bareRow = (what: string, rssMb: number, goalMb: number, r: SizeRun): Row => ({
  what: `${what} ÷ bare Node (${allocator.name})`,
  measured: rssMb / r.bareMb,
  unit: '× bare Node',
  reference: `${rssMb.toFixed(0)} MB against bare Node's ${r.bareMb.toFixed(0)} MB (no import, idle 2 s; ${sizeFlags.join(' ')}, same run); the floor importing every runtime dependency: ${r.floorMb.toFixed(0)} MB = ${(r.floorMb / r.bareMb).toFixed(2)} × bare Node; bench/size.ts run as plain JavaScript, without Node's type stripper`,
  target: goalMb / r.bareMb,
  rule: `≤ ${goalMb} MB = ${(goalMb / r.bareMb).toFixed(2)} × bare Node`,
  comparison: true,
});

/** The rows of the first size (bench/size.ts). */
const sizeRows = (first: SizeRun): Row[] => [
  {
    what: 'servers+firewall cycle, first',
    measured: first.coldMs / first.floorMs,
    unit: '× floor',
    reference: `${first.coldMs.toFixed(0)} ms; floor ${first.floorMs.toFixed(0)} ms (bare undici loop, ${first.requests} requests); main-thread CPU ${first.cpuColdMs.toFixed(0)} ms vs the floor's ${first.floorCpuMs.toFixed(0)} ms`,
    target: 1.1,
    rule: '≤ 1.10 × floor',
  },
  {
    what: 'servers+firewall cycle, steady',
    measured: first.warmMs / first.floorMs,
    unit: '× floor',
    reference: `${first.warmMs.toFixed(0)} ms; floor ${first.floorMs.toFixed(0)} ms; main-thread CPU ${first.cpuWarmMs.toFixed(0)} ms vs the floor's ${first.floorCpuMs.toFixed(0)} ms`,
    target: 1.1,
    rule: '≤ 1.10 × floor',
  },
  {
    what: 'main-thread CPU per request, steady cycle',
    measured: first.cpuWarmMs / first.floorCpuMs,
    unit: '× floor',
    reference: `${((first.cpuWarmMs * 1000) / first.requests).toFixed(0)} µs vs the bare undici loop's ${((first.floorCpuMs * 1000) / first.requests).toFixed(0)} µs (polls, collectors, the renderings they ask for and the scrapes served meanwhile)`,
    target: 1.5,
    rule: '≤ 1.5 × floor',
  },
  {
    what: 'RSS after a cycle',
    measured: first.rssMb,
    unit: 'MB',
    reference: `after the steady cycle ${first.rssSteadyMb.toFixed(0)} MB; live heap after GC ${first.heapMb.toFixed(0)} MB (${first.heapPerServerKb.toFixed(2)} KiB per server); node ${values['node-flags'] || '(no flags)'}, ${allocator.settings}`,
    target: 200,
    rule: '≤ 200 MB',
  },
  bareRow('RSS after a cycle', first.rssMb, 200, first),
  {
    what: 'longest event-loop block during a cycle',
    measured: first.blockMaxMs,
    unit: 'ms',
    reference: `main-thread CPU between two 5 ms ticks (servers + firewall polls and the renderings they ask for); wall-clock delay max ${first.delayMaxMs.toFixed(0)} ms, p99 ${first.delayP99Ms.toFixed(1)} ms (includes time the OS gave to other processes)`,
    target: 50,
    rule: '≤ 50 ms',
  },
  {
    what: '/metrics p99 ÷ static buffer',
    measured: first.scrapeIdleP99 / first.staticP99,
    unit: '×',
    reference: `${first.scrapeIdleP99.toFixed(2)} ms vs ${first.staticP99.toFixed(2)} ms (p50 ${first.scrapeIdleP50.toFixed(2)} vs ${first.staticP50.toFixed(2)} ms)`,
    target: 1.5,
    rule: '≤ 1.5',
  },
  {
    what: '/metrics p99 during a cycle ÷ idle',
    measured: first.scrapeDuringP99 / first.scrapeIdleP99,
    unit: '×',
    reference: `${first.scrapeDuringP99.toFixed(2)} ms (${first.scrapesDuring} scrapes during the steady cycle) vs ${first.scrapeIdleP99.toFixed(2)} ms idle`,
    target: 1.5,
    rule: '≤ 1.5 × idle',
  },
  {
    what: '/metrics p99 during a cycle ÷ idle, gzip (as Prometheus asks)',
    measured: first.scrapeDuringGzipP99 / first.scrapeIdleGzipP99,
    unit: '×',
    reference: `${first.scrapeDuringGzipP99.toFixed(2)} ms (${first.scrapesDuringGzip} scrapes during a third cycle, outcomes ${first.gzipCycleOutcomes.join('/')}) vs ${first.scrapeIdleGzipP99.toFixed(2)} ms idle`,
    target: 1.5,
    rule: '≤ 1.5 × idle',
  },
  {
    what: 'RSS after a graphs poll',
    measured: first.rssGraphsMb,
    unit: 'MB',
    reference: `${first.servers.toLocaleString('en')} images (default types × scales) in ${(first.graphsMs / 1000).toFixed(1)} s, CPU ${(first.graphsCpuMs / 1000).toFixed(1)} s, outcome ${first.graphsOutcome}`,
    // Issue 53: a 10,000-image graphs poll may hold its decoded images' pages; 250 MB, 50 above the cycle's 200.
    target: 250,
    rule: '≤ 250 MB',
  },
  bareRow('RSS after a graphs poll', first.rssGraphsMb, 250, first),
  ...first.rows,
];
const rows: Row[] = [
  ...(first ? sizeRows(first).slice(0, 9) : []),
  ...(small ? smallRows(small) : []),
  ...(busy ? busyRows(busy) : []),
  ...(graphCheck ? [graphCheckRow(graphCheck)] : []),
  ...(first ? sizeRows(first).slice(9) : []),
  ...(huge
    ? [
        {
          what: `peak RSS growth, one ${smoke ? '40 MiB' : '400 MB'} reply refused`,
          measured: huge.peakMb - huge.baselineMb,
          unit: 'MB',
          reference: `outcome ${huge.outcome} after ${huge.ms.toFixed(0)} ms; RSS ${huge.baselineMb.toFixed(0)} → ${huge.peakMb.toFixed(0)} MB (cap 32 MiB)`,
          target: 96,
          rule: '≤ 96 MB',
        },
      ]
    : []),
  ...(ha ? haRows(ha) : []),
  ...(shares ? sharesRows(shares) : []),
  ...(runs('scope') ? [scopeRow(smoke ? 100 : 10_000)] : []),
  ...(decode ? decodeRows(decode) : []),
];

console.log(
  `\nbaremetal-exporter bench${smoke ? ' smoke (every row once at its smallest size; goals not judged)' : ''}${only ? ` (only ${only.join(', ')})` : ''}${first ? ` — ${first.servers} servers × ${sizeOptions.ips} IPs, ${sizeOptions.latency} ms simulated latency, concurrency ${sizeOptions.concurrency}, ${first.series} series (${mb(first.expositionBytes)} exposition)` : ''}, Node ${process.version}`,
);
if (first) console.log(`poll outcomes: ${first.outcomes.join('/')} (first servers/firewall, steady servers/firewall)`);
console.log(
  `attack mix: the simulator's default, ${(ATTACKED_PER_HOUR * 100).toFixed(0)} % of IPs attacked within an hour`,
);
console.log(`allocator: ${allocator.settings} (what the image and the systemd unit preload)\n`);
if (small) {
  console.log(
    `small account, RSS after each cycle (MB), ${small.shipped.allocator}: ${small.shipped.rssMb.map((mb) => mb.toFixed(0)).join(' ')}`,
  );
  if (small.glibc)
    console.log(`  with glibc, for comparison: ${small.glibc.rssMb.map((mb) => mb.toFixed(0)).join(' ')}`);
}
for (const r of busy ? [busy.shipped, busy.glibc] : [])
  if (r)
    console.log(
      `busy small account, RSS after the warm-up (MB), ${r.allocator}: ${r.steadyMb.map((mb) => mb.toFixed(0)).join(' ')}`,
    );
console.log('');
console.log('| measure | measured | compared with | target | result |');
console.log('|---|---|---|---|---|');
let missed = 0;
for (const row of rows) {
  const ok = row.measured <= row.target && (row.min === undefined || row.measured >= row.min);
  if (!ok && !row.comparison) missed++;
  const result = row.comparison
    ? `comparison (${ok ? 'within' : 'outside'})`
    : smoke
      ? `not judged (${ok ? 'pass' : 'miss'})`
      : ok
        ? 'PASS'
        : 'MISS';
  console.log(
    `| ${row.what} | ${row.measured.toFixed(row.unit === 'MB' || row.unit === 'ms' ? 0 : 2)} ${row.unit} | ${row.reference} | ${row.rule} | ${result} |`,
  );
}
if (results.some((r) => r.outcomes.some((o) => o !== 'success') || r.graphsOutcome !== 'success')) missed++;
if (ha?.skipped) console.log(`\n${ha.skipped}`);
if (shares?.skipped) console.log(`\n${shares.skipped}`);

console.log('\nScale curve (each size in a process of its own):\n');
console.log(
  '| servers | series | cycle first ÷ floor | cycle steady ÷ floor | floor | CPU µs per request: first / steady / floor | RSS after cycle (steady) | ÷ bare Node | live heap | heap per server | exposition plain / gzip | /metrics p99 idle / during cycle | longest loop block (delay max) |',
);
console.log('|---|---|---|---|---|---|---|---|---|---|---|---|---|');
for (const r of results)
  console.log(
    `| ${r.servers.toLocaleString('en')}${r.outcomes.every((o) => o === 'success') ? '' : ` (${r.outcomes.join('/')})`} | ${r.series.toLocaleString('en')} | ${(r.coldMs / r.floorMs).toFixed(2)} | ${(r.warmMs / r.floorMs).toFixed(2)} | ${(r.floorMs / 1000).toFixed(1)} s | ${[r.cpuColdMs, r.cpuWarmMs, r.floorCpuMs].map((ms) => ((ms * 1000) / r.requests).toFixed(0)).join(' / ')} | ${r.rssMb.toFixed(0)} (${r.rssSteadyMb.toFixed(0)}) MB | ${(r.rssMb / r.bareMb).toFixed(2)} (bare ${r.bareMb.toFixed(0)} MB) | ${r.heapMb.toFixed(0)} MB | ${r.heapPerServerKb.toFixed(2)} KiB | ${mb(r.expositionBytes)} / ${mb(r.gzipBytes)} | ${r.scrapeIdleP99.toFixed(1)} / ${r.scrapeDuringP99.toFixed(1)} ms | ${r.blockMaxMs.toFixed(0)} (${r.delayMaxMs.toFixed(0)}) ms |`,
  );

if (values.chart && !smoke) {
  await writeScaleChart(
    values.chart,
    results.map((r) => ({
      servers: r.servers,
      coldRatio: r.coldMs / r.floorMs,
      warmRatio: r.warmMs / r.floorMs,
      heapPerServerKb: r.heapPerServerKb,
      rssMb: r.rssMb,
    })),
    `npm run bench -- --servers ${values.servers}: ${values.ips} IPs per server, ${values.latency} ms simulated latency, concurrency ${values.concurrency}, Node ${process.version}`,
  );
  console.log(`\nchart: ${values.chart}`);
}
process.exitCode = missed && !smoke ? 1 : 0;
