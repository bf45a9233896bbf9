/**
 * The server-list collector: a decoded server list and the previous inventory in; it updates the server
 * series of the registry and returns the new inventory, and does no I/O (it yields to the event loop between
 * slices of a long list). Servers that disappeared are reported so that their firewall and graph
 * series are removed too, never left stale.
 */
import type { Metrics } from '../metrics/definitions.js';
import { CLOCK_EVERY, Slices } from '../slices.js';
import type { ServerList, ServerRecord } from '../upstream/decode-servers.js';

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

/** Bytes per unit of a memory size; RAM is sold in binary units, so the provider's "GB" is 2^30 bytes. */
const MEMORY_UNITS: Record<string, number> = {
  mb: 2 ** 20,
  mib: 2 ** 20,
  gb: 2 ** 30,
  gib: 2 ** 30,
  tb: 2 ** 40,
  tib: 2 ** 40,
};

/**
 * The server's memory in bytes, from its record's memory text: `"256 GB"`, `"256GB"`, `"0.5 TB"`, `"512 MiB"`,
 * or a bare number of GB (the unit the provider reports). Undefined for anything else (empty, `"n/a"`, `"-1 GB"`).
 */
export function memoryBytes(memory: string): number | undefined {
  const match = /^(\d{1,7}(?:\.\d{1,3})?)\s?([a-z]{2,3})?$/i.exec(memory.trim());
  if (!match) return undefined;
  const unit = MEMORY_UNITS[(match[2] ?? 'gb').toLowerCase()];
  return unit === undefined ? undefined : Math.round(Number(match[1]) * unit);
}

/** The fields that are labels of `baremetal_server_info`. */
const INFO_FIELDS = ['serverId', 'hostname', 'ip', 'os', 'processor', 'memory', 'location', 'status'] as const;

/** The server's series are as they were: same info labels, same number of IPs, same cancellation. */
function unchanged(old: ServerRecord, server: ServerRecord): boolean {
  for (const field of INFO_FIELDS) if (old[field] !== server[field]) return false;
  return old.ips.length === server.ips.length && old.cancellation === server.cancellation;
}

/** `baremetal_server_cancellation_scheduled` of a server: 1 with its type while one is scheduled, else none. */
function setCancellation(metrics: Metrics, server: ServerRecord, old: ServerRecord | undefined): void {
  if (old?.cancellation && old.cancellation !== server.cancellation)
    metrics.serverCancellation.remove({ server_id: old.serverId, cancellation_type: old.cancellation });
  if (server.cancellation)
    metrics.serverCancellation.set({ server_id: server.serverId, cancellation_type: server.cancellation }, 1);
}

/**
 * Applies a server list to the metrics, in slices with yields to the event loop (the first list of 50,000
 * servers sets 100,000 series). Returns the new inventory and the ids of servers that were in `previous`
 * but are gone now.
 */
export async function collectServerList(
  list: ServerList,
  previous: Inventory,
  metrics: Metrics,
): Promise<{ inventory: Inventory; removed: string[] }> {
  const slices = new Slices();
  const inventory: Inventory = new Map();
  for (const server of list.servers) inventory.set(server.serverId, server);
  const removed: string[] = [];
  for (const [id, old] of previous) {
    if (!inventory.has(id)) {
      metrics.serverInfo.remove(infoLabels(old));
      metrics.serverIps.remove({ server_id: id });
      metrics.serverMemory.remove({ server_id: id });
      if (old.cancellation) metrics.serverCancellation.remove({ server_id: id, cancellation_type: old.cancellation });
      removed.push(id);
    }
  }
  // Only new or changed servers touch prom-client: at 10,000 servers an unchanged list costs no label hashing.
  for (let i = 0; i < list.servers.length; i++) {
    const server = list.servers[i]!;
    const old = previous.get(server.serverId);
    if (old && unchanged(old, server)) continue;
    if (old) metrics.serverInfo.remove(infoLabels(old));
    metrics.serverInfo.set(infoLabels(server), 1);
    metrics.serverIps.set({ server_id: server.serverId }, server.ips.length);
    const bytes = memoryBytes(server.memory);
    if (bytes === undefined) metrics.serverMemory.remove({ server_id: server.serverId });
    else metrics.serverMemory.set({ server_id: server.serverId }, bytes);
    setCancellation(metrics, server, old);
    if (i % CLOCK_EVERY === CLOCK_EVERY - 1) await slices.next();
  }
  metrics.servers.set(list.servers.length);
  metrics.serverRecordsSkipped.set(list.skipped);
  return { inventory, removed };
}
