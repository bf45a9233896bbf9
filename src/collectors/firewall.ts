/**
 * The firewall-history collector: the events of one service's hour-scale history in; it updates its series
 * state (`FirewallSeriesState`: what the attack and history series of the service are, rendered from it by
 * collectors/families.ts), and does no I/O. It remembers, per service, the IPs it exposes and the event ids of
 * the latest history so that `_total` counts each event once and both sets stay bounded by what the API
 * currently reports.
 * Upstream data never decides the cardinality alone: an `ip` that is not an IP address creates no series,
 * a service has at most `maxIpsPerService` IP series, and a colocation or transit IP without events for
 * `ipRetentionMs` loses its series.
 */
import { isIP } from 'node:net';
import type { Metrics } from '../metrics/definitions.js';
import type { FirewallEvent } from '../upstream/decode.js';
import type { ServiceType } from '../config/api-terms.js';

/** A service with a firewall history: a dedicated server, a colocation or a transit service. */
export interface ServiceRef {
  serviceType: ServiceType;
  serviceId: string;
}

/** Bounds on the series one service's history may create (config `firewall`). */
export interface FirewallLimits {
  /** IP series per service at most */
  maxIpsPerService: number;
  /** a colocation or transit IP with no events for this long loses its series, ms */
  ipRetentionMs: number;
}

export interface ServiceSeries {
  /** events per IP as last exposed (`…_last_hour`); the keys are the IPs exposed, in exposition order */
  counts: Map<string, number>;
  /**
   * `baremetal_firewall_attack_events_total` of each exposed IP whose count is not 0 (NONE: every one at 0):
   * distinct events counted since its series was created
   */
  totals: ReadonlyMap<string, number>;
  /** ms (collector clock) at which the service's series were created (its first history applied) */
  since: number;
  /** ms (collector clock) at which the series of each IP exposed later than `since` was created (NONE: none) */
  created: ReadonlyMap<string, number>;
  /** colocation and transit: ms (collector clock) of the last history with events for the exposed IP (NONE: dedicated) */
  lastEventAt: ReadonlyMap<string, number>;
  /** last value of history_up */
  up: boolean;
  /** ms (collector clock) of the latest failed poll while `up` is false (absent while up) */
  failedAt?: number;
  /** ms (collector clock) at which a history of the service was last read and applied successfully */
  readAt: number;
  /** event ids of the latest successful history, for deduplication (NO_IDS: none) */
  seenIds: ReadonlySet<string>;
  /**
   * Events per IP whose `_total` series this poll created: exposed at 0 now, added at the service's next
   * poll (success or failure), so a scrape between the two sees the series at 0 before its first events.
   * NONE when there are none (most services, most polls).
   */
  pending: ReadonlyMap<string, number>;
}

/**
 * The one empty map of every service without any (a dedicated server's `lastEventAt`, a `pending` without
 * events): two empty Maps per service were ~240 bytes a server at 10,000 servers (bench/README.md, the heap
 * snapshot). Never written: a service that gets entries gets a Map of its own.
 */
const NONE: ReadonlyMap<string, number> = new Map();
/** The one empty set of event ids of every service whose latest history had no events (most of them); never written. */
const NO_IDS: ReadonlySet<string> = new Set();

/**
 * A service's attack history read longer ago than this many periods of the `firewall` schedule is stale.
 * One number for two readers: the coverage alert and `check-config`'s warning (a budget that cannot read
 * every service this often), and the power-action guard, which treats a stale history as unknown attack
 * state and denies. So a budget `check-config` accepts without a warning is one whose servers' power
 * actions are never denied for staleness alone.
 */
export const STALE_AFTER_FIREWALL_PERIODS = 3;

/**
 * Ms (collector clock) at which the service's history was last read successfully (a failed poll leaves
 * it as it was); undefined when this process has not read it successfully yet.
 */
export function historyReadAt(state: FirewallSeriesState, ref: ServiceRef): number | undefined {
  return state.services.get(FirewallSeriesState.key(ref))?.readAt;
}

/**
 * A service's key in the firewall state and the attack log (`type/id`; FirewallSeriesState.ref reads it back),
 * from its type and id without a ServiceRef (the rendering walks ids: collectors/families.ts).
 */
export function serviceKey(serviceType: string, serviceId: string): string {
  return `${serviceType}/${serviceId}`;
}

