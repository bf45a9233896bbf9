/**
 * The golden exposition: the daemon's /metrics after one run of every poll against a seeded simulator with
 * a fixed clock, compared byte for byte with test/fixtures/exposition/daemon.txt (the way json_exporter's
 * test/response/*.txt are), and the raw exposition checked with `promtool check metrics`.
 *
 * What is not deterministic is taken out of the comparison, and only that:
 * - the `process_*` and `nodejs_*` families (the Node runtime's own figures);
 * - the `version` and `nodejs` labels of `baremetal_exporter_build_info`;
 * - the `_bucket` (finite `le`) and `_sum` values of `baremetal_api_request_duration_seconds`: wall-clock
 *   request durations (their `_count` and `+Inf` bucket stay).
 * Poll durations and every timestamp come from the injected clock, so they are exact. The polls run one
 * after the other with `upstream.concurrency: 1`, so series appear in one order.
 *
 * After an intended change: BAREMETAL_UPDATE_GOLDEN=1 npx vitest run test/integration/exposition-golden.test.ts
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildConfig } from '../../src/config/load.js';
import { startDaemon, type Daemon } from '../../src/daemon.js';
import { startSimulator, type Simulator } from '../../src/simulator/server.js';
import { requireBinary } from '../helpers/binaries.js';
import { captureLogger } from '../helpers/logger.js';
import { tempDir } from '../helpers/tmp.js';

const KEY = 'golden-key-3b9e61c2';
const NOW = Date.UTC(2026, 10, 21, 12, 0, 0);
const FIXTURE = new URL('../fixtures/exposition/daemon.txt', import.meta.url);
const promtool = requireBinary('/usr/bin/promtool', 'prometheus');

/** The exposition with the non-deterministic parts replaced (see the header). */
export function normalize(exposition: string): string {
  return exposition
    .split('\n\n')
    .filter((family) => !/^# HELP (process_|nodejs_)/.test(family))
    .join('\n\n')
    .split('\n')
    .map((line) =>
      line
        .replace(/^(baremetal_exporter_build_info\{version=")[^"]*(",nodejs=")[^"]*"/, '$1VERSION$2NODE_VERSION"')
        .replace(/^(baremetal_api_request_duration_seconds_(bucket|sum)\{(?![^}]*le="\+Inf")[^}]*\}) .*$/, '$1 <duration>'),
    )
    .join('\n');
}

let sim: Simulator;
let daemon: Daemon;
let raw: string;

beforeAll(async () => {
  sim = await startSimulator({ apiKey: KEY, servers: 4, colocations: 1, transits: 1, attackRate: 0.3, seed: 7, now: () => NOW });
  const config = buildConfig(
    {
      upstream: { base_url: sim.url, concurrency: 1, retries: 0 },
      web: { listen_address: '127.0.0.1:0' },
      state_dir: tempDir(),
      graphs: { types: ['port_bits'], scales: ['day'] },
      services: { colocation_ids: ['colo-1'], transit_ids: ['transit-1'] },
    },
    { BAREMETAL_API_KEY: KEY },
  );
  daemon = await startDaemon(config, { logger: captureLogger().logger, now: () => NOW, schedule: false, initialPolls: false, listen: false });
  for (const job of ['servers', 'firewall', 'graphs', 'catalog'] as const) expect(await daemon.poller.run(job)).toBe('success');
  await daemon.exposition.render();
  raw = (await daemon.app.inject('/metrics')).body;
});

afterAll(async () => {
  await daemon?.stop();
  await sim?.close();
});

describe('golden exposition', () => {
  it('is byte for byte test/fixtures/exposition/daemon.txt', () => {
    const actual = normalize(raw);
    if (process.env.BAREMETAL_UPDATE_GOLDEN === '1') writeFileSync(FIXTURE, actual);
    expect(actual).toBe(readFileSync(FIXTURE, 'utf8'));
  });

  it.skipIf(promtool.skip)('passes promtool check metrics', () => {
    const result = spawnSync(promtool.skip ? '' : promtool.path, ['check', 'metrics'], { input: raw, encoding: 'utf8', timeout: 30_000 });
    expect(result.stderr + result.stdout).toBe('');
    expect(result.status).toBe(0);
  });
});
