/**
 * The attacks themselves, for people: the events of each service's latest firewall history, kept for the
 * status page and `GET /api/v1/attacks`, never as labels. Only services whose latest history had events are
 * kept, each with its newest events at most and each `raw` text cut to a bounded length. No I/O.
 */
import type { FirewallEvent } from '../upstream/decode.js';
import { type ServiceRef, serviceKey } from './firewall.js';

/** Events kept per service at most (the newest). */
export const MAX_EVENTS_PER_SERVICE = 256;
/** Characters of an event's `raw` text kept at most. */
export const MAX_RAW_LENGTH = 1024;

/** One event as the API reported it (contract §4): its id, IP, raw text and time. */
export interface AttackEvent {
  id: string;
  ip: string;
  /** the provider's description of the event, as sent (cut to MAX_RAW_LENGTH) */
  raw: string;
  /** ms since epoch, from the event's `time` field (Unix seconds or a date); undefined when absent or unreadable */
  time: number | undefined;
}

export interface ServiceAttacks extends ServiceRef {
  /** ms since epoch of the poll that returned these events */
  polledAt: number;
  /** newest first */
  events: AttackEvent[];
}

/** An event's time: `time` in Unix seconds (or ms), or a date text. */
export function eventTime(event: FirewallEvent): number | undefined {
  const value = event.fields.time;
  if (typeof value === 'number' && Number.isFinite(value) && value > 0) return value < 1e12 ? value * 1000 : value;
  if (typeof value !== 'string' || value === '') return undefined;
  if (/^\d{1,13}$/.test(value)) return eventTime({ ...event, fields: { time: Number(value) } });
  const parsed = Date.parse(value);
  return Number.isFinite(parsed) ? parsed : undefined;
}

const keyOf = (ref: ServiceRef) => serviceKey(ref.serviceType, ref.serviceId);

/** The latest events of every service under attack, keyed by `type/id`. */
export class AttackLog {
  readonly services = new Map<string, ServiceAttacks>();

  /** Applies a successful history; a history without events forgets the service. */
  record(ref: ServiceRef, events: readonly FirewallEvent[], now: number): void {
    if (events.length === 0) {
      this.services.delete(keyOf(ref));
      return;
    }
    const kept = events
      .map(
        (event): AttackEvent => ({
          id: event.id,
          ip: event.ip,
          raw: event.raw.slice(0, MAX_RAW_LENGTH),
          time: eventTime(event),
        }),
      )
      .sort((a, b) => (b.time ?? 0) - (a.time ?? 0))
      .slice(0, MAX_EVENTS_PER_SERVICE);
    this.services.set(keyOf(ref), {
      serviceType: ref.serviceType,
      serviceId: ref.serviceId,
      polledAt: now,
      events: kept,
    });
  }

  /** The service's latest history had events. */
  attacked(ref: ServiceRef): boolean {
    return this.services.has(keyOf(ref));
  }

  remove(ref: ServiceRef): void {
    this.services.delete(keyOf(ref));
  }

  /** Forgets every service (the firewall polls switched off). */
  clear(): void {
    this.services.clear();
  }

  /** The newest event of each IP of the service, if it is under attack. */
  newestPerIp(ref: ServiceRef): Map<string, AttackEvent> {
    const newest = new Map<string, AttackEvent>();
    for (const event of this.services.get(keyOf(ref))?.events ?? [])
      if (!newest.has(event.ip)) newest.set(event.ip, event);
    return newest;
  }
}
