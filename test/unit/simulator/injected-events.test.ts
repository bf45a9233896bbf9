import { describe, expect, it } from 'vitest';
import { SimulatorState } from '../../../src/simulator/state.js';

describe('simulator: injected events and server removal', () => {
  const now = () => Date.UTC(2026, 10, 21, 12);

  it.each([
    { name: 'all IPs of the service', ip: undefined, expected: ['junk-0', 'junk-1', '10.0.0.1'] },
    { name: 'one IP asked for', ip: '10.0.0.1', expected: ['10.0.0.1'] },
  ])('adds injected events to the history: $name', ({ ip, expected }) => {
    const state = new SimulatorState({ attackRate: 0, now });
    state.injectEvents('colocation', 'colo-1', [
      { id: 'j0', ip: 'junk-0' },
      { id: 'j1', ip: 'junk-1' },
      { id: 'v', ip: '10.0.0.1', mbps: 5 },
    ]);
    const history = state.history(state.service('colocation', 'colo-1')!, 3600, ip);
    expect(history.map((e) => e.ip)).toEqual(expected);
    expect(history[0]).toMatchObject({ time: now() / 1000, attack_type: 'udp_flood' });
    expect(state.history(state.service('colocation', 'colo-2')!, 3600)).toEqual([]);
  });

  it('clears injected events of one service or all', () => {
    const state = new SimulatorState({ attackRate: 0, now });
    state.injectEvents('colocation', 'colo-1', [{ id: 'a', ip: 'x' }]);
    state.injectEvents('transit', 'transit-1', [{ id: 'b', ip: 'y' }]);
    state.clearInjectedEvents('colocation', 'colo-1');
    expect(state.history(state.service('colocation', 'colo-1')!, 3600)).toEqual([]);
    expect(state.history(state.service('transit', 'transit-1')!, 3600)).toHaveLength(1);
    state.clearInjectedEvents();
    expect(state.history(state.service('transit', 'transit-1')!, 3600)).toEqual([]);
  });

  it('removes a server and its firewall service', () => {
    const state = new SimulatorState({ servers: 3, now });
    state.removeServer('100002');
    expect([...state.servers.keys()]).toEqual(['100001', '100003']);
    expect(state.service('dedicated', '100002')).toBeUndefined();
  });
});
