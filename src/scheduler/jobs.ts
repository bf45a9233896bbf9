/**
 * The work of each poll job: fetch through the upstream modules, hand the data to the pure collectors,
 * keep the latest inventory. One failing server, service or image fails only itself.
 */
import type { Logger } from 'pino';
import { collectFirewallFailure, collectFirewallHistory, FirewallSeriesState, removeFirewallService, type ServiceRef } from '../collectors/firewall.js';
import { collectServerList, type Inventory } from '../collectors/inventory.js';
import type { Config, JobName } from '../config/schema.js';
import { checkImage } from '../graphs/image.js';
import type { GraphStore } from '../graphs/store.js';
import type { Metrics } from '../metrics/definitions.js';
import type { TargetDirectory } from '../remediation/engine.js';
import type { UpstreamClient } from '../upstream/client.js';
import { getGraph, listOperatingSystems, listServers } from '../upstream/dedicated.js';
import { getFirewallHistory } from '../upstream/firewall.js';
import { listLocations } from '../upstream/reseller.js';
import { PollJob, type RunOutcome, type WorkResult } from './poll-job.js';

export interface PollerDeps {
  client: UpstreamClient;
  metrics: Metrics;
  logger: Logger;
  graphStore: GraphStore;
  config: Pick<Config, 'graphs' | 'services'>;
  /** milliseconds since the epoch */
  now?: () => number;
  onFinished?: (job: JobName, outcome: RunOutcome) => void;
}

/**
 * Runs `fn` over `items` with `width` workers pulling from one cursor; counts failures. A worker pool
 * rather than one promise per item: 10,000 servers would otherwise hold 10,000 pending closures (and
 * their garbage) while the client's shared limit lets only a few through.
 */
async function each<T>(items: readonly T[], width: number, fn: (item: T) => Promise<void>): Promise<WorkResult> {
  let cursor = 0;
  let failed = 0;
  const worker = async () => {
    while (cursor < items.length) {
      const item = items[cursor++]!;
      await fn(item).catch(() => failed++);
    }
  };
  await Promise.all(Array.from({ length: Math.min(width, items.length) }, worker));
  return { items: items.length, failed };
}

/** Holds the latest inventory and builds the four poll jobs; answers the remediation guards' questions. */
export class Poller implements TargetDirectory {
  inventory: Inventory = new Map();
  /** true once a server list has been read */
  serversKnown = false;
  readonly firewallState = new FirewallSeriesState();
  readonly jobs: Map<JobName, PollJob>;
  readonly #deps: PollerDeps;
  readonly #now: () => number;

  constructor(deps: PollerDeps) {
    this.#deps = deps;
    this.#now = deps.now ?? Date.now;
    const work: Record<JobName, () => Promise<WorkResult>> = {
      servers: () => this.pollServers(),
      firewall: () => this.pollFirewall(),
      graphs: () => this.pollGraphs(),
      catalog: () => this.pollCatalog(),
    };
    this.jobs = new Map(
      (Object.keys(work) as JobName[]).map((name) => [
        name,
        new PollJob({
          name,
          work: work[name],
          metrics: deps.metrics,
          logger: deps.logger,
          now: this.#now,
          onFinished: (outcome) => deps.onFinished?.(name, outcome),
        }),
      ]),
    );
  }

  hasServer(serverId: string): boolean {
    return this.inventory.has(serverId);
  }

  /** The IP is in the server's record or was seen in its firewall history. */
  ownsIp(serverId: string, ip: string): boolean {
    if (this.inventory.get(serverId)?.ips.includes(ip)) return true;
    return this.firewallState.services.get(FirewallSeriesState.key({ serviceType: 'dedicated', serviceId: serverId }))?.counts.has(ip) ?? false;
  }

  /** Runs one job now (through its overlap guard). */
  run(job: JobName): Promise<RunOutcome> {
    return this.jobs.get(job)!.run();
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

  /** `servers` job: the server list; series of servers that disappeared are removed. */
  async pollServers(): Promise<WorkResult> {
    const { client, metrics, graphStore } = this.#deps;
    const list = await listServers(client);
    const { inventory, removed } = collectServerList(list, this.inventory, metrics);
    this.inventory = inventory;
    this.serversKnown = true;
    for (const serverId of removed) {
      removeFirewallService(this.firewallState, metrics, { serviceType: 'dedicated', serviceId: serverId });
      for (const graph of graphStore.list().filter((g) => g.serverId === serverId)) {
        metrics.graphLastSuccess.remove({ server_id: serverId, graph: graph.type, scale: graph.scale });
      }
      await graphStore.removeServer(serverId);
    }
    metrics.graphImages.set(graphStore.size);
    return { items: 1, failed: 0 };
  }

  /** `firewall` job: hour-scale history of every service; each fails alone. */
  async pollFirewall(): Promise<WorkResult> {
    const { client, metrics, logger } = this.#deps;
    return each(this.services(), client.concurrency, async (ref) => {
      try {
        const events = await getFirewallHistory(client, ref.serviceType, ref.serviceId, 'hour');
        // The server may have been removed while this request was in flight.
        if (ref.serviceType === 'dedicated' && !this.inventory.has(ref.serviceId)) return;
        const knownIps = ref.serviceType === 'dedicated' ? this.inventory.get(ref.serviceId)?.ips : [];
        collectFirewallHistory(this.firewallState, metrics, ref, events, knownIps);
      } catch (error) {
        collectFirewallFailure(this.firewallState, metrics, ref);
        logger.warn({ service_type: ref.serviceType, service_id: ref.serviceId, err: error }, 'firewall history poll failed');
        throw error;
      }
    });
  }

  /** `graphs` job: the configured types × scales for every server; a corrupt image fails only itself. */
  async pollGraphs(): Promise<WorkResult> {
    const { client, metrics, logger, graphStore, config } = this.#deps;
    const keys = [...this.inventory.keys()].flatMap((serverId) =>
      config.graphs.types.flatMap((type) => config.graphs.scales.map((scale) => ({ serverId, type, scale }))),
    );
    const result = await each(keys, client.concurrency, async (key) => {
      try {
        const image = await checkImage(await getGraph(client, key.serverId, key.type, key.scale));
        if (!this.inventory.has(key.serverId)) return;
        const stored = await graphStore.put(key, image, this.#now());
        metrics.graphLastSuccess.set({ server_id: key.serverId, graph: key.type, scale: key.scale }, stored.updatedAt / 1000);
      } catch (error) {
        logger.warn({ server_id: key.serverId, graph: key.type, scale: key.scale, err: error }, 'graph poll failed');
        throw error;
      }
    });
    metrics.graphImages.set(graphStore.size);
    return result;
  }

  /** `catalog` job: OS list and locations (rarely changes). */
  async pollCatalog(): Promise<WorkResult> {
    const { client, metrics, logger } = this.#deps;
    const tasks: Array<() => Promise<void>> = [
      async () => metrics.catalogOperatingSystems.set((await listOperatingSystems(client)).length),
      async () => metrics.catalogLocations.set((await listLocations(client)).length),
    ];
    return each(tasks, tasks.length, async (task) => {
      try {
        await task();
      } catch (error) {
        logger.warn({ err: error }, 'catalog poll failed');
        throw error;
      }
    });
  }
}
