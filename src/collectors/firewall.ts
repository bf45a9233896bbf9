/**
 * The firewall-history collector: pure — the events of one service's hour-scale history in, attack
 * series out. It remembers, per service, the IPs it exposes and the event ids of the latest history so
 * that `_total` counts each event once and both sets stay bounded by what the API currently reports.
 */
import type { Metrics } from '../metrics/definitions.js';
import type { FirewallEvent } from '../upstream/decode.js';
import type { ServiceType } from '../upstream/params.js';

/** A service with a firewall history: a dedicated server, a colocation or a transit service. */
export interface ServiceRef {
  serviceType: ServiceType;
  serviceId: string;
}

interface ServiceSeries {
  /** events per IP as last exposed; the keys are the IPs exposed */
  counts: Map<string, number>;
  /** last value of history_up */
  up: boolean;
  /** event ids of the latest successful history, for deduplication */
  seenIds: Set<string>;
}

/** What the collector remembers between polls, keyed by `type/id`. */
export class FirewallSeriesState {
  readonly services = new Map<string, ServiceSeries>();
  static key(ref: ServiceRef): string {
    return `${ref.serviceType}/${ref.serviceId}`;
  }
}

const labels = (ref: ServiceRef, ip: string) => ({ service_type: ref.serviceType, service_id: ref.serviceId, ip });

/**
 * Applies a successful history. `knownIps` are the service's IPs from elsewhere (a dedicated server's
 * record): they are exposed with 0 events. IPs of dedicated servers that are neither known nor in the
 * history any more are removed; colocation and transit IPs, known only from events, are kept at 0.
 * Returns the number of events new to `_total`.
 */
export function collectFirewallHistory(
  state: FirewallSeriesState,
  metrics: Metrics,
  ref: ServiceRef,
  events: FirewallEvent[],
  knownIps: readonly string[] = [],
): number {
  const key = FirewallSeriesState.key(ref);
  const previous = state.services.get(key) ?? { counts: new Map<string, number>(), up: false, seenIds: new Set<string>() };
  const counts = new Map<string, number>(knownIps.map((ip) => [ip, 0]));
  if (ref.serviceType !== 'dedicated') for (const ip of previous.counts.keys()) counts.set(ip, 0);
  const seenIds = new Set<string>();
  let fresh = 0;
  for (const event of events) {
    counts.set(event.ip, (counts.get(event.ip) ?? 0) + 1);
    if (seenIds.has(event.id)) continue;
    seenIds.add(event.id);
    if (!previous.seenIds.has(event.id)) {
      metrics.attackEventsTotal.inc(labels(ref, event.ip));
      fresh++;
    }
  }
  for (const ip of previous.counts.keys()) {
    if (!counts.has(ip)) {
      metrics.attackEvents.remove(labels(ref, ip));
      metrics.attackEventsTotal.remove(labels(ref, ip));
    }
  }
  // Unchanged values are not set again: most IPs stay at 0 poll after poll.
  for (const [ip, count] of counts) {
    const before = previous.counts.get(ip);
    if (before !== count) metrics.attackEvents.set(labels(ref, ip), count);
    // Expose the counter from 0 so that rate() and increase() see the first event.
    if (before === undefined) metrics.attackEventsTotal.inc(labels(ref, ip), 0);
  }
  if (!previous.up) metrics.firewallHistoryUp.set({ service_type: ref.serviceType, service_id: ref.serviceId }, 1);
  state.services.set(key, { counts, up: true, seenIds });
  return fresh;
}

/** A failed poll of one service: history_up 0; its event series keep the values of the poll before. */
export function collectFirewallFailure(state: FirewallSeriesState, metrics: Metrics, ref: ServiceRef): void {
  metrics.firewallHistoryUp.set({ service_type: ref.serviceType, service_id: ref.serviceId }, 0);
  const series = state.services.get(FirewallSeriesState.key(ref));
  if (series) series.up = false;
}

/** Removes every series of a service that is gone (server deleted, id removed from the config). */
export function removeFirewallService(state: FirewallSeriesState, metrics: Metrics, ref: ServiceRef): void {
  const key = FirewallSeriesState.key(ref);
  for (const ip of state.services.get(key)?.counts.keys() ?? []) {
    metrics.attackEvents.remove(labels(ref, ip));
    metrics.attackEventsTotal.remove(labels(ref, ip));
  }
  metrics.firewallHistoryUp.remove({ service_type: ref.serviceType, service_id: ref.serviceId });
  state.services.delete(key);
}
