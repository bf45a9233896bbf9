import { describe, expect, it } from 'vitest';
import {
  collectFirewallFailure,
  collectFirewallHistory,
  removeFirewallService,
} from '../../../src/collectors/firewall.js';
import type { FirewallEvent } from '../../../src/upstream/decode.js';
import { seriesOf, seriesValue, stateMetrics } from '../../helpers/metrics.js';

const ev = (id: string, ip: string): FirewallEvent => ({ id, ip, raw: '', fields: {} });
const server = { serviceType: 'dedicated' as const, serviceId: '1' };
const colo = { serviceType: 'colocation' as const, serviceId: 'c1' };
const l = (ref: { serviceType: string; serviceId: string }, ip: string) => ({
  service_type: ref.serviceType,
  service_id: ref.serviceId,
  ip,
});
const LIMITS = { maxIpsPerService: 1024, ipRetentionMs: 24 * 3600_000 };
/** The collector's context at `now` with the default limits and these known IPs. */
const ctx = (knownIps: string[] = [], now = 0) => ({ limits: LIMITS, now, knownIps });

describe('firewall collector', () => {
  // The second history has no events, like the first: series stay unless the known IPs changed.
  it.each([
    { name: 'same known IPs', before: ['192.0.2.1', '192.0.2.2'], after: ['192.0.2.1', '192.0.2.2'] },
    { name: 'one known IP more', before: ['192.0.2.1'], after: ['192.0.2.1', '192.0.2.2'] },
    { name: 'one known IP fewer', before: ['192.0.2.1', '192.0.2.2'], after: ['192.0.2.2'] },
    { name: 'the same IPs reordered', before: ['192.0.2.1', '192.0.2.2'], after: ['192.0.2.2', '192.0.2.1'] },
    { name: 'an invalid known IP ignored', before: ['192.0.2.1'], after: ['not-an-ip', '192.0.2.1'] },
  ])('a quiet history after a quiet one exposes exactly the known IPs at 0: $name', async ({ before, after }) => {
    const { registry, metrics, state } = stateMetrics();
    collectFirewallHistory(state, { account: 'default', metrics }, server, [], ctx(before, 1000));
    expect(collectFirewallHistory(state, { account: 'default', metrics }, server, [], ctx(after, 2000))).toBe(0);
    const valid = after.filter((ip) => ip !== 'not-an-ip');
    const exposed = await seriesOf(registry, 'baremetal_firewall_attack_events_last_hour');
    expect(exposed.map((labels) => labels.ip).sort()).toEqual([...valid].sort());
    expect([...state.services.get('dedicated/1')!.counts.keys()].sort()).toEqual([...valid].sort());
    expect(
      await seriesValue(registry, 'baremetal_firewall_history_last_success_timestamp_seconds', {
        service_type: 'dedicated',
        service_id: '1',
      }),
    ).toBe(2);
  });

  it('counts events per IP in the latest history and exposes known IPs with 0', async () => {
    const { registry, metrics, state } = stateMetrics();
    collectFirewallHistory(
      state,
      { account: 'default', metrics },
      server,
      [ev('a', '192.0.2.1'), ev('b', '192.0.2.1')],
      ctx(['192.0.2.1', '192.0.2.2']),
    );
    expect(await seriesValue(registry, 'baremetal_firewall_attack_events_last_hour', l(server, '192.0.2.1'))).toBe(2);
    expect(await seriesValue(registry, 'baremetal_firewall_attack_events_last_hour', l(server, '192.0.2.2'))).toBe(0);
    expect(
      await seriesValue(registry, 'baremetal_firewall_history_up', { service_type: 'dedicated', service_id: '1' }),
    ).toBe(1);
  });

  it('counts each event id once in _total across polls', async () => {
    const { registry, metrics, state } = stateMetrics();
    expect(
      collectFirewallHistory(
        state,
        { account: 'default', metrics },
        server,
        [ev('a', '192.0.2.1'), ev('a', '192.0.2.1'), ev('b', '192.0.2.1')],
        ctx(),
      ),
    ).toBe(2);
    expect(
      collectFirewallHistory(
        state,
        { account: 'default', metrics },
        server,
        [ev('b', '192.0.2.1'), ev('c', '192.0.2.1')],
        ctx(),
      ),
    ).toBe(1);
    expect(await seriesValue(registry, 'baremetal_firewall_attack_events_total', l(server, '192.0.2.1'))).toBe(3);
    expect([...state.services.get('dedicated/1')!.seenIds]).toEqual(['b', 'c']);
  });

  it('removes IPs of a dedicated server that are neither known nor attacked any more', async () => {
    const { registry, metrics, state } = stateMetrics();
    collectFirewallHistory(state, { account: 'default', metrics }, server, [ev('a', '192.0.2.9')], ctx(['192.0.2.1']));
    collectFirewallHistory(state, { account: 'default', metrics }, server, [], ctx(['192.0.2.1']));
    expect((await seriesOf(registry, 'baremetal_firewall_attack_events_last_hour')).map((s) => s.ip)).toEqual([
      '192.0.2.1',
    ]);
    expect((await seriesOf(registry, 'baremetal_firewall_attack_events_total')).map((s) => s.ip)).toEqual([
      '192.0.2.1',
    ]);
  });

  it('keeps colocation IPs seen before at 0 once their attack has left the window', async () => {
    const { registry, metrics, state } = stateMetrics();
    collectFirewallHistory(state, { account: 'default', metrics }, colo, [ev('a', '198.51.100.1')], ctx());
    collectFirewallHistory(state, { account: 'default', metrics }, colo, [], ctx());
    expect(await seriesValue(registry, 'baremetal_firewall_attack_events_last_hour', l(colo, '198.51.100.1'))).toBe(0);
    expect(await seriesValue(registry, 'baremetal_firewall_attack_events_total', l(colo, '198.51.100.1'))).toBe(1);
  });

  it('marks a failed poll with history_up 0 and keeps the previous values', async () => {
    const { registry, metrics, state } = stateMetrics();
    collectFirewallHistory(state, { account: 'default', metrics }, server, [ev('a', '192.0.2.1')], ctx());
    collectFirewallFailure(state, server, 0);
    expect(
      await seriesValue(registry, 'baremetal_firewall_history_up', { service_type: 'dedicated', service_id: '1' }),
    ).toBe(0);
    expect(await seriesValue(registry, 'baremetal_firewall_attack_events_last_hour', l(server, '192.0.2.1'))).toBe(1);
    collectFirewallHistory(
      state,
      { account: 'default', metrics },
      server,
      [ev('a', '192.0.2.1'), ev('b', '192.0.2.1')],
      ctx(),
    );
    expect(
      await seriesValue(registry, 'baremetal_firewall_history_up', { service_type: 'dedicated', service_id: '1' }),
    ).toBe(1);
    expect(await seriesValue(registry, 'baremetal_firewall_attack_events_last_hour', l(server, '192.0.2.1'))).toBe(2);
  });

  const TOTAL = 'baremetal_firewall_attack_events_total';
  const three = [ev('a', '198.51.100.7'), ev('b', '198.51.100.7'), ev('c', '198.51.100.7')];
  // A new series is exposed at 0 for one poll, then its first events are added: increase() sees them.
  it.each([
    { name: 'new colocation IP, next poll succeeds', ref: colo, known: [], next: 'success' },
    {
      name: 'new transit IP, next poll fails',
      ref: { serviceType: 'transit' as const, serviceId: 't1' },
      known: [],
      next: 'failure',
    },
    { name: 'dedicated IP seen only in history', ref: server, known: ['192.0.2.1'], next: 'success' },
    { name: 'known dedicated IP attacked on the first poll', ref: server, known: ['198.51.100.7'], next: 'success' },
  ])(
    'a new attack series starts at 0 and gets its first events at the next poll: $name',
    async ({ ref, known, next }) => {
      const { registry, metrics, state } = stateMetrics();
      expect(collectFirewallHistory(state, { account: 'default', metrics }, ref, three, ctx(known, 1000))).toBe(3);
      expect(await seriesValue(registry, TOTAL, l(ref, '198.51.100.7'))).toBe(0);
      expect(await seriesValue(registry, 'baremetal_firewall_attack_events_last_hour', l(ref, '198.51.100.7'))).toBe(3);
      if (next === 'failure') collectFirewallFailure(state, ref, 0);
      else expect(collectFirewallHistory(state, { account: 'default', metrics }, ref, three, ctx(known, 2000))).toBe(0);
      expect(await seriesValue(registry, TOTAL, l(ref, '198.51.100.7'))).toBe(3);
      // Held back once only: a third poll adds nothing more.
      collectFirewallHistory(state, { account: 'default', metrics }, ref, three, ctx(known, 3000));
      expect(await seriesValue(registry, TOTAL, l(ref, '198.51.100.7'))).toBe(3);
    },
  );

  it('adds the events of an IP already exposed at once', async () => {
    const { registry, metrics, state } = stateMetrics();
    collectFirewallHistory(state, { account: 'default', metrics }, server, [], ctx(['198.51.100.7'], 1000));
    collectFirewallHistory(state, { account: 'default', metrics }, server, three, ctx(['198.51.100.7'], 2000));
    expect(await seriesValue(registry, TOTAL, l(server, '198.51.100.7'))).toBe(3);
  });

  it('removes every series of a service that is gone', async () => {
    const { registry, metrics, state } = stateMetrics();
    collectFirewallHistory(state, { account: 'default', metrics }, server, [ev('a', '192.0.2.1')], ctx(['192.0.2.2']));
    collectFirewallHistory(state, { account: 'default', metrics }, colo, [ev('b', '198.51.100.1')], ctx());
    removeFirewallService(state, server);
    expect((await seriesOf(registry, 'baremetal_firewall_attack_events_last_hour')).map((s) => s.service_id)).toEqual([
      'c1',
    ]);
    expect((await seriesOf(registry, 'baremetal_firewall_attack_events_total')).map((s) => s.service_id)).toEqual([
      'c1',
    ]);
    expect((await seriesOf(registry, 'baremetal_firewall_history_up')).map((s) => s.service_id)).toEqual(['c1']);
    expect(state.services.has('dedicated/1')).toBe(false);
  });
});
