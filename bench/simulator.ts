/** The simulator of a bench size, in a child process of its own (its CPU and memory are not the daemon's). */
import { type ChildProcess, spawn } from 'node:child_process';

/** What a bench's simulator runs with: the size, the IPs, the latency, and which attack mix. */
export interface BenchSimulatorOptions {
  servers: number;
  ips: number;
  latencyMs: number;
  apiKey: string;
  /** the share of IPs attacked within an hour (simulate --attacks-per-hour) */
  attacksPerHour: number;
}

/** Starts `dist/main.js simulate` on port 0; resolves with the child and its URL once it listens (60 s). */
export async function spawnSimulator(options: BenchSimulatorOptions): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(
    process.execPath,
    [
      'dist/main.js',
      'simulate',
      '--port',
      '0',
      '--servers',
      String(options.servers),
      '--ips-per-server',
      String(options.ips),
      '--latency',
      String(options.latencyMs),
      '--colocations',
      '0',
      '--transits',
      '0',
      '--attacks-per-hour',
      String(options.attacksPerHour),
      '--api-key',
      options.apiKey,
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  let output = '';
  child.stdout!.on('data', (d) => {
    output += String(d);
  });
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`simulator did not start: ${output}`)), 60_000);
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