/** What the collector remembers between polls, keyed by `type/id`. */
export class FirewallSeriesState {
  readonly services = new Map<string, ServiceSeries>();
  /**
   * Changes of what the series say, by what they read: `attacks` the attack families (an IP exposed or not, a
   * count, a total), `up` history_up (a service's up, a service read or failed the first time or forgotten),
   * `reads` when each history was last read. The rendering reuses a family's bytes while its counts are
   * unchanged. Bumped by the collector's functions below, the only writers.
   */
  readonly changes = { attacks: 0, up: 0, reads: 0 };
  /**
   * Event ids of services not yet polled by this process, as the previous one left them (the store's EventLedger):
   * a service's first history counts only the events not among them. Emptied as services are polled or removed.
   */
  readonly restored = new Map<string, Set<string>>();
  /**
   * Ms (collector clock) of the latest failed poll of each service whose history this process has not read
   * successfully yet (it has no series entry): the power guard denies on it ("the latest poll failed") where
   * a history never polled waits (collectors/account-state.ts `attackState`). Emptied as services are read or
   * removed.
   */
  readonly failedBeforeRead = new Map<string, number>();
  static key(ref: ServiceRef): string {
    return serviceKey(ref.serviceType, ref.serviceId);
  }
  /** The service of a `key` (its type, then its id, which may hold a `/`). */
  static ref(key: string): ServiceRef {
    const [serviceType, ...id] = key.split('/');
    return { serviceType: serviceType as ServiceType, serviceId: id.join('/') };
  }
}

/** What a history is collected with besides its events. */
export interface HistoryContext {
  limits: FirewallLimits;
  /** ms since epoch, the poll's clock */
  now: number;
  /** the service's IPs from elsewhere (a dedicated server's record): exposed first, with 0 events */
  knownIps?: readonly string[];
}

/**
 * The IPs to expose, at most `limits.maxIpsPerService`: known IPs first, then the IPs of this history by
 * event count (first seen first on a tie), then — colocation and transit only — IPs seen before whose
 * last events are within the retention, most recent first.
 */
function chooseIps(
  previous: ServiceSeries | undefined,
  perIp: Map<string, number>,
  retained: boolean,
  { limits, now, knownIps = [] }: HistoryContext,
): string[] {
  const chosen = new Set<string>();
  const add = (ip: string) => chosen.size < limits.maxIpsPerService && chosen.add(ip);
  for (const ip of knownIps) if (isIP(ip) !== 0) add(ip);
  for (const [ip] of [...perIp].sort((a, b) => b[1] - a[1])) add(ip);
  if (retained && previous) {
    const recent = [...previous.lastEventAt]
      .filter(([, at]) => now - at < limits.ipRetentionMs)
      .sort((a, b) => b[1] - a[1]);
    for (const [ip] of recent) add(ip);
  }
  return [...chosen];
}

/**
 * A dedicated server's history without events leaves its series as they are when the previous one was a
 * success without events too and the exposed IPs would be the same: its known IPs, in order, at 0.
 */
function quietAsBefore(previous: ServiceSeries, { limits, knownIps = [] }: HistoryContext): boolean {
  if (!previous.up || previous.seenIds.size > 0) return false;
  const exposed = previous.counts.entries();
  let size = 0;
  for (const ip of knownIps) {
    if (isIP(ip) === 0) continue;
    if (size >= limits.maxIpsPerService) break;
    const next = exposed.next();
    if (next.done || next.value[0] !== ip || next.value[1] !== 0) return false;
    size++;
  }
  return size === previous.counts.size;
}

/**
 * Applies a successful history. Events whose `ip` is not an IP address, or whose IP is beyond the
 * service's cap, still belong to the history (deduplication, the return value) but create no series;
 * each distinct one is counted in `firewallEventsDropped`. IPs of dedicated servers that are neither known
 * nor in the history any more are removed; colocation and transit IPs are kept at 0 until they have had
 * no events for `limits.ipRetentionMs`. Returns the number of events new to this service.
 */
