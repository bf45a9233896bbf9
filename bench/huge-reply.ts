/**
 * Bench row: peak RSS of the daemon's upstream client while it refuses one 400 MB reply. The simulator runs
 * in a child process (mode `huge`, streamed, never held in memory) so that only the client's memory is
 * measured here; RSS is sampled every 5 ms from before the request until the refusal.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { UpstreamClient } from '../dist/upstream/client.js';
import { listServers } from '../dist/upstream/dedicated.js';

/** The simulator with every server-list reply `bytes` long, in a child process; resolves with its URL. */
async function hugeSimulator(bytes: number): Promise<{ url: string; stop: () => Promise<void> }> {
  const script = `
    const { startSimulator } = await import(${JSON.stringify(new URL('../dist/simulator/server.js', import.meta.url).href)});
    const sim = await startSimulator({ apiKey: 'bench-key', servers: 1, faults: { mode: 'huge', hugeBytes: ${bytes}, paths: ['/api/v1/dedicated'] } });
    process.stdout.write('listening on ' + sim.url + '\\n');
    process.on('SIGTERM', () => sim.close().then(() => process.exit(0)));`;
  const child = spawn(process.execPath, ['--input-type=module', '-e', script], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`huge-reply simulator did not start: ${out}`)), 30_000);
    child.stdout!.on('data', (d) => {
      out += String(d);
      const match = /listening on (\S+)/.exec(out);
      if (match) {
        clearTimeout(timer);
        resolve(match[1]!);
      }
    });
  });
  return {
    url,
    stop: async () => {
      child.kill('SIGTERM');
      await once(child, 'exit');
    },
  };
}

/** Measures the refusal of one `bytes`-long reply under the default cap (32 MiB). */
export async function measureHugeReply(
  bytes = 400 * 1024 * 1024,
): Promise<{ baselineMb: number; peakMb: number; outcome: string; ms: number }> {
  const sim = await hugeSimulator(bytes);
  const outcomes: string[] = [];
  const client = new UpstreamClient({
    baseUrl: sim.url,
    apiKey: 'bench-key',
    timeoutMs: 60_000,
    concurrency: 1,
    retries: 0,
    onRequest: (e) => outcomes.push(e.outcome),
  });
  globalThis.gc?.();
  const baselineMb = process.memoryUsage().rss / 2 ** 20;
  let peak = baselineMb;
  const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss / 2 ** 20)), 5);
  const started = performance.now();
  await listServers(client).catch(() => undefined);
  const ms = performance.now() - started;
  clearInterval(sampler);
  peak = Math.max(peak, process.memoryUsage().rss / 2 ** 20);
  await client.close();
  await sim.stop();
  return { baselineMb, peakMb: peak, outcome: outcomes.join(','), ms };
}
