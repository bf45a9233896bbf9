/**
 * The simulated provider: seeded, deterministic in-memory state — servers with IPs, colocation and
 * transit services, attack episodes that start and end over time, firewall settings with the
 * 2-minute rule (contract §3, §8), power and cancellation states. Time comes from an injectable clock.
 */
import {
  ATTACKED_PER_HOUR,
  ATTACK_TYPES,
  CPUS,
  DEFAULT_EPISODE_SECONDS,
  LOCATIONS,
  MEMORY,
  OS_NAMES,
  simulatorIp,
  slotAttackRate,
} from './catalog.js';
import { hash32, unit } from './prng.js';

/** Re-exported for the simulator's routes, the CLI and tests. */
export { ATTACKED_PER_HOUR, LOCATIONS, OPERATING_SYSTEMS, simulatorIp, slotAttackRate } from './catalog.js';

export interface SimulatorOptions {
  /** seed of every random choice (default 1) */
  seed?: number;
  /** dedicated servers (default 20) */
  servers?: number;
  /** IPs per dedicated server (default 2) */
  ipsPerServer?: number;
  /** colocation services, ids `colo-1`… (default 2) */
  colocations?: number;
  /** transit services, ids `transit-1`… (default 1) */
  transits?: number;
  /** IPs per colocation or transit service (default 4) */
  ipsPerService?: number;
  /**
   * chance that an IP is under attack in a given episode slot; default `slotAttackRate(ATTACKED_PER_HOUR)`,
   * about 0.25 % a slot, so that ~3 % of IPs see an attack within any hour, as on a production fleet
   */
  attackRate?: number;
  /** length of an attack episode slot in seconds (default 300) */
  episodeSeconds?: number;
  /** seconds between two events of one attack (default 60) */
  eventIntervalSeconds?: number;
  /** milliseconds since the epoch (default Date.now) */
  now?: () => number;
}

export interface SimServer {
  serverId: string;
  hostname: string;
  ips: string[];
  os: string;
  processor: string;
  memory: string;
  location: string;
  power: 'on' | 'off';
  cancellation: 'none' | 'immediate' | 'end';
}

export interface SimService {
  serviceType: 'dedicated' | 'colocation' | 'transit';
  serviceId: string;
  ips: string[];
}

/** A firewall event as the simulator sends it (the public client reads `id`, `ip`, `raw`). */
export interface SimEvent {
  id: string;
  ip: string;
  raw: string;
  /** Unix time in seconds */
  time: number;
  attack_type: string;
  mbps: number;
  kpps: number;
}

export interface FirewallSetting {
  state: '0' | '1';
  sensitivity: 'low' | 'medium' | 'normal' | 'high';
  /** ms since epoch of the last state update (contract §8: one per 2 minutes) */
  stateUpdatedAt?: number;
}

/** Per the contract, §8: the firewall state of an IP can change at most once every 2 minutes. */
export const FIREWALL_STATE_WINDOW_MS = 2 * 60 * 1000;

/**
 * The demo's simulator (`baremetal-exporter demo`): 24 IPs and no random attacks, so that the one IP the demo
 * puts under attack by hand, and names in its banner, is the only one a newcomer sees attacked.
 */
export const DEMO_SIMULATOR: Readonly<SimulatorOptions> = {
  servers: 12,
  colocations: 2,
  transits: 1,
  attackRate: 0,
  seed: 42,
};

export class SimulatorState {
  readonly servers = new Map<string, SimServer>();
  readonly services = new Map<string, SimService>();
  readonly firewall = new Map<string, FirewallSetting>();
  /** attacks started by hand (tests, demo): IP → [start, end) in ms */
  readonly forcedAttacks = new Map<string, { from: number; until: number }>();
  /** events added by hand to a service's history (`type/id` → events), whatever their time or ip */
  readonly injectedEvents = new Map<string, SimEvent[]>();
  readonly now: () => number;
  readonly #ipIndex = new Map<string, number>();
  readonly #o: Required<Omit<SimulatorOptions, 'now'>>;

