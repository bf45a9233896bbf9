/**
 * Which directory an engine checks targets against: with replicas sharing PostgreSQL, the leader's own account state
 * while it leads and has read a server list, else the list the leader published (store/postgres/directory.ts).
 */
import type { TargetDirectory } from './types.js';

/** The engine's directory: the account's state while this replica leads and has read a server list, else the snapshot. */
export function leaderOrSnapshot(
  state: TargetDirectory,
  snapshot: TargetDirectory,
  leading: () => boolean,
): TargetDirectory {
  const current = () => (leading() && state.serversKnown ? state : snapshot);
  return {
    get serversKnown() {
      return current().serversKnown;
    },
    hasServer: (serverId) => current().hasServer(serverId),
    ownsIp: (serverId, ip) => current().ownsIp(serverId, ip),
    outOfScope: (serverId) => current().outOfScope?.(serverId) ?? false,
    serversInScope: () => current().serversInScope?.() ?? 0,
    // A follower's snapshot holds no attack data: its power requests are denied as unknown, unclaimed, and the
    // leader (which the webhook reaches too) decides.
    attackState: (serverId) =>
      current().attackState?.(serverId) ?? {
        known: false,
        reason:
          'this replica does not lead: only the leader polls the firewall histories; the leader decides on the same delivery (send power calls to the leader, or force them)',
      },
  };
}
