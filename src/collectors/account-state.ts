/**
 * What one account's polls know, below everything that reads it: the inventory (in-scope servers), the
 * latest server list as the API gave it and the servers it had out of scope, the firewall series state, the
 * attack log, and since when each service waits for its first read. The polls (src/polls/) write it; the
 * remediation guards (the target directory), the status page, discovery and the replication read it, none of
 * them through the scheduler.
 */
import { underAttackPollApart } from '../config/schema.js';
import type { AccountConfig, Config } from '../config/types.js';
import type { ServerList } from '../upstream/decode-servers.js';
import { AttackLog } from './attacks.js';
import { FirewallSeriesState, historyReadAt, removeFirewallService, type ServiceRef } from './firewall.js';
import type { Inventory } from './inventory.js';
import { ownedIps } from './ownership.js';

/**
 * What the latest firewall history says of one dedicated server: unknown (with the reason, a sentence), or
 * when it was read and the newest attack event of each of its IPs that had any. The power guard's input
 * (remediation's `TargetDirectory.attackState`).
 */
export type AttackState =
  | {
      known: false;
      reason: string;
      /**
       * true when a leader that has read the history will know (this replica does not lead the account, or has
       * not read the history since it took it): the decision waits (503, retried) instead of being a denial
       */
      undecided?: true;
      /**
       * ms since epoch (the collector clock) of the failed poll that leaves a history never read unknown: a
       * term that began after it has not polled the server yet, and waits (remediation/targets.ts)
       */
      failedAt?: number;
    }
  | {
      known: true;
      /** ms since epoch (the collector clock) the history was read (firewall.ts `historyReadAt`) */
      readAt: number;
      /** IP → ms since epoch of its newest event (the event's time, else the time the history was read) */
      lastEventAt: ReadonlyMap<string, number>;
    };

/** The configuration an account's state reads, per call (a reload changes it in place). */
export type AccountStateConfig = Pick<Config, 'schedules'> &
  Pick<AccountConfig, 'services'> & {
    /** the polls switched on; default all */
    collectors?: Config['collectors'];
  };

export class AccountState {
  #inventory: Inventory = new Map();
  /** inventories assigned so far: `servicesVersion` without holding an inventory alive */
  #inventories = 0;
  /** true once a server list has been read */
  serversKnown = false;
  /** ids of the latest list's servers that are out of scope (config/scope.ts): remediation denies them by name */
  outOfScopeIds: ReadonlySet<string> = new Set();
  /** the latest server list as the API gave it, before the scope: a reload applies a new scope to it */
  listed: ServerList | undefined;
  readonly firewallState = new FirewallSeriesState();
  /** the events of each service's latest history that had events (status page, /api/v1/attacks) */
  readonly attacks = new AttackLog();
  /** what the latest catalog lists held: installable operating systems and locations (0 before the first read) */
  readonly catalog = { operatingSystems: 0, locations: 0 };
  /**
   * `oldestRead` at the end of the latest firewall run, in seconds (its age then, as
   * `baremetal_firewall_history_oldest_read_age_seconds` reports it); undefined before the first run
   */
  oldestReadAgeSeconds: number | undefined;
  /**
   * the ids of the last successful ledger write (the sets themselves: a new history replaces a set, never
   * edits it); undefined: the next write is not skipped as unchanged
   */
  savedIds: ReadonlyMap<string, ReadonlySet<string>> | undefined;
  readonly #config: AccountStateConfig;
  readonly #now: () => number;
  /** ms (collector clock) since which each service in scope not yet read by this process waits (oldestRead) */
  #unreadSince = new Map<string, number>();
  /** the list being applied to the inventory: one at a time (a poll's and a reload's), so neither reads a stale one */
  #applying: Promise<unknown> = Promise.resolve();

  /** `now`: milliseconds since the epoch (the collector clock) */
  constructor(config: AccountStateConfig, now: () => number = Date.now) {
    this.#config = config;
    this.#now = now;
  }

