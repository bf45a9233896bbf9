import { describe, expect, it } from 'vitest';
import { collectFirewallHistory, type HistoryContext } from '../../../src/collectors/firewall.js';
import type { FirewallEvent } from '../../../src/upstream/decode.js';
import { seriesOf, seriesValue, stateMetrics } from '../../helpers/metrics.js';

const HOUR = 3600_000;
const ev = (id: string, ip: string): FirewallEvent => ({ id, ip, raw: '', fields: {} });
/** `count` events of one IP, ids `<prefix>-0`… */
const burst = (prefix: string, ip: string, count = 1) =>
  Array.from({ length: count }, (_, i) => ev(`${prefix}-${i}`, ip));
const server = { serviceType: 'dedicated' as const, serviceId: '1' };
const colo = { serviceType: 'colocation' as const, serviceId: 'c1' };
const transit = { serviceType: 'transit' as const, serviceId: 't1' };
type Ref = typeof server | typeof colo | typeof transit;

/** One poll: the events of the history, the clock, and (dedicated) the record's IPs. */
interface Poll {
  events: FirewallEvent[];
  at?: number;
  knownIps?: string[];
}

async function collect(ref: Ref, polls: Poll[], limits = { maxIpsPerService: 1024, ipRetentionMs: 24 * HOUR }) {
  const { registry, metrics, state } = stateMetrics();
  for (const poll of polls) {
    const context: HistoryContext = { limits, now: poll.at ?? 0, knownIps: poll.knownIps ?? [] };
    collectFirewallHistory(state, { account: 'default', metrics }, ref, poll.events, context);
  }
  const events = Object.fromEntries(
    (await seriesOf(registry, 'baremetal_firewall_attack_events_last_hour')).map((s) => [s.ip, 0]),
  );
  for (const ip of Object.keys(events))
    events[ip] = (await seriesValue(registry, 'baremetal_firewall_attack_events_last_hour', {
      service_id: ref.serviceId,
      ip,
    }))!;
  const totals = (await seriesOf(registry, 'baremetal_firewall_attack_events_total')).map((s) => String(s.ip)).sort();
  const dropped = {
    invalid_ip: await seriesValue(registry, 'baremetal_firewall_events_dropped_total', { reason: 'invalid_ip' }),
    ip_limit: await seriesValue(registry, 'baremetal_firewall_events_dropped_total', { reason: 'ip_limit' }),
  };
  return {
    events,
    totals,
    dropped,
    up: await seriesValue(registry, 'baremetal_firewall_history_up', { service_id: ref.serviceId }),
  };
}

