/**
 * Which IPs a server owns — the one rule the remediation guards check a target against, on the leader (its
 * account state, account-state.ts) and on the followers (the server directory the leader publishes, store/postgres/directory.ts): the IPs
 * of the server's record (per the API contract, §1 server list) and those seen in its own firewall history
 * (§4), which may name IPs added since the record was read. A server not in the latest list owns nothing.
 */
import { FirewallSeriesState } from './firewall.js';
import type { PublishedServers } from '../store/postgres/directory.js';
import type { Inventory } from './inventory.js';

/** The IPs `serverId` owns now; empty when the server is not in `inventory`. */
export function ownedIps(inventory: Inventory, firewall: FirewallSeriesState, serverId: string): Set<string> {
  const server = inventory.get(serverId);
  if (!server) return new Set();
  const seen = firewall.services.get(FirewallSeriesState.key({ serviceType: 'dedicated', serviceId: serverId }));
  return new Set([...server.ips, ...(seen?.counts.keys() ?? [])]);
}

/** What the leader publishes for the followers (store/postgres/directory.ts): each listed server's owned IPs and record fields. */
export function directoryServers(inventory: Inventory, firewall: FirewallSeriesState): PublishedServers {
  // Own properties whatever the id: `out[id] = …` with the id `__proto__` would set the prototype instead, and the
  // server would be missing from the list the followers check targets against.
  return Object.fromEntries(
    Array.from(inventory, ([serverId, server]) => [
      serverId,
      {
        ips: [...ownedIps(inventory, firewall, serverId)],
        ip: server.ip,
        hostname: server.hostname,
        location: server.location,
        status: server.status,
        cancellation: server.cancellation,
      },
    ]),
  );
}