  constructor(options: SimulatorOptions = {}) {
    this.#o = {
      seed: options.seed ?? 1,
      servers: options.servers ?? 20,
      ipsPerServer: options.ipsPerServer ?? 2,
      colocations: options.colocations ?? 2,
      transits: options.transits ?? 1,
      ipsPerService: options.ipsPerService ?? 4,
      attackRate:
        options.attackRate ?? slotAttackRate(ATTACKED_PER_HOUR, options.episodeSeconds ?? DEFAULT_EPISODE_SECONDS),
      episodeSeconds: options.episodeSeconds ?? DEFAULT_EPISODE_SECONDS,
      eventIntervalSeconds: options.eventIntervalSeconds ?? 60,
    };
    this.now = options.now ?? Date.now;
    let n = 0;
    const nextIps = (count: number) =>
      Array.from({ length: count }, () => {
        const ip = simulatorIp(n);
        this.#ipIndex.set(ip, n++);
        return ip;
      });
    for (let i = 1; i <= this.#o.servers; i++) this.addServer(String(100000 + i), nextIps(this.#o.ipsPerServer));
    for (let i = 1; i <= this.#o.colocations; i++) {
      this.services.set(`colocation/colo-${i}`, {
        serviceType: 'colocation',
        serviceId: `colo-${i}`,
        ips: nextIps(this.#o.ipsPerService),
      });
    }
    for (let i = 1; i <= this.#o.transits; i++) {
      this.services.set(`transit/transit-${i}`, {
        serviceType: 'transit',
        serviceId: `transit-${i}`,
        ips: nextIps(this.#o.ipsPerService),
      });
    }
  }

  /** Adds a dedicated server (also used by tests to change the inventory). */
  addServer(serverId: string, ips: string[]): SimServer {
    const h = hash32(this.#o.seed, 'server', serverId);
    const server: SimServer = {
      serverId,
      hostname: `srv${serverId}.example.net`,
      ips,
      os: OS_NAMES[h % OS_NAMES.length]!,
      processor: CPUS[(h >>> 8) % CPUS.length]!,
      memory: MEMORY[(h >>> 16) % MEMORY.length]!,
      location: LOCATIONS[(h >>> 24) % LOCATIONS.length]!.id,
      power: 'on',
      cancellation: 'none',
    };
    for (const ip of ips) if (!this.#ipIndex.has(ip)) this.#ipIndex.set(ip, hash32(ip));
    this.servers.set(serverId, server);
    this.services.set(`dedicated/${serverId}`, { serviceType: 'dedicated', serviceId: serverId, ips });
    return server;
  }

  /** Removes a dedicated server (tests of stale-series removal). */
  removeServer(serverId: string): void {
    this.servers.delete(serverId);
    this.services.delete(`dedicated/${serverId}`);
  }

  /**
   * Adds events to every history of a service until `clearInjectedEvents`, whatever the window or their
   * time (tests of hostile upstream data: junk strings as `ip`, thousands of IPs). Missing fields get
   * harmless values; `ip` is sent as given.
   */
  injectEvents(
    serviceType: SimService['serviceType'],
    serviceId: string,
    events: Array<Partial<SimEvent> & { id: string; ip: string }>,
  ): void {
    const key = `${serviceType}/${serviceId}`;
    const time = Math.floor(this.now() / 1000);
    const full = events.map((e) => ({
      raw: `${e.ip} injected`,
      time,
      attack_type: 'udp_flood',
      mbps: 0,
      kpps: 0,
      ...e,
    }));
    this.injectedEvents.set(key, [...(this.injectedEvents.get(key) ?? []), ...full]);
  }

  /** Removes the injected events of one service, or of every service. */
  clearInjectedEvents(serviceType?: SimService['serviceType'], serviceId?: string): void {
    if (serviceType === undefined) this.injectedEvents.clear();
    else this.injectedEvents.delete(`${serviceType}/${serviceId}`);
  }

  service(serviceType: SimService['serviceType'], serviceId: string): SimService | undefined {
    return this.services.get(`${serviceType}/${serviceId}`);
  }

  /** Puts `ip` under attack from now for `seconds` (default one hour). */
  startAttack(ip: string, seconds = 3600): void {
    const now = this.now();
    this.forcedAttacks.set(ip, { from: now, until: now + seconds * 1000 });
  }

  /** Ends a forced attack now (its past events stay in the history). */
  stopAttack(ip: string): void {
    const attack = this.forcedAttacks.get(ip);
    if (attack) attack.until = Math.min(attack.until, this.now());
  }

  /**
   * Events of `ip` with time in (now − windowSeconds, now], oldest first. Episodes: time is cut into
   * slots of `episodeSeconds`; an IP is attacked in a slot with probability `attackRate`, decided by a
   * hash of (seed, IP, slot); an attacked slot has an event every `eventIntervalSeconds`.
   */
  eventsFor(ip: string, windowSeconds: number): SimEvent[] {
    const nowSec = Math.floor(this.now() / 1000);
    const from = nowSec - windowSeconds;
    const { episodeSeconds: slotLen, eventIntervalSeconds: step, attackRate, seed } = this.#o;
    const index = this.#ipIndex.get(ip) ?? hash32(ip);
    const events: SimEvent[] = [];
    const push = (time: number, tag: string) => {
      const h = hash32(seed, ip, tag, time);
      const mbps = 200 + (h % 9800);
      events.push({
        id: `${time}${String(index).padStart(7, '0')}`,
        ip,
        raw: `${new Date(time * 1000).toISOString()} ${ip} ${ATTACK_TYPES[h % ATTACK_TYPES.length]} ${mbps} Mbps mitigated`,
        time,
        attack_type: ATTACK_TYPES[h % ATTACK_TYPES.length]!,
        mbps,
        kpps: Math.round(mbps * 90),
      });
    };
    if (attackRate > 0) {
      for (let slot = Math.floor(from / slotLen); slot * slotLen <= nowSec; slot++) {
        if (unit(seed, 'attack', ip, slot) >= attackRate) continue;
        for (let t = slot * slotLen; t < (slot + 1) * slotLen; t += step)
          if (t > from && t <= nowSec) push(t, 'episode');
      }
    }
    const forced = this.forcedAttacks.get(ip);
    if (forced) {
      const start = Math.floor(forced.from / 1000);
      const end = Math.min(Math.floor(forced.until / 1000), nowSec);
      const seen = new Set(events.map((e) => e.time));
      for (let t = start; t <= end; t += step) if (t > from && !seen.has(t)) push(t, 'forced');
      events.sort((a, b) => a.time - b.time);
    }
    return events;
  }

  /** Firewall history of a service: every IP, or only `ip` (contract §4, rule 2); injected events included. */
  history(service: SimService, windowSeconds: number, ip?: string): SimEvent[] {
    const events = (ip ? [ip] : service.ips).flatMap((i) => this.eventsFor(i, windowSeconds));
    const injected = this.injectedEvents.get(`${service.serviceType}/${service.serviceId}`) ?? [];
    return injected.length === 0 ? events : [...events, ...injected.filter((e) => ip === undefined || e.ip === ip)];
  }

  firewallSetting(ip: string): FirewallSetting {
    let setting = this.firewall.get(ip);
    if (!setting) {
      setting = { state: '0', sensitivity: 'normal' };
      this.firewall.set(ip, setting);
    }
    return setting;
  }

  /** Applies the 2-minute rule (contract §3, §8). Returns false when the window is still closed. */
  setFirewallState(ip: string, state: '0' | '1'): boolean {
    const setting = this.firewallSetting(ip);
    const now = this.now();
    if (setting.stateUpdatedAt !== undefined && now - setting.stateUpdatedAt < FIREWALL_STATE_WINDOW_MS) return false;
    setting.state = state;
    setting.stateUpdatedAt = now;
    return true;
  }

  /** The record the API returns for a server (field spellings as the public client reads them). */
  record(server: SimServer): Record<string, unknown> {
    return {
      server_id: server.serverId,
      hostname: server.hostname,
      IP: server.ips[0] ?? '',
      ips: server.ips,
      OS: server.os,
      processor: server.processor,
      memory: server.memory,
      location: server.location,
      status: server.power === 'on' ? 'online' : 'offline',
      cancellation: server.cancellation === 'none' ? null : server.cancellation,
    };
  }
}