describe('firewall collector bounds', () => {
  it.each([
    {
      name: 'junk strings as ip create no series; each distinct event is dropped once (invalid_ip)',
      ref: colo,
      polls: [
        {
          events: [
            ...burst('j', 'not-an-ip', 3),
            ev('e', ''),
            ev('x', '999.1.1.1'),
            ev('s', '<script>'),
            ...burst('ok', '198.51.100.7', 2),
          ],
        },
        {
          events: [
            ...burst('j', 'not-an-ip', 3),
            ev('e', ''),
            ev('x', '999.1.1.1'),
            ev('s', '<script>'),
            ...burst('ok', '198.51.100.7', 2),
          ],
        },
      ],
      events: { '198.51.100.7': 2 },
      dropped: { invalid_ip: 6, ip_limit: 0 },
    },
    {
      name: 'IPv6 and IPv4 both parse',
      ref: transit,
      polls: [{ events: [ev('a', '2001:db8::1'), ev('b', '203.0.113.4')] }],
      events: { '2001:db8::1': 1, '203.0.113.4': 1 },
      dropped: { invalid_ip: 0, ip_limit: 0 },
    },
    {
      name: 'the cap keeps the IPs with the most events (first seen on a tie); the others are dropped (ip_limit)',
      ref: colo,
      polls: [
        {
          events: [
            ev('a', '198.51.100.1'),
            ...burst('b', '198.51.100.2', 3),
            ...burst('c', '198.51.100.3', 2),
            ev('d', '198.51.100.4'),
          ],
        },
      ],
      limits: { maxIpsPerService: 2, ipRetentionMs: 24 * HOUR },
      events: { '198.51.100.2': 3, '198.51.100.3': 2 },
      dropped: { invalid_ip: 0, ip_limit: 2 },
    },
    {
      name: "a dedicated server's known IPs come first, before attacked ones",
      ref: server,
      polls: [{ events: [...burst('a', '192.0.2.50', 5), ev('b', '192.0.2.2')], knownIps: ['192.0.2.1', '192.0.2.2'] }],
      limits: { maxIpsPerService: 2, ipRetentionMs: 24 * HOUR },
      events: { '192.0.2.1': 0, '192.0.2.2': 1 },
      dropped: { invalid_ip: 0, ip_limit: 5 },
    },
    {
      name: 'a colocation IP without events is kept at 0 within the retention',
      ref: colo,
      polls: [
        { events: [ev('a', '198.51.100.1')], at: 0 },
        { events: [], at: 23 * HOUR },
      ],
      events: { '198.51.100.1': 0 },
      dropped: { invalid_ip: 0, ip_limit: 0 },
    },
    {
      name: 'a colocation IP without events for the retention is removed',
      ref: colo,
      polls: [
        { events: [ev('a', '198.51.100.1'), ev('b', '198.51.100.2')], at: 0 },
        { events: [ev('c', '198.51.100.2')], at: 20 * HOUR },
        { events: [], at: 24 * HOUR },
      ],
      events: { '198.51.100.2': 0 },
      dropped: { invalid_ip: 0, ip_limit: 0 },
    },
    {
      name: 'a transit IP with events again is retained from its latest events',
      ref: transit,
      polls: [
        { events: [ev('a', '203.0.113.1')], at: 0 },
        { events: [ev('b', '203.0.113.1')], at: 10 * HOUR },
        { events: [], at: 33 * HOUR },
      ],
      events: { '203.0.113.1': 0 },
      dropped: { invalid_ip: 0, ip_limit: 0 },
    },
    {
      name: 'retained IPs fill the cap after the attacked ones, most recent first',
      ref: colo,
      polls: [
        { events: [ev('a', '198.51.100.1')], at: 0 },
        { events: [ev('b', '198.51.100.2')], at: HOUR },
        { events: [ev('c', '198.51.100.3')], at: 2 * HOUR },
      ],
      limits: { maxIpsPerService: 2, ipRetentionMs: 24 * HOUR },
      events: { '198.51.100.3': 1, '198.51.100.2': 0 },
      dropped: { invalid_ip: 0, ip_limit: 0 },
    },
  ])('$name', async ({ ref, polls, limits, events, dropped }) => {
    const result = await collect(ref, polls, limits);
    expect(result.events).toEqual(events);
    expect(result.totals).toEqual(Object.keys(events).sort());
    expect(result.dropped).toEqual(dropped);
    expect(result.up).toBe(1);
  });

  it('20,000 junk strings and 2,000 IPs in one colocation history make at most max_ips_per_service series', async () => {
    const junk = Array.from({ length: 20_000 }, (_, i) => ev(`junk-${i}`, `junk-${i}.example`));
    const many = Array.from({ length: 2_000 }, (_, i) => ev(`ip-${i}`, `10.${i >> 8}.${i & 255}.1`));
    const limits = { maxIpsPerService: 100, ipRetentionMs: HOUR };
    const result = await collect(
      colo,
      [
        { events: [...junk, ...many], at: 0 },
        { events: [...junk, ...many], at: 1000 },
      ],
      limits,
    );
    expect(Object.keys(result.events)).toHaveLength(100);
    expect(result.dropped).toEqual({ invalid_ip: 20_000, ip_limit: 1_900 });
    const recovered = await collect(
      colo,
      [
        { events: [...junk, ...many], at: 0 },
        { events: [], at: HOUR },
      ],
      limits,
    );
    expect(recovered.events).toEqual({});
  });
});
