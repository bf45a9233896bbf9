import { describe, expect, it } from 'vitest';
import { collectFirewallHistory, FirewallSeriesState } from '../../../src/collectors/firewall.js';
import type { Inventory } from '../../../src/collectors/inventory.js';
import { directoryServers, ownedIps } from '../../../src/collectors/ownership.js';
import { leaderOrSnapshot } from '../../../src/remediation/targets.js';
import { DirectorySnapshot } from '../../../src/store/postgres/directory.js';
import type { TargetDirectory } from '../../../src/remediation/types.js';
import { freshMetrics } from '../../helpers/metrics.js';

const directory = (servers: Record<string, string[]>, known = true): TargetDirectory => ({
  serversKnown: known,
  hasServer: (id) => id in servers,
  ownsIp: (id, ip) => servers[id]?.includes(ip) ?? false,
});

describe('DirectorySnapshot', () => {
  it('knows nothing until a list is read, then answers from it', () => {
    const snapshot = new DirectorySnapshot();
    const before = { known: snapshot.serversKnown, has: snapshot.hasServer('1') };
    snapshot.replace({ '1': ['198.18.0.1'] }, '4');
    expect({
      before,
      known: snapshot.serversKnown,
      version: snapshot.version,
      has: snapshot.hasServer('1'),
      hasOther: snapshot.hasServer('2'),
      owns: snapshot.ownsIp('1', '198.18.0.1'),
      ownsOther: snapshot.ownsIp('1', '198.18.0.2'),
    }).toEqual({
      before: { known: false, has: false },
      known: true,
      version: '4',
      has: true,
      hasOther: false,
      owns: true,
      ownsOther: false,
    });
  });
});

describe('DirectorySnapshot rows', () => {
  it("reads the record fields the leader publishes, and an older leader's rows of IPs only", () => {
    const snapshot = new DirectorySnapshot();
    const fields = { ip: '198.18.0.1', hostname: 'a.example', location: 'fra1', status: 'online' };
    snapshot.replace({ '1': { ips: ['198.18.0.1'], ...fields, cancellation: 'end' } }, '1');
    const current = { owns: snapshot.ownsIp('1', '198.18.0.1'), details: snapshot.details('1') };
    // A leader before issue 32 published the record fields without the cancellation: none.
    snapshot.replace({ '1': { ips: ['198.18.0.1'], ...fields } }, '2');
    const withoutCancellation = snapshot.details('1');
    snapshot.replace({ '1': ['198.18.0.1'] }, '3');
    expect({
      current,
      withoutCancellation,
      old: { owns: snapshot.ownsIp('1', '198.18.0.1'), details: snapshot.details('1') },
    }).toEqual({
      current: { owns: true, details: { ...fields, cancellation: 'end' } },
      withoutCancellation: { ...fields, cancellation: '' },
      old: { owns: true, details: undefined },
    });
  });
});

describe('leaderOrSnapshot', () => {
  const state = directory({ p: ['198.18.0.1'] });
  const snapshot = directory({ s: ['198.18.0.2'] });
  it.each([
    {
      name: 'a leader that has read a server list asks its account state',
      leading: true,
      stateKnown: true,
      answers: 'p',
    },
    {
      name: 'a leader before its first server list asks the snapshot',
      leading: true,
      stateKnown: false,
      answers: 's',
    },
    {
      name: 'a follower asks the snapshot, whatever its account state holds',
      leading: false,
      stateKnown: true,
      answers: 's',
    },
  ])('$name', ({ leading, stateKnown, answers }) => {
    const targets = leaderOrSnapshot({ ...state, serversKnown: stateKnown }, snapshot, () => leading);
    expect(targets.hasServer(answers)).toBe(true);
    expect(targets.ownsIp(answers, answers === 'p' ? '198.18.0.1' : '198.18.0.2')).toBe(true);
    expect(targets.hasServer(answers === 'p' ? 's' : 'p')).toBe(false);
  });
});

describe('directoryServers', () => {
  it("publishes each server's record IPs and the IPs seen in its firewall history: the IPs ownedIps gives the leader", () => {
    const { metrics } = freshMetrics();
    const state = {
      inventory: new Map([
        ['100001', { serverId: '100001', ips: ['198.18.0.1'] }],
        ['100002', { serverId: '100002', ips: [] }],
      ]) as unknown as Inventory,
      firewallState: new FirewallSeriesState(),
    };
    collectFirewallHistory(
      state.firewallState,
      metrics,
      { serviceType: 'dedicated', serviceId: '100001' },
      [{ id: 'e1', ip: '198.18.0.9' }] as never,
      { limits: { maxIpsPerService: 10, ipRetentionMs: 0 }, now: 0, knownIps: ['198.18.0.1'] },
    );
    const published = directoryServers(state.inventory, state.firewallState);
    expect(Object.fromEntries(Object.entries(published).map(([id, s]) => [id, s.ips]))).toEqual({
      '100001': ['198.18.0.1', '198.18.0.9'],
      '100002': [],
    });
    // One rule: what the leader checks is what it publishes, and a server not listed owns nothing.
    expect([...ownedIps(state.inventory, state.firewallState, '100001')]).toEqual(published['100001']!.ips);
    expect(ownedIps(state.inventory, state.firewallState, '100003').size).toBe(0);
  });
});