  /**
   * Takes `ids` (by `type/id`, as the ledger holds them) as counted: at start, and again when this replica
   * becomes leader (another one may have counted events since). A service this process has polled keeps its
   * own ids too; the next history replaces both.
   */
  restoreEventIds(ids: ReadonlyMap<string, Set<string>>): void {
    // The sets below change: the next ledger write must not be skipped as unchanged.
    this.savedIds = undefined;
    this.firewallState.restored.clear();
    for (const [key, set] of ids) {
      const series = this.firewallState.services.get(key);
      // A new set, not the one in place: a service without ids shares one empty set with the others (firewall.ts).
      if (series) series.seenIds = new Set([...series.seenIds, ...set]);
      else this.firewallState.restored.set(key, set);
    }
  }

  /**
   * Forgets what the firewall polls read (`collectors.firewall` switched off): every service's series state,
   * the attack log, the waits for a first read and the oldest read's age. Switched on again, the firewall
   * families start from the next reads, as after a start: a history read before the switch has no series
   * (no attack count of last week, no coverage age of 0), and an `_total` series that comes back is a new one
   * (docs/metrics-counters.md). The ids restored from the ledger stay: events counted before are not counted
   * again by a service this process had not read.
   */
  dropFirewall(): void {
    for (const key of [...this.firewallState.services.keys(), ...this.firewallState.failedBeforeRead.keys()])
      removeFirewallService(this.firewallState, FirewallSeriesState.ref(key));
    this.attacks.clear();
    this.#unreadSince = new Map();
    this.oldestReadAgeSeconds = undefined;
  }

  /** Forgets the catalog counts (`collectors.catalog` switched off): 0 again until the next read, as at start. */
  dropCatalog(): void {
    this.catalog.operatingSystems = 0;
    this.catalog.locations = 0;
  }

  /** Whether the poll `name` is switched on (`collectors.*`, read at each call: a reload changes it in place). */
  collectorOn(name: keyof NonNullable<Config['collectors']>): boolean {
    return this.#config.collectors?.[name] !== false;
  }

  /**
   * The ids of the services whose firewall history is polled, by type, in their one order (`services()` is
   * made from it): their attack and history series are rendered in this order (collectors/families.ts),
   * without a ServiceRef per service.
   */
  serviceIds(): Array<[ServiceRef['serviceType'], Iterable<string>]> {
    const { colocationIds, transitIds } = this.#config.services;
    return [
      ['dedicated', this.inventory.keys()],
      ['colocation', colocationIds],
      ['transit', transitIds],
    ];
  }

  /** the servers in scope, by id (polls/servers.ts assigns a new one per list applied, never edits one) */
  get inventory(): Inventory {
    return this.#inventory;
  }

  set inventory(inventory: Inventory) {
    this.#inventory = inventory;
    this.#inventories++;
  }

