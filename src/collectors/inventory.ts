/**
 * The server-list collector: a decoded server list and the previous inventory in; it updates the server
 * series of the registry and returns the new inventory, and does no I/O. Servers that disappeared are reported so that their firewall and graph
 * series are removed too, never left stale.
 */
import type { Metrics } from '../metrics/definitions.js';
import type { ServerList, ServerRecord } from '../upstream/decode.js';

/** The latest server list, keyed by server id. */
export type Inventory = Map<string, ServerRecord>;

function infoLabels(server: ServerRecord) {
  return {
    server_id: server.serverId,
    hostname: server.hostname,
    ip: server.ip,
    os: server.os,
    processor: server.processor,
    memory: server.memory,
    location: server.location,
    status: server.status,
  };
}

/**
 * Applies a server list to the metrics. Returns the new inventory and the ids of servers that were in
 * `previous` but are gone now.
 */
export function collectServerList(
  list: ServerList,
  previous: Inventory,
  metrics: Metrics,
): { inventory: Inventory; removed: string[] } {
  const inventory: Inventory = new Map(list.servers.map((s) => [s.serverId, s]));
  const removed: string[] = [];
  for (const [id, old] of previous) {
    if (!inventory.has(id)) {
      metrics.serverInfo.remove(infoLabels(old));
      metrics.serverIps.remove({ server_id: id });
      removed.push(id);
    }
  }
  // Only new or changed servers touch prom-client: at 10,000 servers an unchanged list costs no label hashing.
  for (const server of list.servers) {
    const old = previous.get(server.serverId);
    const labels = infoLabels(server);
    if (old && sameLabels(infoLabels(old), labels) && old.ips.length === server.ips.length) continue;
    if (old) metrics.serverInfo.remove(infoLabels(old));
    metrics.serverInfo.set(labels, 1);
    metrics.serverIps.set({ server_id: server.serverId }, server.ips.length);
  }
  metrics.servers.set(list.servers.length);
  metrics.serverRecordsSkipped.set(list.skipped);
  return { inventory, removed };
}

function sameLabels(a: ReturnType<typeof infoLabels>, b: ReturnType<typeof infoLabels>): boolean {
  return (Object.keys(a) as Array<keyof typeof a>).every((k) => a[k] === b[k]);
}
