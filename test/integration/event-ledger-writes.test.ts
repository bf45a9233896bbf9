import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { accountOf, startHarness } from '../helpers/daemon.js';

const KEY = 'integration-key-3b7e91a4';

// The ledger (state_dir/events/<account>.json) is written when the event ids changed, not after every run:
// at 10,000 servers its JSON is built on the event loop. The file is removed between runs to see a write.
describe('the attack event ledger', () => {
  it('is written when the ids change, and not again for a run that saw the same histories', async () => {
    const { daemon, sim, stateDir } = await startHarness({
      key: KEY,
      simulator: { servers: 3, colocations: 1, transits: 0, attackRate: 0, seed: 2 },
      config: { services: { colocation_ids: ['colo-1'] } },
      daemon: { initialPolls: false },
    });
    const file = join(stateDir, 'events', 'default.json');
    const written = async (change?: () => void) => {
      rmSync(file, { force: true });
      change?.();
      expect(await accountOf(daemon, 'default').polls.run('firewall')).toBe('success');
      return existsSync(file) ? Object.keys(JSON.parse(readFileSync(file, 'utf8')).services) : undefined;
    };
    expect(await accountOf(daemon, 'default').polls.run('servers')).toBe('success');
    const runs = [
      await written(() => sim.state.injectEvents('colocation', 'colo-1', [{ id: 'a', ip: '198.51.100.1' }])),
      await written(),
      await written(() => sim.state.injectEvents('dedicated', '100002', [{ id: 'b', ip: '198.51.100.2' }])),
      await written(),
      await written(() => sim.state.clearInjectedEvents('colocation', 'colo-1')),
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
