/**
 * Which directory an engine checks targets against: with replicas sharing PostgreSQL, the leader's own account state
 * while it leads and has read a server list, else the list the leader published (store/postgres/directory.ts).
 */
import type { TargetDirectory } from './types.js';

/**
 * The engine's directory: the account's state while this replica leads and has read a server list, else the
 * snapshot. `ledSince()`: ms since epoch (the collector clock) this replica's current term of the account began
 * (undefined while it does not lead it, or leads it but the term has not begun yet); a history read before it is
 * no evidence (another replica led between). Leading with no start yet, every attack state is undecided.
 */
export function leaderOrSnapshot(
  state: TargetDirectory,
  snapshot: TargetDirectory,
  leading: () => boolean,
  ledSince?: () => number | undefined,
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
    // A follower's snapshot holds no attack data: its power requests wait (503, nothing journaled) and the
    // leader (which the webhook reaches too) decides; the retry of a delivery it decided is a duplicate.
    attackState: (serverId) => {
      const known = current().attackState?.(serverId) ?? {
        known: false,
        reason: leading()
          ? 'this replica leads the account but has not read its server list yet'
          : 'this replica does not lead the account: only its leader polls the firewall histories; the leader decides on the same delivery (send power calls to the leader, retry, or force them)',
        undecided: true,
      };
      const since = ledSince?.();
      // Leading, but this term has not begun yet (the lease was just claimed): nothing read is this term's.
      if (ledSince && since === undefined && leading())
        return {
          known: false,
          reason: 'this replica has just taken the account: its firewall history has not been read in this term yet',
          undecided: true,
        };
      if (!known.known && known.failedAt !== undefined && since !== undefined && known.failedAt < since)
        return {
          known: false,
          reason: 'its firewall history has not been polled since this replica took the account',
          undecided: true,
        };
      if (known.known && since !== undefined && known.readAt < since)
        return {
          known: false,
          reason: 'its firewall history has not been read since this replica took the account',
          undecided: true,
        };
      return known;
    },
  };
}
