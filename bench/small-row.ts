/**
 * The small-account rows of `npm run bench` (issue 22): bench/small.mjs in a process of its own, with jemalloc
 * preloaded as the Dockerfile and the systemd unit ship it (Debian's libjemalloc2; the goals), and with the
 * allocator the system gives (glibc; for comparison); each against its floor (bench/floor.mjs: Node importing
 * the runtime dependencies and idling) measured in the same run with the same flags and environment. Both
 * are plain JavaScript, as the daemon (dist/) is, so neither loads Node's type stripper (issue 32); the
 * simulator runs in a process of its own, started here.
 *
 *   npm run build && node bench/small-row.ts [--shipped-only]
 *
 * runs these rows alone (`--shipped-only`: without the glibc comparison), prints them, exits 1 on a miss.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { ATTACKED_PER_HOUR } from '../dist/simulator/state.js';
import type { Row, SmallResult } from './options.ts';
import { SHIPPED_NODE_FLAGS, shippedAllocator } from './shipped.ts';
import { spawnSimulator } from './simulator.ts';

/** RSS growth from the middle cycle to the last allowed as "flat". */
const FLAT = 1.05;

interface SmallRun extends SmallResult {
  floorMb: number;
  /** which allocator, as the table names it */
  allocator?: string;
}

/** Runs `script` with `flags` and `env`; the last stdout line, parsed as JSON. */
async function runLast<T>(script: string, flags: string[], env: NodeJS.ProcessEnv, args: string[] = []): Promise<T> {
  const child = spawn(process.execPath, [...flags, script, ...args], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, ...env },
  });
  let out = '';
  child.stdout!.on('data', (d) => (out += String(d)));
  const [code] = await once(child, 'exit');
  const last = out.trim().split('\n').pop() ?? '';
  if (code !== 0) throw new Error(`${script} failed (${code}): ${out}`);
  return JSON.parse(last) as T;
}

/** The simulator of a small account: `servers` × 2 IPs, 5 ms latency, the default attack mix, key `bench-key`. */
export function spawnSmallSimulator(servers: number) {
  return spawnSimulator({ servers, ips: 2, latencyMs: 5, apiKey: 'bench-key', attacksPerHour: ATTACKED_PER_HOUR });
}

/** The floor (bench/floor.mjs) with `flags` and `env`: RSS of Node importing the runtime dependencies, idle, MB. */
export async function floorMb(flags: string[], env: NodeJS.ProcessEnv): Promise<number> {
  return (await runLast<number>('bench/floor.mjs', flags, env)) / 2 ** 20;
}

/** Bare Node's RSS, MB, with these flags and environment (allocator), idle for 2 s: `floor.mjs --bare`. */
export async function bareNodeMb(flags: string[], env: NodeJS.ProcessEnv): Promise<number> {
  return (await runLast<number>('bench/floor.mjs', flags, env, ['--bare'])) / 2 ** 20;
}

/** The small account: its servers (× 2 IPs) and the cycles of every poll measured. */
export interface SmallSize {
  servers: number;
  cycles: number;
}
const SMALL: SmallSize = { servers: 100, cycles: 10 };

async function run(flags: string[], env: NodeJS.ProcessEnv, size: SmallSize): Promise<SmallRun> {
  const { child: sim, url } = await spawnSmallSimulator(size.servers);
  try {
    const args = ['--url', url, '--servers', String(size.servers), '--cycles', String(size.cycles)];
    const result = await runLast<SmallResult>('bench/small.mjs', flags, env, args);
    return { ...result, floorMb: await floorMb(flags, env) };
  } finally {
    sim.kill();
  }
}

/** The small account with the shipped allocator, and with glibc's for comparison when that is jemalloc. */
export async function measureSmall(
  flags: string[],
  comparison = true,
  size: SmallSize = SMALL,
): Promise<{ shipped: SmallRun; glibc?: SmallRun }> {
  const allocator = shippedAllocator();
  process.stderr.write(`bench: small account (${size.servers} servers, graphs), ${allocator.name}…\n`);
  const shipped = { ...(await run(flags, allocator.env, size)), allocator: allocator.name };
  if (allocator.name !== 'jemalloc' || !comparison) return { shipped };
  process.stderr.write('bench: small account with glibc, for comparison…\n');
  return {
    shipped,
    glibc: { ...(await run(flags, { LD_PRELOAD: '' }, size)), allocator: 'glibc, for comparison' },
  };
}

/** RSS ÷ floor and flatness, for each allocator measured; glibc's rows are a comparison, not goals. */
export function smallRows(small: { shipped: SmallRun; glibc?: SmallRun }): Row[] {
  const rows = (r: SmallRun, comparison: boolean): Row[] => {
    const last = r.rssMb.at(-1)!;
    const middle = r.rssMb[Math.floor(r.rssMb.length / 2) - 1]!;
    const failed = r.outcomes.filter((o) => o !== 'success').length;
    const extra = comparison ? { comparison: true as const } : {};
    return [
      {
        what: `small account RSS ÷ floor (${r.allocator})`,
        measured: last / r.floorMb,
        unit: '× floor',
        reference: `${r.servers} servers, ${r.images} graph images, ${r.rssMb.length} cycles of every poll: ${last.toFixed(0)} MB after the last; floor ${r.floorMb.toFixed(0)} MB (Node importing the runtime dependencies, idle, plain JavaScript); ${failed} polls not successful; CPU ${(r.cpuMs / r.rssMb.length / 1000).toFixed(1)} s a cycle`,
        target: 1.4,
        rule: '≤ 1.4 × floor',
        ...extra,
      },
      {
        what: `small account RSS, last cycle ÷ cycle ${r.rssMb.length / 2} (${r.allocator})`,
        measured: last / middle,
        unit: '×',
        reference: `${middle.toFixed(0)} → ${last.toFixed(0)} MB`,
        target: FLAT,
        rule: `flat: ≤ ${FLAT}`,
        ...extra,
      },
    ];
  };
  return [...rows(small.shipped, false), ...(small.glibc ? rows(small.glibc, true) : [])];
}

if (import.meta.main) {
  // --shipped-only: without the glibc comparison (half the time).
  const shippedOnly = process.argv.includes('--shipped-only');
  const rows = smallRows(await measureSmall(SHIPPED_NODE_FLAGS, !shippedOnly));
  let missed = 0;
  for (const row of rows) {
    const ok = row.measured <= row.target;
    if (!ok && !row.comparison) missed++;
    const result = row.comparison ? `comparison (${ok ? 'within' : 'outside'})` : ok ? 'PASS' : 'MISS';
    console.log(
      `| ${row.what} | ${row.measured.toFixed(2)} ${row.unit} | ${row.reference} | ${row.rule} | ${result} |`,
    );
  }
  process.exitCode = missed ? 1 : 0;
}
