/**
 * The server-list collector: a decoded server list and the previous inventory in, the new inventory out (the
 * server series are rendered from it); no I/O. Servers that disappeared are reported so that their firewall
 * state and graph images are dropped too.
 */
import type { Metrics } from '../metrics/definitions.js';
import type { ServerList, ServerRecord } from '../upstream/decode-servers.js';

/** The latest server list, keyed by server id. */
export type Inventory = Map<string, ServerRecord>;

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

/** The fields of a record its series show (`baremetal_server_*`), besides the number of its IPs. */
const SHOWN = [
  'serverId',
  'hostname',
  'ip',
  'os',
  'processor',
  'memory',
  'location',
  'status',
  'cancellation',
] as const;

/** The list gives the same series as `previous`: the same servers in the same order, with the same shown fields. */
function sameSeries(previous: Inventory, servers: readonly ServerRecord[]): boolean {
  if (previous.size !== servers.length) return false;
  let i = 0;
  for (const old of previous.values()) {
    const server = servers[i++]!;
    for (const field of SHOWN) if (old[field] !== server[field]) return false;
    if (old.ips.length !== server.ips.length) return false;
  }
  return true;
}

/**
 * Makes the inventory of a server list (in the list's order: the exposition's) and sets the list's gauges of
 * `account`.
 * Returns the new inventory and the ids of servers that were in `previous` but are gone now. The server series
 * are rendered from the inventory (collectors/families.ts), which reuses their bytes while it is the same Map:
 * a list whose series would be the same as `previous`'s (most of them) updates `previous` in place, with the
 * new records, and returns it.
 */
export function collectServerList(
  list: ServerList,
  previous: Inventory,
  { account, metrics }: { account: string; metrics: Pick<Metrics, 'servers' | 'serverRecordsSkipped'> },
): { inventory: Inventory; removed: string[] } {
  metrics.servers.set({ account }, list.servers.length);
  metrics.serverRecordsSkipped.set({ account }, list.skipped);
  if (sameSeries(previous, list.servers)) {
    for (const server of list.servers) previous.set(server.serverId, server);
    return { inventory: previous, removed: [] };
  }
  const inventory: Inventory = new Map();
  for (const server of list.servers) inventory.set(server.serverId, server);
  const removed: string[] = [];
  for (const id of previous.keys()) if (!inventory.has(id)) removed.push(id);
  return { inventory, removed };
}
