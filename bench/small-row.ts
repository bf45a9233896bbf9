/**
 * The small-account rows of `npm run bench` (issue 22): bench/small.ts in a process of its own, with jemalloc
 * preloaded as the Dockerfile and the systemd unit ship it (Debian's libjemalloc2; the goals), and with the
 * allocator the system gives (glibc; for comparison); each against its floor (bench/floor.ts: Node importing
 * the runtime dependencies and idling) measured in the same run with the same flags and environment.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import type { Row } from './options.ts';
import type { SmallResult } from './small.ts';

/** Where Debian's libjemalloc2 puts the library (amd64, arm64). */
const JEMALLOC = ['/usr/lib/x86_64-linux-gnu/libjemalloc.so.2', '/usr/lib/aarch64-linux-gnu/libjemalloc.so.2'];

/**
 * The allocator the daemon ships with (the image's and the unit's LD_PRELOAD): jemalloc when Debian's
 * libjemalloc2 is installed here (.ci/run installs it), else glibc's, named so in the table.
 */
export function shippedAllocator(): { name: string; env: NodeJS.ProcessEnv } {
  const library = JEMALLOC.find((path) => existsSync(path));
  return library
    ? { name: 'jemalloc', env: { LD_PRELOAD: library } }
    : { name: 'glibc (libjemalloc2 not installed)', env: { LD_PRELOAD: '' } };
}

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

async function run(flags: string[], env: NodeJS.ProcessEnv): Promise<SmallRun> {
  const result = await runLast<SmallResult>('bench/small.ts', flags, env);
  const floorMb = (await runLast<number>('bench/floor.ts', flags, env)) / 2 ** 20;
  return { ...result, floorMb };
}

/** The small account with the shipped allocator, and with glibc's for comparison when that is jemalloc. */
export async function measureSmall(flags: string[]): Promise<{ shipped: SmallRun; glibc?: SmallRun }> {
  const allocator = shippedAllocator();
  process.stderr.write(`bench: small account (100 servers, graphs), ${allocator.name}…\n`);
  const shipped = { ...(await run(flags, allocator.env)), allocator: allocator.name };
  if (allocator.name !== 'jemalloc') return { shipped };
  process.stderr.write('bench: small account with glibc, for comparison…\n');
  return { shipped, glibc: { ...(await run(flags, { LD_PRELOAD: '' })), allocator: 'glibc, for comparison' } };
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
        reference: `${r.servers} servers, ${r.images} graph images, ${r.rssMb.length} cycles of every poll: ${last.toFixed(0)} MB after the last; floor ${r.floorMb.toFixed(0)} MB (Node importing the runtime dependencies, idle); ${failed} polls not successful; CPU ${(r.cpuMs / r.rssMb.length / 1000).toFixed(1)} s a cycle`,
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
