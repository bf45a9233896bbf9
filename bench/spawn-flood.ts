/**
 * Starts bench/flood.ts in its own process (its CPU is not the daemon's) and waits for its first answer; `stop`
 * ends it and resolves with what it counted. Shared by the flood rows of bench/size.ts and
 * bench/sporadic-users.ts.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';

/** What bench/flood.ts prints last: requests sent and their answers by status (`error`: no answer). */
export interface FloodCount {
  requests: number;
  statuses: Record<string, number>;
}

/** Floods `url` with `loops` loops sending `authorization`, from `localAddress` when given. */
export async function spawnFlood(
  url: string,
  loops: number,
  authorization: string,
  localAddress?: string,
): Promise<{ stop: () => Promise<FloodCount> }> {
  const flood = spawn(
    process.execPath,
    [
      new URL('./flood.ts', import.meta.url).pathname,
      url,
      String(loops),
      authorization,
      ...(localAddress ? ['--local-address', localAddress] : []),
    ],
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
  return {
    stop: async () => {
      flood.kill('SIGTERM');
      await once(flood, 'exit');
      return JSON.parse(out.trim().split('\n').pop()!) as FloodCount;
    },
  };
}
