import { describe, expect, it } from 'vitest';
import { DEFAULT_SCHEDULES } from '../../../src/config/schema.js';
import { DEFAULT_SAFETY } from '../../../src/config/types.js';
import { NoLeaderError } from '../../../src/errors.js';
import { checkAttack } from '../../../src/remediation/guards.js';
import { leaderOrSnapshot } from '../../../src/remediation/targets.js';
import type { ActionRequest } from '../../../src/remediation/types.js';
import { AccountState, type AccountStateConfig } from '../../../src/collectors/account-state.js';
import { collectFirewallFailure, collectFirewallHistory } from '../../../src/collectors/firewall.js';
import { collectServerList } from '../../../src/collectors/inventory.js';
import type { FirewallEvent } from '../../../src/upstream/decode.js';
import { decodeServerList } from '../../../src/upstream/decode-servers.js';
import { freshMetrics } from '../../helpers/metrics.js';

const LIMITS = { maxIpsPerService: 1024, ipRetentionMs: 24 * 3600_000 };
const ref = (serviceId: string) => ({ serviceType: 'dedicated' as const, serviceId });
const event = (id: string, ip: string): FirewallEvent => ({ id, ip, raw: `attack on ${ip}`, fields: {} });

/** An account state at clock `now` holding servers 1 (192.0.2.1) and 2, with one colocation service. */
async function stateOf(config: Partial<AccountStateConfig> = {}, now = { ms: 1000 }) {
  const { metrics } = freshMetrics();
  const full: AccountStateConfig = {
    schedules: { ...DEFAULT_SCHEDULES, firewall_under_attack: DEFAULT_SCHEDULES.firewall },
    services: { colocationIds: ['c1'], transitIds: [] },
    ...config,
  };
  const state = new AccountState(full, () => now.ms);
  const list = decodeServerList([{ server_id: '1', IP: '192.0.2.1' }, { server_id: '2' }], {
    operation: 'list_servers',
    path: '/api/v1/dedicated',
  });
  state.inventory = (await collectServerList(list, state.inventory, { account: 'default', metrics })).inventory;
  state.serversKnown = true;
  const read = (serviceId: string, events: FirewallEvent[]) => {
    collectFirewallHistory(state.firewallState, { account: 'default', metrics }, ref(serviceId), events, {
      limits: LIMITS,
      now: now.ms,
      knownIps: state.inventory.get(serviceId)?.ips ?? [],
    });
    state.attacks.record(ref(serviceId), events, now.ms);
  };
  return { state, metrics, read, now };
}