export function collectFirewallHistory(
  state: FirewallSeriesState,
  { account, metrics }: { account: string; metrics: Pick<Metrics, 'firewallEventsDropped'> },
  ref: ServiceRef,
  events: FirewallEvent[],
  context: HistoryContext,
): number {
  const key = FirewallSeriesState.key(ref);
  const previous = state.services.get(key);
  const retained = ref.serviceType !== 'dedicated';
  if (previous && !retained && events.length === 0 && quietAsBefore(previous, context)) {
    // Most polls of most servers: no events, before and now. Only the time of the last success moves.
    state.restored.delete(key);
    previous.readAt = context.now;
    state.changes.reads++;
    return 0;
  }
  const counted = previous?.seenIds ?? state.restored.get(key);
  state.restored.delete(key);
  const perIp = new Map<string, number>();
  const seenIds = new Set<string>();
  const fresh: FirewallEvent[] = [];
  for (const event of events) {
    if (isIP(event.ip) !== 0) perIp.set(event.ip, (perIp.get(event.ip) ?? 0) + 1);
    if (seenIds.has(event.id)) continue;
    seenIds.add(event.id);
    if (!counted?.has(event.id)) fresh.push(event);
  }
  const counts = new Map(chooseIps(previous, perIp, retained, context).map((ip) => [ip, perIp.get(ip) ?? 0]));
  let lastEventAt = NONE;
  if (retained) {
    const times = new Map<string, number>();
    for (const ip of counts.keys()) {
      const at = perIp.has(ip) ? context.now : previous?.lastEventAt.get(ip);
      if (at !== undefined) times.set(ip, at);
    }
    lastEventAt = times;
  }
  // An IP's total goes on while its series stays; one that leaves the exposed IPs loses it.
  const totals = new Map<string, number>();
  const add = (ip: string, by: number) => totals.set(ip, (totals.get(ip) ?? 0) + by);
  for (const [ip, total] of previous?.totals ?? NONE) if (counts.has(ip)) add(ip, total);
  // The events held back by the previous poll, for the series it created and this one keeps.
  for (const [ip, held] of previous?.pending ?? NONE) if (counts.has(ip)) add(ip, held);
  let pending: Map<string, number> | undefined;
  for (const event of fresh) {
    if (isIP(event.ip) === 0) metrics.firewallEventsDropped.inc({ account, reason: 'invalid_ip' });
    else if (!counts.has(event.ip)) metrics.firewallEventsDropped.inc({ account, reason: 'ip_limit' });
    // A series this poll creates is exposed at 0; its first events are added at the next poll (see pending).
    else if (!previous?.counts.has(event.ip)) {
      pending ??= new Map();
      pending.set(event.ip, (pending.get(event.ip) ?? 0) + 1);
    } else add(event.ip, 1);
  }
  // The series created later than the service's: their own creation time (OpenMetrics `_created`).
  const created = new Map<string, number>();
  if (previous)
    for (const ip of counts.keys()) {
      const at = previous.counts.has(ip) ? previous.created.get(ip) : context.now;
      if (at !== undefined) created.set(ip, at);
    }
  if (state.failedBeforeRead.delete(key) || !previous?.up) state.changes.up++;
  if (!previous || !sameMap(previous.counts, counts) || !sameMap(previous.totals, totals)) state.changes.attacks++;
  state.services.set(key, {
    counts,
    totals: totals.size > 0 ? totals : NONE,
    since: previous?.since ?? context.now,
    created: created.size > 0 ? created : NONE,
    lastEventAt,
    up: true,
    readAt: context.now,
    seenIds: seenIds.size > 0 ? seenIds : NO_IDS,
    pending: pending ?? NONE,
  });
  state.changes.reads++;
  return fresh.length;
}

/** The same keys in the same order with the same values. */
function sameMap(a: ReadonlyMap<string, number>, b: ReadonlyMap<string, number>): boolean {
  if (a.size !== b.size) return false;
  const other = b.entries();
  for (const [key, value] of a) {
    const next = other.next().value;
    if (next?.[0] !== key || next[1] !== value) return false;
  }
  return true;
}

/**
 * A failed poll of one service at `now` (ms, the collector clock): history_up 0; its event series keep the
 * values of the poll before, plus the events that poll held back for the series it created (they have been
 * exposed at 0 for a poll). A service never read successfully gets its failure recorded (`failedBeforeRead`).
 */
export function collectFirewallFailure(state: FirewallSeriesState, ref: ServiceRef, now: number): void {
  const key = FirewallSeriesState.key(ref);
  const series = state.services.get(key);
  if (!series) {
    if (!state.failedBeforeRead.has(key)) state.changes.up++;
    state.failedBeforeRead.set(key, now);
    return;
  }
  if (series.up) state.changes.up++;
  series.up = false;
  series.failedAt = now;
  if (series.pending.size === 0) return;
  state.changes.attacks++;
  const totals = new Map(series.totals);
  for (const [ip, held] of series.pending) totals.set(ip, (totals.get(ip) ?? 0) + held);
  series.totals = totals;
  series.pending = NONE;
}

/** Forgets a service that is gone (server deleted, id removed from the config): it has no series any more. */
export function removeFirewallService(state: FirewallSeriesState, ref: ServiceRef): void {
  const key = FirewallSeriesState.key(ref);
  const held = state.services.delete(key);
  if (state.failedBeforeRead.delete(key) || held) {
    state.changes.attacks++;
    state.changes.up++;
  }
  state.restored.delete(key);
}
