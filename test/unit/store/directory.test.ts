import { describe, expect, it } from 'vitest';
import { collectFirewallHistory, FirewallSeriesState } from '../../../src/collectors/firewall.js';
import type { Inventory } from '../../../src/collectors/inventory.js';
import { directoryServers, ownedIps } from '../../../src/collectors/ownership.js';
import { leaderOrSnapshot } from '../../../src/remediation/targets.js';
import { DirectorySnapshot, samePublished, type PublishedServers } from '../../../src/store/postgres/directory.js';
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

describe('leaderOrSnapshot: the attack state', () => {
  const read = { known: true as const, readAt: 1_000, lastEventAt: new Map<string, number>() };
  const withAttacks = { ...directory({ p: ['198.18.0.1'] }), serversKnown: true, attackState: () => read };
  const snapshot = directory({ p: ['198.18.0.1'] });
  it('a follower does not know it, and says a leader will (undecided)', () => {
    const state = leaderOrSnapshot(withAttacks, snapshot, () => false).attackState!('p');
    expect(state).toMatchObject({ known: false, undecided: true });
    expect(state.known === false && state.reason).toContain('this replica does not lead the account');
  });
  it('a leader knows it once read in its current term, not from a read of an earlier term', () => {
    expect(
      leaderOrSnapshot(
        withAttacks,
        snapshot,
        () => true,
        () => 1_000,
      ).attackState!('p'),
    ).toBe(read);
    expect(
      leaderOrSnapshot(
        withAttacks,
        snapshot,
        () => true,
        () => 1_001,
      ).attackState!('p'),
    ).toEqual({
      known: false,
      reason: 'its firewall history has not been read since this replica took the account',
      undecided: true,
    });
  });
  it('a failed first poll denies in the term it was made in, and waits in a term that began after it', () => {
    const failed = {
      known: false as const,
      reason: 'the latest poll of its firewall history failed (at …; never read successfully by this process)',
      failedAt: 2_000,
    };
    const lead = (since: number) =>
      leaderOrSnapshot(
        { ...withAttacks, attackState: () => failed },
        snapshot,
        () => true,
        () => since,
      ).attackState!('p');
    expect(lead(2_000)).toBe(failed);
    expect(lead(2_001)).toEqual({
      known: false,
      reason: 'its firewall history has not been polled since this replica took the account',
      undecided: true,
    });
  });
  it('a leader whose term has not begun yet (lease just claimed) waits, not deciding on an earlier term’s read', () => {
    const state = leaderOrSnapshot(
      withAttacks,
      snapshot,
      () => true,
      () => undefined,
    ).attackState!('p');
    expect(state).toEqual({
      known: false,
      reason: 'this replica has just taken the account: its firewall history has not been read in this term yet',
      undecided: true,
    });
  });
  it('a final unknown (the collector off) stays final', () => {
    const off = { known: false as const, reason: 'the firewall collector is off (collectors.firewall: false)' };
    expect(
      leaderOrSnapshot(
        { ...withAttacks, attackState: () => off },
        snapshot,
        () => true,
        () => 0,
      ).attackState!('p'),
    ).toBe(off);
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
      { account: 'default', metrics },
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

describe('directoryServers and a hostile server id', () => {
  it('publishes a server whose id is __proto__ as any other, and a follower reads it back', () => {
    const inventory = new Map([
      [
        '__proto__',
        {
          serverId: '__proto__',
          ip: '198.18.0.7',
          ips: ['198.18.0.7'],
          hostname: 'h',
          location: 'l',
          status: 'online',
          cancellation: '',
        },
      ],
    ]) as unknown as Inventory;
    const published = directoryServers(inventory, new FirewallSeriesState());
    expect(Object.getPrototypeOf(published)).toBe(Object.prototype);
    expect(Object.keys(published)).toEqual(['__proto__']);
    // The fields samePublished compares: a field published later must be compared there too.
    expect(Object.keys(Object.values(published)[0]!).sort()).toEqual([
      'cancellation',
      'hostname',
      'ip',
      'ips',
      'location',
      'status',
    ]);
    const snapshot = new DirectorySnapshot();
    snapshot.replace(JSON.parse(JSON.stringify(published)) as PublishedServers, '1');
    expect([snapshot.hasServer('__proto__'), snapshot.ownsIp('__proto__', '198.18.0.7')]).toEqual([true, true]);
  });
});

describe('samePublished', () => {
  const server = (ip: string, more: Partial<PublishedServers[string]> = {}) => ({
    ips: [ip, '198.18.1.1'],
    ip,
    hostname: `${ip}.example`,
    location: 'fra1',
    status: 'online',
    cancellation: '' as const,
    ...more,
  });
  const list: PublishedServers = { '1': server('198.18.0.1'), '2': server('198.18.0.2') };
  /** one copy made of text, as structuredClone would: nothing shared with `list` */
  const copy = () => JSON.parse(JSON.stringify(list)) as PublishedServers;

  it('holds for an equal list built anew, whatever the order of its ids; a missing cancellation is none', () => {
    const reordered: PublishedServers = { '2': server('198.18.0.2'), '1': server('198.18.0.1') };
    const { cancellation: _, ...older } = server('198.18.0.2');
    expect([
      samePublished(list, copy()),
      samePublished(list, reordered),
      samePublished(list, { ...list, '2': older }),
    ]).toEqual([true, true, true]);
  });

  it.each([
    ['a field changed', { ...list, '2': server('198.18.0.2', { status: 'cancelled' }) }],
    ['the hostname', { ...list, '2': server('198.18.0.2', { hostname: 'other' }) }],
    ['the main IP', { ...list, '2': server('198.18.0.2', { ip: '198.18.0.9' }) }],
    ['the location', { ...list, '2': server('198.18.0.2', { location: 'ams1' }) }],
    ['a cancellation scheduled', { ...list, '2': server('198.18.0.2', { cancellation: 'end' }) }],
    ['an IP more', { ...list, '2': server('198.18.0.2', { ips: ['198.18.0.2', '198.18.1.1', '198.18.1.2'] }) }],
    ['an IP replaced', { ...list, '2': server('198.18.0.2', { ips: ['198.18.0.2', '198.18.1.2'] }) }],
    ['the IPs reordered', { ...list, '2': server('198.18.0.2', { ips: ['198.18.1.1', '198.18.0.2'] }) }],
    ['a server more', { ...list, '3': server('198.18.0.3') }],
    ['a server fewer', { '1': server('198.18.0.1') }],
    ['a server replaced by another', { '1': server('198.18.0.1'), '3': server('198.18.0.2') }],
    [
      'an id inherited, not own',
      Object.assign(Object.create({ '2': server('198.18.0.2') }), { '1': server('198.18.0.1') }),
    ],
  ])('fails for %s, both ways', (_, other: PublishedServers) => {
    expect([samePublished(list, other), samePublished(other, list)]).toEqual([false, false]);
  });
});
