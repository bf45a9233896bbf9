/**
 * What an `api` power write (cycle, on, off) checks before it is sent, against the state the daemon shares
 * (its journal): the account's circuit breaker and the server's cap, with the daemon's own checks
 * (remediation/guards.ts). The breaker is read, never opened: its limit depends on the servers in scope, which
 * only the daemon knows; a CLI power row counts toward the daemon's next breaker decision and toward the cap
 * like the daemon's own. Not checked here (docs/api-command.md says why): attack corroboration, scope,
 * cooldown, budget and approval.
 */
import type { RemediationSafety } from '../../config/types.js';
import { checkCap, checkCircuitOpen } from '../../remediation/guards.js';
import type { StateQueries } from '../../store/store.js';

/**
 * Why a power write on `serverId` of `account` must not be sent now (`now`, ms): the breaker is open, or the
 * server had `max_power_actions_per_server` power actions within `cap_window`; undefined when it may be sent.
 */
export async function powerRefusal(
  q: StateQueries,
  safety: RemediationSafety,
  account: string,
  serverId: string,
  now: number,
): Promise<string | undefined> {
  const denial = (await checkCircuitOpen(q, account)) ?? (await checkCap(q, { account, serverId }, safety, now));
  return denial?.message;
}
