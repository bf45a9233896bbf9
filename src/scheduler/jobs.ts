/**
 * The work of each poll job: fetch through the upstream modules, hand the decoded data to the collectors
 * (which update metrics and their series state, without I/O), keep the latest inventory. One failing
 * server, service or image fails only itself.
 */
import type { Logger } from 'pino';
import { AttackLog } from '../collectors/attacks.js';
import {
  collectFirewallFailure,
  collectFirewallHistory,
  FirewallSeriesState,
  historyReadAt,
  removeFirewallService,
  STALE_AFTER_FIREWALL_PERIODS,
  type ServiceRef,
} from '../collectors/firewall.js';
import { collectServerList, type Inventory } from '../collectors/inventory.js';
import { ownedIps } from '../collectors/ownership.js';
import type { AccountConfig, Config, JobName } from '../config/schema.js';
import { inScope, type ServerScope } from '../config/scope.js';
import { checkImage } from '../graphs/image.js';
import type { GraphKey, GraphStore } from '../graphs/store.js';
import type { Metrics, RunOutcome } from '../metrics/definitions.js';
import type { AttackState, TargetDirectory } from '../remediation/types.js';
import type { EventLedger } from '../store/store.js';
import type { UpstreamClient } from '../upstream/client.js';
import type { ServerList } from '../upstream/decode-servers.js';
import { getGraph, listOperatingSystems, listServers } from '../upstream/dedicated.js';
import { getFirewallHistory } from '../upstream/firewall.js';
import { listLocations } from '../upstream/reseller.js';
import { COVERAGE_REMEDY, firewallCoverage } from './budget-plan.js';
import { abortable, PollJob, runDeadlineMs, type WorkResult } from './poll-job.js';
import { RoundRobin, runCapacity } from './round-robin.js';
import { schedulePeriodMs } from './scheduler.js';

export interface PollJobsDeps {
  client: UpstreamClient;
  metrics: Metrics;
  logger: Logger;
  graphStore: GraphStore;
  /** where the event ids of the latest histories outlive the process; absent: counts restart from scratch */
  ledger?: EventLedger;
  /** the ids the ledger held at start (`EventLedger.load`), by `type/id` */
  restoredEventIds?: Map<string, Set<string>>;
  /** `schedules` gives each run its deadline (the period of the job's schedule, also for runs started by hand) */
  config: Pick<Config, 'graphs' | 'firewall' | 'schedules'> &
    Pick<AccountConfig, 'services'> & {
      /** the servers in scope; read per run (a reload replaces its lists); default every server */
      scope?: ServerScope;
      /** the polls switched on; read per run (a reload changes them in place); default all */
      collectors?: Config['collectors'];
    };
  /** milliseconds since the epoch */
  now?: () => number;
  onFinished?: (job: JobName, outcome: RunOutcome, problem?: string) => void;
}

/**
 * Runs `fn` over `items` with `width` workers pulling from one cursor; counts failures. A worker pool
 * rather than one promise per item: 10,000 servers would otherwise hold 10,000 pending closures (and
 * their garbage) while the client's shared limit lets only a few through. Once `signal` aborts, no new
 * item is taken and the items in flight are no longer waited for: they and the items never started are
 * counted as cancelled (each in-flight one is passed to `onError` with the abort reason).
 */
export async function each<T>(
  items: readonly T[],
  width: number,
  signal: AbortSignal,
  fn: (item: T) => Promise<void>,
  onError: (item: T, error: unknown) => void,
): Promise<WorkResult> {
  let cursor = 0;
  let failed = 0;
  let cancelled = 0;
  const worker = async () => {
    while (cursor < items.length && !signal.aborted) {
      const item = items[cursor++]!;
      try {
        await abortable(fn(item), signal);
      } catch (error) {
        if (signal.aborted) cancelled++;
        else failed++;
        onError(item, error);
      }
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, worker));
  return { items: items.length, failed, cancelled: cancelled + items.length - cursor };
}

