/**
 * Where `GET /api/v1/discovery` reads each account's servers: the leader's (or a SQLite daemon's) account
 * state — its inventory holds only in-scope servers (polls/servers.ts) — or, on an HA follower, the directory the
 * leader publishes (store/postgres/directory.ts), whose rows carry the same record fields.
 */
import type { Inventory } from '../collectors/inventory.js';
import type { DirectorySnapshot } from '../store/postgres/directory.js';
import type { DiscoveryServer, DiscoverySource } from './routes/discovery.js';

/** What discovery reads of an account's state (collectors/account-state.ts). */
export interface DiscoveryState {
  serversKnown: boolean;
  inventory: Inventory;
}

/**
 * The source: per account, the state's servers while this replica leads and has read a list (or has no
 * replicas), else the snapshot of the shared directory (`directory(account)`); undefined until a first server
 * list is known.
 * A published server without record fields (an older leader) is left out: it has no main IP to target.
 */
export function discoverySource(
  states: ReadonlyMap<string, DiscoveryState>,
  replicas?: { leads: (account: string) => boolean; directory: (account: string) => DirectorySnapshot },
): DiscoverySource {
  return () => {
    const out = new Map<string, readonly DiscoveryServer[] | undefined>();
    for (const [account, state] of states) {
      const leading = replicas?.leads(account) ?? true;
      // A new leader answers from the directory until its own first list (as its remediation guards do).
      if (!replicas || (leading && state.serversKnown)) {
        out.set(account, state.serversKnown ? [...state.inventory.values()] : undefined);
        continue;
      }
      const snapshot = replicas.directory(account);
      if (!snapshot.serversKnown) {
        out.set(account, undefined);
        continue;
      }
      const servers: DiscoveryServer[] = [];
      for (const [serverId, ips] of snapshot.servers) {
        const details = snapshot.details(serverId);
        if (details) servers.push({ serverId, ...details, ips: [...ips] });
      }
      out.set(account, servers);
    }
    return out;
  };
}
