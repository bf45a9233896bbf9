import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { buildConfig } from '../../src/config/load.js';
import { startDaemon, type Daemon } from '../../src/daemon.js';
import { startSimulator, type Simulator } from '../../src/simulator/server.js';
import { captureLogger } from '../helpers/logger.js';
import { tempDir } from '../helpers/tmp.js';

const KEY = 'integration-key-3b7e91a4';

let sim: Simulator | undefined;
let daemon: Daemon | undefined;
afterEach(async () => {
  await daemon?.stop();
  await sim?.close();
  daemon = sim = undefined;
});

// The ledger (state_dir/events/<account>.json) is written when the event ids changed, not after every run:
// at 10,000 servers its JSON is built on the event loop. The file is removed between runs to see a write.
describe('the attack event ledger', () => {
  it('is written when the ids change, and not again for a run that saw the same histories', async () => {
    const stateDir = tempDir();
    sim = await startSimulator({ apiKey: KEY, servers: 3, colocations: 1, transits: 0, attackRate: 0, seed: 2 });
    const config = buildConfig(
      {
        upstream: { base_url: sim.url },
        state_dir: stateDir,
        web: { listen_address: '127.0.0.1:0' },
        services: { colocation_ids: ['colo-1'] },
      },
      { BAREMETAL_API_KEY: KEY },
    );
    daemon = await startDaemon(config, {
      logger: captureLogger().logger,
      schedule: false,
      initialPolls: false,
      listen: false,
    });
    const file = join(stateDir, 'events', 'default.json');
    const written = async (change?: () => void) => {
      rmSync(file, { force: true });
      change?.();
      expect(await daemon!.poller.run('firewall')).toBe('success');
      return existsSync(file) ? Object.keys(JSON.parse(readFileSync(file, 'utf8')).services) : undefined;
    };
    expect(await daemon.poller.run('servers')).toBe('success');
    const runs = [
      await written(() => sim!.state.injectEvents('colocation', 'colo-1', [{ id: 'a', ip: '198.51.100.1' }])),
      await written(),
      await written(() => sim!.state.injectEvents('dedicated', '100002', [{ id: 'b', ip: '198.51.100.2' }])),
      await written(),
      await written(() => sim!.state.clearInjectedEvents('colocation', 'colo-1')),
    ];
    expect(runs).toEqual([
      ['colocation/colo-1'],
      undefined,
      ['dedicated/100002', 'colocation/colo-1'],
      undefined,
      ['dedicated/100002'],
    ]);
  });
});
