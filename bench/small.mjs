/**
 * The small-account row of `npm run bench` (issue 22): what most customers run, in a process of its own. The
 * simulator at `--url` (small-row.ts starts it in a process of its own) has `--servers` servers × 2 IPs with
 * the default attack mix (~3 % of IPs attacked within an hour); the daemon (this process, driven by hand) runs
 * every poll — servers, firewall, graphs (port_bits, port_percent × day, week) and catalog — `--cycles` times,
 * and RSS is taken after each cycle. Prints one JSON line (`SmallResult`, bench/options.ts) last.
 *
 * Plain JavaScript importing dist/, as the daemon runs (issue 32): a `.ts` file would load Node's type stripper
 * into the process measured.
 *
 *   node --max-semi-space-size=2 bench/small.mjs --url http://127.0.0.1:PORT [--servers 100] [--cycles 10]
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { buildConfig } from '../dist/config/load.js';
import { startDaemon } from '../dist/daemon/start.js';
import { createLogger } from '../dist/logger.js';
import { ATTACKED_PER_HOUR } from '../dist/simulator/state.js';

/** The graphs of the small-account row: two types × two scales. */
const SMALL_GRAPHS = { types: ['port_bits', 'port_percent'], scales: ['day', 'week'] };

const { values } = parseArgs({
  options: {
    url: { type: 'string' },
    servers: { type: 'string', default: '100' },
    cycles: { type: 'string', default: '10' },
  },
});
const servers = Number(values.servers);
const cycles = Number(values.cycles);
const url = values.url;
if (!url) throw new Error('--url: the simulator to poll');
const stateDir = mkdtempSync(join(tmpdir(), 'bmx-bench-small-'));
const config = buildConfig(
  {
    upstream: { base_url: url, concurrency: 16, timeout: '30s' },
    graphs: SMALL_GRAPHS,
    web: { listen_address: '127.0.0.1:0' },
    state_dir: stateDir,
  },
  { BAREMETAL_API_KEY: 'bench-key' },
);
const daemon = await startDaemon(config, { logger: createLogger('error'), schedule: false, initialPolls: false });
/** @type {number[]} */
const rssMb = [];
/** @type {string[]} */
const outcomes = [];
let cycleMaxMs = 0;
const cpu = process.cpuUsage();
for (let cycle = 0; cycle < cycles; cycle++) {
  const started = performance.now();
  for (const job of ['servers', 'firewall', 'graphs', 'catalog'])
    outcomes.push(await daemon.accounts.get('default').polls.run(job));
  await daemon.exposition.render();
  cycleMaxMs = Math.max(cycleMaxMs, performance.now() - started);
  rssMb.push(process.memoryUsage().rss / 2 ** 20);
  process.stderr.write(`bench: small account, cycle ${cycle + 1}: RSS ${rssMb.at(-1).toFixed(0)} MB\n`);
}
const { user, system } = process.cpuUsage(cpu);
await daemon.stop();
rmSync(stateDir, { recursive: true, force: true });
/** @type {import('./options.ts').SmallResult} */
const result = {
  servers,
  images: servers * SMALL_GRAPHS.types.length * SMALL_GRAPHS.scales.length,
  rssMb,
  outcomes,
  cycleMaxMs,
  cpuMs: (user + system) / 1000,
  attacksPerHour: ATTACKED_PER_HOUR,
};
console.log(JSON.stringify(result));