/** The four poll jobs and the inventory they keep; answers the remediation guards' questions (TargetDirectory). */
export class PollJobs implements TargetDirectory {
  inventory: Inventory = new Map();
  /** true once a server list has been read */
  serversKnown = false;
  /** ids of the latest list's servers that are out of scope (config/scope.ts): remediation denies them by name */
  #outOfScope = new Set<string>();
  /** the latest server list as the API gave it, before the scope: a reload applies a new scope to it */
  #listed: ServerList | undefined;
  /** the list being applied to the inventory: one at a time (a poll's and a reload's), so neither reads a stale one */
  #applying: Promise<unknown> = Promise.resolve();
  readonly firewallState = new FirewallSeriesState();
  /** the events of each service's latest history that had events (status page, /api/v1/attacks) */
  readonly attacks = new AttackLog();
  /**
   * the jobs; `firewall_under_attack` only when its schedule differs from `firewall`'s (otherwise the
   * firewall job polls every service)
   */
  readonly jobs: Map<JobName, PollJob>;
  readonly #deps: PollJobsDeps;
  readonly #now: () => number;
  /** round-robin coverage of the firewall jobs, when a run cannot poll all its services within the budget */
  readonly #rounds = {
    firewall: new RoundRobin<ServiceRef>(FirewallSeriesState.key),
    firewall_under_attack: new RoundRobin<ServiceRef>(FirewallSeriesState.key),
  };
  /** ms (collector clock) since which each service in scope not yet read by this process waits (oldestRead) */
  #unreadSince = new Map<string, number>();
  /** the start-up warning about the budget was logged */
  #budgetWarned = false;
  /** the ids of the last successful ledger write (the sets themselves: a new history replaces a set, never edits it) */
  #savedIds: ReadonlyMap<string, ReadonlySet<string>> | undefined;

  constructor(deps: PollJobsDeps) {
    this.#deps = deps;
    this.#now = deps.now ?? Date.now;
    this.restoreEventIds(deps.restoredEventIds ?? new Map());
    const work: Record<JobName, (signal: AbortSignal) => Promise<WorkResult>> = {
      servers: (signal) => this.pollServers(signal),
      firewall: (signal) => this.pollFirewall(signal),
      firewall_under_attack: (signal) => this.pollFirewall(signal, 'firewall_under_attack'),
      graphs: (signal) => this.pollGraphs(signal),
      catalog: (signal) => this.pollCatalog(signal),
    };
    this.jobs = new Map(
      (Object.keys(work) as JobName[])
        .filter((name) => name !== 'firewall_under_attack' || this.splitsFirewall)
        .map((name) => [
          name,
          new PollJob({
            name,
            work: work[name],
            metrics: deps.metrics,
            logger: deps.logger,
            now: this.#now,
            // Read per run: a config reload may change the schedule.
            deadlineMs: () => runDeadlineMs(schedulePeriodMs(deps.config.schedules[name])),
            onFinished: (outcome, problem) => deps.onFinished?.(name, outcome, problem),
          }),
        ]),
    );
  }

  /**
   * Takes `ids` (by `type/id`, as the ledger holds them) as counted: at start, and again when this replica
   * becomes leader (another one may have counted events since). A service this process has polled keeps its
   * own ids too; the next history replaces both.
   */
  restoreEventIds(ids: ReadonlyMap<string, Set<string>>): void {
    // The sets below change in place: the next ledger write must not be skipped as unchanged.
    this.#savedIds = undefined;
    this.firewallState.restored.clear();
    for (const [key, set] of ids) {
      const seen = this.firewallState.services.get(key)?.seenIds;
      if (seen) for (const id of set) seen.add(id);
      else this.firewallState.restored.set(key, set);
    }
  }

  hasServer(serverId: string): boolean {
    return this.inventory.has(serverId);
  }

  outOfScope(serverId: string): boolean {
    return this.#outOfScope.has(serverId);
  }

  /** The IP is the server's (collectors/ownership.ts: its record's or seen in its firewall history). */
  ownsIp(serverId: string, ip: string): boolean {
    return ownedIps(this.inventory, this.firewallState, serverId).has(ip);
  }

  serversInScope(): number {
    return this.inventory.size;
  }

  /**
   * The server's attack state for the power guard: unknown when the firewall collector is off, or its history
   * was never read or failed at its latest poll; else when it was read and the newest event per IP.
   */
  attackState(serverId: string): AttackState {
    if (this.#deps.config.collectors?.firewall === false)
      return { known: false, reason: 'the firewall collector is off (collectors.firewall: false)' };
    const ref = { serviceType: 'dedicated' as const, serviceId: serverId };
    const readAt = historyReadAt(this.firewallState, ref);
    if (readAt === undefined) return { known: false, reason: 'its firewall history has not been read yet' };
    if (this.firewallState.services.get(FirewallSeriesState.key(ref))?.up === false)
      return {
        known: false,
        reason: `the latest poll of its firewall history failed (last read at ${new Date(readAt).toISOString()})`,
      };
    const polledAt = this.attacks.services.get(FirewallSeriesState.key(ref))?.polledAt ?? readAt;
    const lastEventAt = new Map([...this.attacks.newestPerIp(ref)].map(([ip, e]) => [ip, e.time ?? polledAt]));
    return { known: true, readAt, lastEventAt };
  }

  /** Runs one job now (through its overlap guard); `skipped` for a job that does not exist (see `jobs`). */
  run(job: JobName): Promise<RunOutcome> {
    return this.jobs.get(job)?.run() ?? Promise.resolve('skipped');
  }

  /** Services under attack are polled by a job of their own (`schedules.firewall_under_attack` differs). */
  get splitsFirewall(): boolean {
    const { schedules } = this.#deps.config;
    return schedules.firewall_under_attack !== schedules.firewall;
  }

  /** The services a firewall job polls: all of them, or the quiet ones and those under attack apart. */
  servicesOf(job: 'firewall' | 'firewall_under_attack'): ServiceRef[] {
    const all = this.services();
    if (!this.splitsFirewall) return all;
    const attacked = job === 'firewall_under_attack';
    return all.filter((ref) => this.attacks.attacked(ref) === attacked);
  }

  /**
   * History requests one run of the firewall job may make within the request budget: the run's deadline at
   * the budget, less a margin and, when the services under attack have a job of their own, less what that
   * job spends in the same time. Graphs and catalog take nothing from it: their requests wait behind the
   * firewall polls' in the budget (upstream/request-budget.ts) and use what the runs leave.
   */
  firewallCapacity(job: 'firewall' | 'firewall_under_attack'): number {
    const { client, config } = this.#deps;
    const rate = client.budget?.ratePerSecond;
    if (rate === undefined) return Number.POSITIVE_INFINITY;
    const periodMs = schedulePeriodMs(config.schedules[job]);
    const capacity = runCapacity(rate, runDeadlineMs(periodMs));
    if (job === 'firewall_under_attack' || !this.splitsFirewall) return capacity;
    const attackedPerPeriod =
      this.servicesOf('firewall_under_attack').length *
      (periodMs / schedulePeriodMs(config.schedules.firewall_under_attack));
    return Math.max(1, Math.floor(capacity - attackedPerPeriod));
  }

  /**
   * Warns once, after the first server list, when the firewall services do not fit in one run at the
   * budget: they are then covered round-robin over several runs (budget-plan.ts); more loudly when every
   * service is then read less often than every STALE_AFTER_FIREWALL_PERIODS periods.
   */
  #warnBudget(): void {
    if (this.#budgetWarned) return;
    this.#budgetWarned = true;
    const { client, config, logger } = this.#deps;
    const requests = this.services().length;
    const capacity = this.firewallCapacity('firewall');
    if (requests <= capacity) return;
    const periodMs = schedulePeriodMs(config.schedules.firewall);
    const coverage = firewallCoverage(requests, capacity, periodMs);
    const fields = {
      poll: 'firewall',
      requests,
      max_requests_per_second: client.budget?.ratePerSecond,
      schedule: config.schedules.firewall,
      period_seconds: periodMs / 1000,
      per_run: capacity,
      runs_per_round: coverage.runs,
      read_every_seconds: coverage.everyMs / 1000,
    };
    const message = `the firewall poll's ${requests} requests do not fit in its period at upstream.max_requests_per_second; each run polls ${capacity} services round-robin, every service once every ${coverage.runs} runs (${coverage.everyMs / 1000}s)`;
    if (coverage.stale)
      logger.warn(
        fields,
        `${message}: more than ${STALE_AFTER_FIREWALL_PERIODS} firewall periods, attacks are seen late and power actions are denied as stale; ${COVERAGE_REMEDY}`,
      );
    else logger.warn(fields, message);
  }

  /** Services whose firewall history is polled: every listed server, then the configured colocation and transit ids. */
  services(): ServiceRef[] {
    const { colocationIds, transitIds } = this.#deps.config.services;
    return [
      ...[...this.inventory.keys()].map((serviceId) => ({ serviceType: 'dedicated' as const, serviceId })),
      ...colocationIds.map((serviceId) => ({ serviceType: 'colocation' as const, serviceId })),
      ...transitIds.map((serviceId) => ({ serviceType: 'transit' as const, serviceId })),
    ];
  }

  /**
   * `servers` job: the server list; series of servers that disappeared are removed. The first list also
   * retires the images of servers deleted while the daemon was down (loaded from disk at start). The list is kept
   * as the API gave it, before the scope, for `applyScope`.
   */
  async pollServers(signal: AbortSignal = new AbortController().signal): Promise<WorkResult> {
    const listed = await abortable(listServers(this.#deps.client, signal), signal);
    this.#listed = listed;
    return this.#serially(() => this.#applyList(listed));
  }

  /**
   * Applies the scope in force to the latest server list again, without a request: a reload that changes the
   * scope calls it, so that a newly excluded server leaves the inventory (series, discovery, the remediation
   * target check) at once and a newly included one joins it. Nothing before the first list.
   */
  async applyScope(): Promise<void> {
    const listed = this.#listed;
    if (listed) await this.#serially(() => this.#applyList(listed));
  }

  /** Runs `fn` once the list applied before it is in the inventory. */
  #serially<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.#applying.then(fn);
    this.#applying = run.catch(() => undefined);
    return run;
  }

  /** The server list `listed` (as the API gave it) made the inventory, through the scope in force. */
  async #applyList(listed: ServerList): Promise<WorkResult> {
    const { metrics, graphStore } = this.#deps;
    // Out-of-scope servers are dropped before anything sees them: no series, no per-server request.
    const scope = this.#deps.config.scope;
    const list = scope ? { ...listed, servers: listed.servers.filter((server) => inScope(scope, server)) } : listed;
    const kept = new Set(list.servers);
    this.#outOfScope = new Set(listed.servers.filter((s) => !kept.has(s)).map((s) => s.serverId));
    const { inventory, removed } = await collectServerList(list, this.inventory, metrics);
    const first = !this.serversKnown;
    this.inventory = inventory;
    this.serversKnown = true;
    for (const serverId of removed) {
      removeFirewallService(this.firewallState, metrics, { serviceType: 'dedicated', serviceId: serverId });
      for (const graph of graphStore.list().filter((g) => g.serverId === serverId)) this.#removeGraphSeries(graph);
      await graphStore.removeServer(serverId);
    }
    if (first)
      for (const graph of await graphStore.retainServers(new Set(inventory.keys()))) this.#removeGraphSeries(graph);
    for (const serverId of removed) this.attacks.remove({ serviceType: 'dedicated', serviceId: serverId });
    this.#warnBudget();
    metrics.graphImages.set(graphStore.size);
    return { items: 1, failed: 0 };
  }

  #removeGraphSeries(graph: GraphKey): void {
    this.#deps.metrics.graphLastSuccess.remove({ server_id: graph.serverId, graph: graph.type, scale: graph.scale });
  }

  /**
   * `firewall` job: hour-scale history of its services (every one, or the quiet ones when the services under
   * attack have their own job, `firewall_under_attack`); each fails (or is cancelled) alone. A run polls the
   * next round-robin slice that fits in its period at the request budget.
   */
  async pollFirewall(
    signal: AbortSignal = new AbortController().signal,
    job: 'firewall' | 'firewall_under_attack' = 'firewall',
  ): Promise<WorkResult> {
    const { client, metrics, logger, config } = this.#deps;
    if (config.collectors?.firewall === false) return this.#firewallOff();
    const round = this.#rounds[job];
    const services = this.servicesOf(job);
    const slice = round.next(services, this.firewallCapacity(job));
    this.#noteUnread(this.services());
    // The services whose request left for the API: cut at the deadline, only those are slow replies.
    const sent = new Set<ServiceRef>();
    const fetchOne = async (ref: ServiceRef) => {
      const onSent = () => sent.add(ref);
      const events = await getFirewallHistory(client, ref.serviceType, ref.serviceId, 'hour', undefined, {
        signal,
        onSent,
      });
      // A reply that arrives after the run was cancelled is not applied: the run has already ended.
      signal.throwIfAborted();
      // The server may have been removed while this request was in flight.
      if (ref.serviceType === 'dedicated' && !this.inventory.has(ref.serviceId)) return;
      const knownIps = ref.serviceType === 'dedicated' ? (this.inventory.get(ref.serviceId)?.ips ?? []) : [];
      collectFirewallHistory(this.firewallState, metrics, ref, events, {
        limits: config.firewall,
        now: this.#now(),
        knownIps,
      });
      this.attacks.record(ref, events, this.#now());
      round.covered(ref);
    };
    const result = await each(slice, client.concurrency, signal, fetchOne, (ref, error) => {
      // As on success: a server the server list dropped while this request was in flight gets no series back.
      if (ref.serviceType === 'dedicated' && !this.inventory.has(ref.serviceId)) return;
      const fields = { service_type: ref.serviceType, service_id: ref.serviceId };
      if (signal.aborted) {
        // Cut at the deadline: a reply that drips or hangs goes to the back of the round-robin, so that it
        // never heads every run; a request still queued for a token or a slot was not slow, was not read,
        // and heads the next run like the items never started.
        round.cancelled(ref, sent.has(ref));
        if (!sent.has(ref)) return;
        collectFirewallFailure(this.firewallState, metrics, ref);
        logger.warn(fields, 'firewall history poll cancelled');
      } else {
        collectFirewallFailure(this.firewallState, metrics, ref);
        round.covered(ref);
        logger.warn({ ...fields, err: error }, 'firewall history poll failed');
      }
    });
    metrics.pollItemsPending.set({ poll: job }, round.pending(services));
    metrics.firewallOldestReadAge.set((this.oldestRead()?.ageMs ?? 0) / 1000);
    await this.#saveLedger(this.services());
    return result;
  }

  /** Notes, at a run's start, since when each service in scope that this process has not read yet is waiting. */
  #noteUnread(services: ServiceRef[]): void {
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
    if (this.#deps.config.collectors?.firewall === false) return undefined;
    let oldest: { ref: ServiceRef; at: number; read: boolean } | undefined;
    for (const ref of this.services()) {
      const readAt = historyReadAt(this.firewallState, ref);
      const at = readAt ?? this.#unreadSince.get(FirewallSeriesState.key(ref)) ?? now;
      if (!oldest || at < oldest.at) oldest = { ref, at, read: readAt !== undefined };
    }
    return oldest && { ref: oldest.ref, ageMs: Math.max(0, now - oldest.at), read: oldest.read };
  }

  /** `collectors.firewall: false`: no request; the firewall series there were (before a reload) are removed. */
  #firewallOff(): WorkResult {
    this.#deps.metrics.firewallOldestReadAge.remove({});
    for (const key of [...this.firewallState.services.keys()]) {
      const [serviceType, ...id] = key.split('/');
      removeFirewallService(this.firewallState, this.#deps.metrics, {
        serviceType: serviceType as ServiceRef['serviceType'],
        serviceId: id.join('/'),
      });
    }
    return { items: 0, failed: 0 };
  }

  /**
   * Persists the event ids of the latest histories, plus those restored for services still polled but not
   * yet read by this process. A write that fails is logged: the counts are right until the next restart.
   */
  async #saveLedger(services: ServiceRef[]): Promise<void> {
    const { ledger, logger } = this.#deps;
    if (!ledger) return;
    const current = new Set(services.map((ref) => FirewallSeriesState.key(ref)));
    for (const key of this.firewallState.restored.keys())
      if (!current.has(key)) this.firewallState.restored.delete(key);
    const ids = new Map<string, ReadonlySet<string>>(this.firewallState.restored);
    for (const [key, series] of this.firewallState.services) ids.set(key, series.seenIds);
    // Most runs see the histories they saw before: no JSON of every id on the event loop, no file write.
    if (this.#savedIds && sameIds(ids, this.#savedIds)) return;
    try {
      await ledger.save(ids);
      this.#savedIds = ids;
    } catch (error) {
      logger.warn(
        { err: error },
        'cannot write the attack event ids to the state directory: after a restart, events still reported count again',
      );
    }
  }

  /** `graphs` job: the configured types × scales for every server; a corrupt image fails only itself. */
  async pollGraphs(signal: AbortSignal = new AbortController().signal): Promise<WorkResult> {
    const { client, metrics, logger, graphStore, config } = this.#deps;
    if (config.collectors?.graphs === false) {
      await this.#graphsOff();
      return { items: 0, failed: 0 };
    }
    const keys = [...this.inventory.keys()].flatMap((serverId) =>
      config.graphs.types.flatMap((type) => config.graphs.scales.map((scale) => ({ serverId, type, scale }))),
    );
    const fetchOne = async (key: GraphKey) => {
      const image = await checkImage(await getGraph(client, key.serverId, key.type, key.scale, signal));
      signal.throwIfAborted();
      if (!this.inventory.has(key.serverId)) return;
      const stored = await graphStore.put(key, image, this.#now());
      metrics.graphLastSuccess.set(
        { server_id: key.serverId, graph: key.type, scale: key.scale },
        stored.updatedAt / 1000,
      );
    };
    const result = await each(keys, client.concurrency, signal, fetchOne, (key, error) => {
      const fields = { server_id: key.serverId, graph: key.type, scale: key.scale };
      if (signal.aborted) logger.warn(fields, 'graph poll cancelled');
      else logger.warn({ ...fields, err: error }, 'graph poll failed');
    });
    metrics.graphImages.set(graphStore.size);
    return result;
  }

  /**
   * `collectors.graphs: false`: no request; the graph series there were (before a reload) are removed and the
   * held images dropped (memory, disk, the shared copy), so `/graphs` stops serving them.
   */
  async #graphsOff(): Promise<void> {
    const { graphStore, metrics } = this.#deps;
    for (const graph of await graphStore.retainServers(new Set())) this.#removeGraphSeries(graph);
    metrics.graphImages.set(graphStore.size);
  }

  /** `collectors.catalog: false`: no request; the catalog series are removed. */
  #catalogOff(): void {
    this.#deps.metrics.catalogOperatingSystems.remove({});
    this.#deps.metrics.catalogLocations.remove({});
  }

  /**
   * Applies the collectors switched off, at once (a reload): their series are removed and, for graphs, the
   * held images dropped, without waiting for the job's next run.
   */
  async dropSwitchedOff(): Promise<void> {
    const collectors = this.#deps.config.collectors;
    if (collectors?.firewall === false) this.#firewallOff();
    if (collectors?.graphs === false) await this.#graphsOff();
    if (collectors?.catalog === false) this.#catalogOff();
  }

  /** `catalog` job: OS list and locations (rarely changes). */
  async pollCatalog(signal: AbortSignal = new AbortController().signal): Promise<WorkResult> {
    const { client, metrics, logger, config } = this.#deps;
    if (config.collectors?.catalog === false) {
      this.#catalogOff();
      return { items: 0, failed: 0 };
    }
    const tasks: Array<() => Promise<void>> = [
      async () => {
        const systems = await listOperatingSystems(client, signal);
        signal.throwIfAborted();
        metrics.catalogOperatingSystems.set(systems.length);
      },
      async () => {
        const locations = await listLocations(client, signal);
        signal.throwIfAborted();
        metrics.catalogLocations.set(locations.length);
      },
    ];
    return each(
      tasks,
      tasks.length,
      signal,
      (task) => task(),
      (_task, error) => {
        if (signal.aborted) logger.warn('catalog poll cancelled');
        else logger.warn({ err: error }, 'catalog poll failed');
      },
    );
  }
}

/** The same services with the same event ids (a set compared by content only when it is another object). */
function sameIds(a: ReadonlyMap<string, ReadonlySet<string>>, b: ReadonlyMap<string, ReadonlySet<string>>): boolean {
  if (a.size !== b.size) return false;
  for (const [key, ids] of a) {
    const before = b.get(key);
    if (before === ids) continue;
    if (!before || before.size !== ids.size) return false;
    for (const id of ids) if (!before.has(id)) return false;
  }
  return true;
}
