/**
 * The small-account rows of `npm run bench` (issue 22): bench/small.ts in a process of its own, with the
 * allocator the system gives (glibc) and, when Debian's libjemalloc2 is installed, with jemalloc preloaded
 * (as the Dockerfile and the systemd unit do); each against its floor (bench/floor.ts: Node importing the
 * runtime dependencies and idling) measured in the same run with the same flags and environment.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import type { Row } from './options.ts';
import type { SmallResult } from './small.ts';

/** Where Debian's libjemalloc2 puts the library (amd64, arm64). */
const JEMALLOC = ['/usr/lib/x86_64-linux-gnu/libjemalloc.so.2', '/usr/lib/aarch64-linux-gnu/libjemalloc.so.2'];

/** RSS growth from the middle cycle to the last allowed as "flat". */
const FLAT = 1.05;

interface SmallRun extends SmallResult {
  floorMb: number;
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

/** The small account with glibc's allocator, and with jemalloc when it is installed. */
export async function measureSmall(flags: string[]): Promise<{ glibc: SmallRun; jemalloc?: SmallRun }> {
  process.stderr.write('bench: small account (100 servers, graphs)…\n');
  const glibc = await run(flags, { LD_PRELOAD: '' });
  const library = JEMALLOC.find((path) => existsSync(path));
  if (!library) return { glibc };
  process.stderr.write('bench: small account with jemalloc…\n');
  return { glibc, jemalloc: await run(flags, { LD_PRELOAD: library }) };
}

/** RSS ÷ floor and flatness, for each allocator measured. */
export function smallRows(small: { glibc: SmallRun; jemalloc?: SmallRun }): Row[] {
  const rows = (r: SmallRun, allocator: string): Row[] => {
    const last = r.rssMb.at(-1)!;
    const middle = r.rssMb[Math.floor(r.rssMb.length / 2) - 1]!;
    const failed = r.outcomes.filter((o) => o !== 'success').length;
    return [
      {
        what: `small account RSS ÷ floor (${allocator})`,
        measured: last / r.floorMb,
        unit: '× floor',
        reference: `${r.servers} servers, ${r.images} graph images, ${r.rssMb.length} cycles of every poll: ${last.toFixed(0)} MB after the last; floor ${r.floorMb.toFixed(0)} MB (Node importing the runtime dependencies, idle); ${failed} polls not successful; CPU ${(r.cpuMs / r.rssMb.length / 1000).toFixed(1)} s a cycle`,
        target: 1.4,
        rule: '≤ 1.4 × floor',
      },
      {
        what: `small account RSS, last cycle ÷ cycle ${r.rssMb.length / 2} (${allocator})`,
        measured: last / middle,
        unit: '×',
        reference: `${middle.toFixed(0)} → ${last.toFixed(0)} MB`,
        target: FLAT,
        rule: `flat: ≤ ${FLAT}`,
      },
    ];
  };
  return [...rows(small.glibc, 'glibc'), ...(small.jemalloc ? rows(small.jemalloc, 'jemalloc') : [])];
}
