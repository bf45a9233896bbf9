/**
 * The busy small account of `npm run bench` (issue 43, item 4): 100 servers × 2 IPs with graphs (port_bits,
 * port_percent × day, week: 400 images), **every poll every 10 s** (servers, firewall, graphs, catalog), for
 * 90 s, run as shipped — the daemon's own entrypoint (`dist/main.js run --config.file`), the daemon's Node flags
 * (`--node-flags`, default the launcher's, bench/shipped.ts) and a config file. Its RSS is read from
 * /proc every 500 ms; the figure is the **steady maximum**, the largest RSS after the first 30 s (three rounds
 * of every poll), against the floor (bench/floor.mjs: Node importing the runtime dependencies, idle) with the
 * same flags and allocator, in the same run. With jemalloc as shipped (the goal, ≤ 1.4 × the floor) and with
 * glibc for comparison. The request budget is raised to 100/s (from 10): at 10/s, 500 requests every 10 s
 * could not all be sent, and the daemon would hold less than a busy account makes it hold. At the end,
 * /metrics is scraped and `baremetal_poll_runs_total` says how every poll's runs ended.
 *
 *   npm run build && node bench/busy-row.ts [--seconds 90] [--shipped-only] [--main dist/main.js]
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import type { Row } from './options.ts';
import { SHIPPED_NODE_FLAGS, shippedAllocator } from './shipped.ts';
import { bareNodeMb, floorMb, spawnSmallSimulator } from './small-row.ts';

/** The busy account: its servers, how long it runs, and the part of the run before RSS is called steady. */
export interface BusySize {
  servers: number;
  seconds: number;
  warmupSeconds: number;
}
const BUSY: BusySize = { servers: 100, seconds: 90, warmupSeconds: 30 };
const EVERY_10_S = '*/10 * * * * *';

export interface BusyRun {
  allocator: string;
  servers: number;
  images: number;
  /** RSS samples after the warm-up (`warmupSeconds`), MB */
  steadyMb: number[];
  warmupSeconds: number;
  floorMb: number;
  /** bare Node's RSS, MB, same flags and allocator, same run */
  bareMb: number;
  /** poll → outcome → runs, from baremetal_poll_runs_total */
  runs: Record<string, Record<string, number>>;
  cpuMs: number;
}

/** A free loopback port (the daemon's /metrics). */
async function freePort(): Promise<number> {
  const server = createServer();
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  return port;
}

/** VmRSS of `pid`, MB; undefined once it is gone. */
function rssMb(pid: number): number | undefined {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) / 1024 : undefined;
  } catch {
    return undefined;
  }
}

/** user + system CPU of `pid` so far, ms (from /proc/PID/stat, clock ticks of 10 ms). */
function cpuMsOf(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10;
}