describe('AccountState: what the polls learned, as the readers ask it', () => {
  it('restores event ids into a read service without writing into the empty set quiet services share', async () => {
    const { state, read } = await stateOf();
    read('1', []);
    read('2', []);
    state.restoreEventIds(new Map([['dedicated/1', new Set(['e1', 'e2'])]]));
    const ids = (id: string) => [...(state.firewallState.services.get(`dedicated/${id}`)?.seenIds ?? [])];
    expect(ids('1')).toEqual(['e1', 'e2']);
    expect(ids('2')).toEqual([]);
    // e1 was counted before the restart: only e3 is new.
    read('1', [event('e1', '192.0.2.1'), event('e3', '192.0.2.1')]);
    expect(ids('1')).toEqual(['e1', 'e3']);
    read('2', []);
    expect(ids('2')).toEqual([]);
  });

  it('owns the record IPs and those seen in the server history; counts the servers in scope', async () => {
    const { state, read } = await stateOf();
    read('2', [event('e1', '198.51.100.7')]);
    expect(state.ownsIp('1', '192.0.2.1')).toBe(true);
    expect(state.ownsIp('2', '198.51.100.7')).toBe(true);
    expect(state.ownsIp('1', '198.51.100.7')).toBe(false);
    expect(state.serversInScope()).toBe(2);
    expect(state.services().map((s) => s.serviceId)).toEqual(['1', '2', 'c1']);
  });

  it('gives a server attack state: unknown before a read and after a failed poll, else the newest event per IP', async () => {
    const { state, read, now } = await stateOf();
    expect(state.attackState('1')).toEqual({
      known: false,
      reason: 'its firewall history has not been read yet',
      undecided: true,
    });
    read('1', [event('e1', '192.0.2.1')]);
    expect(state.attackState('1')).toEqual({
      known: true,
      readAt: 1000,
      lastEventAt: new Map([['192.0.2.1', 1000]]),
    });
    now.ms = 5000;
    collectFirewallFailure(state.firewallState, ref('1'), now.ms);
    const failed = state.attackState('1');
    expect(failed.known).toBe(false);
    expect(!failed.known && failed.reason).toMatch(/latest poll of its firewall history failed/);
  });

  it('dates a failed latest poll: one from before this replica took the account waits (undecided), a later one denies', async () => {
    const { state, read, now } = await stateOf();
    read('1', []);
    now.ms = 5000;
    // A poll cut off by a handover: the failure is the previous term's.
    collectFirewallFailure(state.firewallState, ref('1'), now.ms);
    expect(state.attackState('1')).toEqual({
      known: false,
      reason: 'the latest poll of its firewall history failed (last read at 1970-01-01T00:00:01.000Z)',
      failedAt: 5000,
    });
    const lead = (since: number) =>
      leaderOrSnapshot(
        state,
        state,
        () => true,
        () => since,
      );
    const req = { action: 'powercycle', serverId: '1', force: false } as ActionRequest;
    expect(lead(6000).attackState!('1')).toMatchObject({ known: false, undecided: true });
    expect(() => checkAttack(lead(6000), req, DEFAULT_SAFETY, 6000, 60_000)).toThrow(NoLeaderError);
    expect(checkAttack(lead(5000), req, DEFAULT_SAFETY, 6000, 60_000)).toMatchObject({
      decision: 'denied_under_attack',
    });
    // A successful read clears it.
    now.ms = 7000;
    read('1', []);
    expect(state.firewallState.services.get('dedicated/1')?.failedAt).toBeUndefined();
  });

  it('denies a server whose first poll failed (not undecided: a retry would wait forever), until a read', async () => {
    const { state, read, now } = await stateOf();
    now.ms = 3000;
    collectFirewallFailure(state.firewallState, ref('2'), now.ms);
    expect(state.attackState('2')).toEqual({
      known: false,
      reason:
        'the latest poll of its firewall history failed (at 1970-01-01T00:00:03.000Z; never read successfully by this process)',
      failedAt: 3000,
    });
    // The power guard denies on it (a decision, journaled), where a never-polled server waits (503).
    const req = { action: 'powercycle', serverId: '2', force: false } as ActionRequest;
    const denial = checkAttack(state, req, DEFAULT_SAFETY, now.ms, 60_000);
    expect(denial).toMatchObject({ decision: 'denied_under_attack' });
    expect(denial?.message).toContain('the latest poll of its firewall history failed');
    expect(() => checkAttack(state, { ...req, serverId: '1' }, DEFAULT_SAFETY, now.ms, 60_000)).toThrow(NoLeaderError);
    now.ms = 4000;
    read('2', []);
    expect(state.attackState('2')).toEqual({ known: true, readAt: 4000, lastEventAt: new Map() });
    expect(checkAttack(state, req, DEFAULT_SAFETY, now.ms, 60_000)).toBeUndefined();
  });

  it('says nothing of attacks or coverage with the firewall collector off', async () => {
    const { state, read } = await stateOf({ collectors: { firewall: false, graphs: true, catalog: true } });
    read('1', [event('e1', '192.0.2.1')]);
    expect(state.attackState('1')).toEqual({
      known: false,
      reason: 'the firewall collector is off (collectors.firewall: false)',
    });
    expect(state.oldestRead()).toBeUndefined();
  });

  it('splits the services under attack from the quiet ones only when their schedules differ', async () => {
    const split = await stateOf({
      schedules: { ...DEFAULT_SCHEDULES, firewall_under_attack: '*/5 * * * * *' },
    });
    split.read('1', [event('e1', '192.0.2.1')]);
    expect(split.state.servicesOf('firewall_under_attack').map((s) => s.serviceId)).toEqual(['1']);
    expect(split.state.servicesOf('firewall').map((s) => s.serviceId)).toEqual(['2', 'c1']);
    const together = await stateOf();
    together.read('1', [event('e1', '192.0.2.1')]);
    expect(together.state.servicesOf('firewall').map((s) => s.serviceId)).toEqual(['1', '2', 'c1']);
  });

  it('reports the service waiting longest: never read, since the first run that had it', async () => {
    const { state, read, now } = await stateOf();
    state.noteUnread(state.services());
    now.ms = 4000;
    read('1', []);
    read('2', []);
    state.noteUnread(state.services());
    expect(state.oldestRead()).toEqual({
      ref: { serviceType: 'colocation', serviceId: 'c1' },
      ageMs: 3000,
      read: false,
    });
  });
});

describe('servicesVersion', () => {
  it('changes with each inventory assigned and each list of services, and keeps no inventory alive', () => {
    const services = { colocationIds: ['c1'], transitIds: [] as string[] };
    const state = new AccountState({
      schedules: { ...DEFAULT_SCHEDULES, firewall_under_attack: DEFAULT_SCHEDULES.firewall },
      services,
    });
    const first = state.servicesVersion();
    expect(state.servicesVersion()).toEqual(first);
    state.inventory = new Map();
    const second = state.servicesVersion();
    expect(second).not.toEqual(first);
    Object.assign(services, { colocationIds: ['c2'] });
    expect(state.servicesVersion()).not.toEqual(second);
    // What the firewall poll keeps between runs (its pruning) and a rendering keeps: values, not the servers.
    expect(second.some((value) => value instanceof Map)).toBe(false);
  });
});