  /**
   * What `serviceIds` gives, as values that change when it does (a rendering's version, the firewall poll's
   * pruning): a count of inventories, not the inventory, so one kept does not keep a whole old one alive.
   */
  servicesVersion(): unknown[] {
    return [this.#inventories, this.#config.services.colocationIds, this.#config.services.transitIds];
  }

  hasServer(serverId: string): boolean {
    return this.inventory.has(serverId);
  }

  outOfScope(serverId: string): boolean {
    return this.outOfScopeIds.has(serverId);
  }

  /** The IP is the server's (collectors/ownership.ts: its record's or seen in its firewall history). */
  ownsIp(serverId: string, ip: string): boolean {
    return ownedIps(this.inventory, this.firewallState, serverId).has(ip);
  }

  /** Servers in the latest list that are in scope (the circuit breaker's `max_fraction`). */
  serversInScope(): number {
    return this.inventory.size;
  }

  /**
   * The server's attack state for the power guard: unknown when the firewall collector is off, or its history
   * was never polled (`undecided`: its first poll will tell) or failed at its latest poll (a denial, also when
   * it was never read successfully); else when it was read and the newest event per IP.
   */
  attackState(serverId: string): AttackState {
    if (!this.collectorOn('firewall'))
      return { known: false, reason: 'the firewall collector is off (collectors.firewall: false)' };
    const ref = { serviceType: 'dedicated' as const, serviceId: serverId };
    const readAt = historyReadAt(this.firewallState, ref);
    // Never polled: the first poll will tell (undecided). Polled and failed: denied like a failed latest poll,
    // not left waiting for a read that may never succeed.
    const failedAt = this.firewallState.failedBeforeRead.get(FirewallSeriesState.key(ref));
    if (readAt === undefined && failedAt !== undefined)
      return {
        known: false,
        reason: `the latest poll of its firewall history failed (at ${new Date(failedAt).toISOString()}; never read successfully by this process)`,
        failedAt,
      };
    if (readAt === undefined)
      return { known: false, reason: 'its firewall history has not been read yet', undecided: true };
    const series = this.firewallState.services.get(FirewallSeriesState.key(ref));
    if (series?.up === false)
      return {
        known: false,
        reason: `the latest poll of its firewall history failed (last read at ${new Date(readAt).toISOString()})`,
        ...(series.failedAt !== undefined ? { failedAt: series.failedAt } : {}),
      };
    const polledAt = this.attacks.services.get(FirewallSeriesState.key(ref))?.polledAt ?? readAt;
    const lastEventAt = new Map([...this.attacks.newestPerIp(ref)].map(([ip, e]) => [ip, e.time ?? polledAt]));
    return { known: true, readAt, lastEventAt };
  }

  /** Runs `fn` once the list applied before it is in the inventory (one list applied at a time). */
  serially<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#applying.then(fn);
    this.#applying = run.catch(() => undefined);
    return run;
  }

  /** Services under attack are polled by a job of their own (`schedules.firewall_under_attack` differs). */
  get splitsFirewall(): boolean {
    return underAttackPollApart(this.#config.schedules);
  }

  /** Services whose firewall history is polled: every listed server, then the configured colocation and transit ids. */
  services(): ServiceRef[] {
    return this.serviceIds().flatMap(([serviceType, ids]) =>
      Array.from(ids, (serviceId) => ({ serviceType, serviceId })),
    );
  }

  /** The services a firewall job polls: all of them, or the quiet ones and those under attack apart. */
  servicesOf(job: 'firewall' | 'firewall_under_attack'): ServiceRef[] {
    const all = this.services();
    if (!this.splitsFirewall) return all;
    const attacked = job === 'firewall_under_attack';
    return all.filter((ref) => this.attacks.attacked(ref) === attacked);
  }

  /** Notes, at a firewall run's start, since when each service in scope that this process has not read yet is waiting. */
  noteUnread(services: ServiceRef[]): void {
    const now = this.#now();
    const since = new Map<string, number>();
    for (const ref of services) {
      if (historyReadAt(this.firewallState, ref) !== undefined) continue;
      const key = FirewallSeriesState.key(ref);
      since.set(key, this.#unreadSince.get(key) ?? now);
    }
    this.#unreadSince = since;
  }

  /**
   * The service in scope whose firewall history was read least recently, and how long before `now` (ms,
   * collector clock) it was read (`read`), or — never read by this process — since when it is waiting: the
   * start of the first firewall run that had it in scope (after a restart, of this process). Undefined when
   * there is no service, or the firewall collector is off. `baremetal_firewall_history_oldest_read_age_seconds`
   * and the status page.
   */
  oldestRead(now = this.#now()): { ref: ServiceRef; ageMs: number; read: boolean } | undefined {
    if (this.#config.collectors?.firewall === false) return undefined;
    let oldest: { ref: ServiceRef; at: number; read: boolean } | undefined;
    for (const ref of this.services()) {
      const readAt = historyReadAt(this.firewallState, ref);
      const at = readAt ?? this.#unreadSince.get(FirewallSeriesState.key(ref)) ?? now;
      if (!oldest || at < oldest.at) oldest = { ref, at, read: readAt !== undefined };
    }
    return oldest && { ref: oldest.ref, ageMs: Math.max(0, now - oldest.at), read: oldest.read };
  }
}
