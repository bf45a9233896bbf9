/** /readyz means working: ready once the first servers and firewall polls succeeded at least partly. */
import { afterEach, describe, expect, it } from 'vitest';
import { buildConfig } from '../../src/config/load.js';
import { startDaemon, type Daemon } from '../../src/daemon.js';
import { startSimulator, type Simulator } from '../../src/simulator/server.js';
import { captureLogger } from '../helpers/logger.js';
import { tempDir } from '../helpers/tmp.js';

const KEY = 'readiness-key-8d2f4a61';
let sim: Simulator | undefined;
let daemon: Daemon | undefined;
afterEach(async () => {
  await daemon?.stop();
  await sim?.close();
  daemon = sim = undefined;
});

describe('readiness', () => {
  it.each([
    {
      // The firewall poll has nothing to poll without a server list and no services: it does not fail.
      name: 'a wrong API key → 503 naming the servers poll and the 401',
      key: 'wrong-key-0000000000',
      status: 503,
      reasons: [/^the servers poll has not succeeded yet: .*401/],
    },
    { name: 'the right key → 200', key: KEY, status: 200, reasons: [] },
  ])('$name', async ({ key, status, reasons }) => {
    sim = await startSimulator({ apiKey: KEY, servers: 3, colocations: 0, transits: 0, seed: 3 });
    const config = buildConfig(
      { upstream: { base_url: sim.url, retries: 0 }, web: { listen_address: '127.0.0.1:0' }, state_dir: tempDir() },
      { BAREMETAL_API_KEY: key },
    );
    daemon = await startDaemon(config, { logger: captureLogger().logger, schedule: false, listen: false });
    await daemon.ready;
    const res = await daemon.app.inject('/readyz');
    expect(res.statusCode).toBe(status);
    const body = res.json() as { reasons?: string[] };
    expect(body.reasons ?? []).toHaveLength(reasons.length);
    for (const [i, pattern] of reasons.entries()) expect(body.reasons![i]).toMatch(pattern);
    expect(res.body).not.toContain(key);
  });
});
