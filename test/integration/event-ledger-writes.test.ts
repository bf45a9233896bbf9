import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { StaleLeaseError } from '../../src/errors.js';
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

describe('a ledger write that fails', () => {
  it.each([
    {
      name: 'refused under a stale lease: logged as that, not as a state directory fault',
      error: () => new StaleLeaseError('default', '3'),
      logged: 'not saving the attack event ids: this replica no longer holds the account’s lease',
    },
    {
      name: 'failing otherwise: logged as a fault of the store',
      error: () => new Error('EACCES: permission denied'),
      logged: 'cannot save the attack event ids (state directory or database)',
    },
  ])('$name', async ({ error, logged }) => {
    const { daemon, sim, log } = await startHarness({
      key: KEY,
      simulator: { servers: 2, colocations: 0, transits: 0, attackRate: 0, seed: 3 },
      daemon: { initialPolls: false },
    });
    const account = accountOf(daemon, 'default');
    account.ledger.save = async () => {
      throw error();
    };
    expect(await account.polls.run('servers')).toBe('success');
    sim.state.injectEvents('dedicated', '100001', [{ id: 'x', ip: '198.51.100.9' }]);
    expect(await account.polls.run('firewall')).toBe('success');
    const lines = log.lines.filter((l) => l.includes('attack event ids'));
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(logged);
  });
});