async function run(
  flags: string[],
  allocator: { name: string; env: NodeJS.ProcessEnv },
  size: BusySize,
  entry: string,
) {
  const { child: sim, url } = await spawnSmallSimulator(size.servers);
  const dir = mkdtempSync(join(tmpdir(), 'bmx-bench-busy-'));
  const port = await freePort();
  const config = join(dir, 'config.yml');
  writeFileSync(
    config,
    [
      'upstream:',
      `  base_url: ${url}`,
      '  max_requests_per_second: 100',
      'graphs:',
      '  types: [port_bits, port_percent]',
      '  scales: [day, week]',
      'schedules:',
      ...['servers', 'firewall', 'graphs', 'catalog'].map((job) => `  ${job}: '${EVERY_10_S}'`),
      `state_dir: ${join(dir, 'state')}`,
      '',
    ].join('\n'),
  );
  const daemon = spawn(
    process.execPath,
    [...flags, entry, 'run', `--config.file=${config}`, `--web.listen-address=127.0.0.1:${port}`],
    {
      stdio: ['ignore', 'ignore', 'inherit'],
      env: { ...process.env, ...allocator.env, BAREMETAL_API_KEY: 'bench-key' },
    },
  );
  const exited = once(daemon, 'exit');
  const steadyMb: number[] = [];
  let cpuMs = 0;
  try {
    const started = performance.now();
    let cpuAtWarm: number | undefined;
    while (performance.now() - started < size.seconds * 1000) {
      await sleep(500);
      const mb = rssMb(daemon.pid!);
      if (mb === undefined) throw new Error('the daemon exited during the busy-account row');
      if (performance.now() - started >= size.warmupSeconds * 1000) {
        cpuAtWarm ??= cpuMsOf(daemon.pid!);
        steadyMb.push(mb);
      }
    }
    cpuMs = cpuMsOf(daemon.pid!) - (cpuAtWarm ?? 0);
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const runs: BusyRun['runs'] = {};
    for (const match of metrics.matchAll(/^baremetal_poll_runs_total\{([^}]*)\} (\d+)/gm)) {
      const poll = /poll="([^"]+)"/.exec(match[1]!)?.[1] ?? '?';
      const outcome = /outcome="([^"]+)"/.exec(match[1]!)?.[1] ?? '?';
      runs[poll] = { ...runs[poll], [outcome]: Number(match[2]) };
    }
    const floor = await floorMb(flags, allocator.env);
    const bare = await bareNodeMb(flags, allocator.env);
    return {
      allocator: allocator.name,
      servers: size.servers,
      images: size.servers * 4,
      steadyMb,
      warmupSeconds: size.warmupSeconds,
      floorMb: floor,
      bareMb: bare,
      runs,
      cpuMs,
    } satisfies BusyRun;
  } finally {
    daemon.kill('SIGTERM');
    await exited;
    sim.kill();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The busy account with the shipped allocator, and with glibc's for comparison when that is jemalloc. */
export async function measureBusy(
  flags: string[],
  comparison = true,
  size: BusySize = BUSY,
  entry = 'dist/main.js',
): Promise<{ shipped: BusyRun; glibc?: BusyRun }> {
  const allocator = shippedAllocator();
  process.stderr.write(
    `bench: busy small account (${size.servers} servers, every poll every 10 s), ${allocator.name}…\n`,
  );
  const shipped = await run(flags, allocator, size, entry);
  if (allocator.name !== 'jemalloc' || !comparison) return { shipped };
  process.stderr.write('bench: busy small account with glibc, for comparison…\n');
  return { shipped, glibc: await run(flags, { name: 'glibc, for comparison', env: { LD_PRELOAD: '' } }, size, entry) };
}

/** The runs in all, per poll, and those that did not end `success` (by poll and outcome). */
function runCounts(runs: BusyRun['runs']): { all: number; other: number; polls: string; others: string } {
  let all = 0;
  let other = 0;
  const polls: string[] = [];
  const others: string[] = [];
  for (const [poll, outcomes] of Object.entries(runs)) {
    const n = Object.values(outcomes).reduce((a, b) => a + b, 0);
    all += n;
    other += n - (outcomes.success ?? 0);
    polls.push(`${poll} ${n}`);
    for (const [outcome, count] of Object.entries(outcomes))
      if (outcome !== 'success' && count > 0) others.push(`${poll} ${outcome} ${count}`);
  }
  return { all, other, polls: polls.join(', '), others: others.length ? ` (${others.join(', ')})` : '' };
}

/**
 * Steady maximum ÷ floor for each allocator measured, and ÷ bare Node (issue 53: what a user pays, the
 * dependencies' own cost included); glibc's rows are comparisons, not goals.
 */
export function busyRows(busy: { shipped: BusyRun; glibc?: BusyRun }): Row[] {
  return [busy.shipped, ...(busy.glibc ? [busy.glibc] : [])].flatMap((r) => {
    const max = Math.max(...r.steadyMb);
    const runs = runCounts(r.runs);
    const seconds = r.steadyMb.length / 2;
    const row: Row = {
      what: `busy small account RSS steady max ÷ floor (${r.allocator})`,
      measured: max / r.floorMb,
      unit: '× floor',
      reference: `${r.servers} servers, ${r.images} graph images, every poll every 10 s, dist/main.js run: ${max.toFixed(0)} MB at most after the first ${r.warmupSeconds} s (${Math.min(...r.steadyMb).toFixed(0)}–${max.toFixed(0)} MB over ${seconds} s); floor ${r.floorMb.toFixed(0)} MB (Node importing the runtime dependencies, idle); ${runs.all} poll runs (${runs.polls}), ${runs.other} not successful${runs.others}; CPU ${(r.cpuMs / seconds / 10).toFixed(1)} % of a core`,
      target: 1.4,
      rule: '≤ 1.4 × floor',
      ...(r === busy.glibc ? { comparison: true as const } : {}),
    };
    const bare: Row = {
      what: `busy small account RSS steady max ÷ bare Node (${r.allocator})`,
      measured: max / r.bareMb,
      unit: '× bare Node',
      reference: `${max.toFixed(0)} MB at most against bare Node's ${r.bareMb.toFixed(0)} MB (no import, idle 2 s, the daemon's flags and allocator, same run); the floor above imports every runtime dependency: ${r.floorMb.toFixed(0)} MB`,
      target: 2.5,
      rule: '≤ 2.5 × bare Node',
      ...(r === busy.glibc ? { comparison: true as const } : {}),
    };
    return [row, bare];
  });
}

if (import.meta.main) {
  const { values } = parseArgs({
    options: {
      seconds: { type: 'string', default: String(BUSY.seconds) },
      'shipped-only': { type: 'boolean', default: false },
      'node-flags': { type: 'string', default: SHIPPED_NODE_FLAGS.join(' ') },
      /** the daemon's entrypoint: another build's, to compare two in the same conditions */
      main: { type: 'string', default: 'dist/main.js' },
    },
  });
  const flags = values['node-flags'].split(/\s+/).filter(Boolean);
  const size = { ...BUSY, seconds: Number(values.seconds) };
  const busy = await measureBusy(flags, !values['shipped-only'], size, values.main);
  let missed = 0;
  for (const row of busyRows(busy)) {
    const ok = row.measured <= row.target;
    if (!ok && !row.comparison) missed++;
    const result = row.comparison ? `comparison (${ok ? 'within' : 'outside'})` : ok ? 'PASS' : 'MISS';
    console.log(
      `| ${row.what} | ${row.measured.toFixed(2)} ${row.unit} | ${row.reference} | ${row.rule} | ${result} |`,
    );
  }
  for (const r of [busy.shipped, busy.glibc].filter((r) => r !== undefined))
    console.log(`${r.allocator}: RSS after the warm-up (MB): ${r.steadyMb.map((mb) => mb.toFixed(0)).join(' ')}`);
  process.exitCode = missed ? 1 : 0;
}
