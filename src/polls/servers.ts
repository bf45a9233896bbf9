/**
 * `servers` poll: the server list becomes the inventory; what the state held of servers that disappeared (their
 * firewall state, attack log, graph images) is dropped, and with it their series. The first list also retires
 * the images of servers deleted while the daemon was down (loaded from disk at start). The list is kept as the
 * API gave it, before the scope, for `applyScope`.
 */
import { removeFirewallService } from '../collectors/firewall.js';
import { collectServerList } from '../collectors/inventory.js';
import { DEFAULT_SCHEDULES } from '../config/schema.js';
import { inScope } from '../config/scope.js';
import type { ServerList } from '../upstream/decode-servers.js';
import { listServers } from '../upstream/dedicated.js';
import { warnBudget } from './firewall.js';
import { abortable, type PollContext, type PollDefinition, type WorkResult } from './poll.js';

export const serversPoll = {
  name: 'servers',
  defaultSchedule: DEFAULT_SCHEDULES.servers,
  async run(context, signal) {
    const listed = await abortable(listServers(context.client, signal), signal);
    context.state.listed = listed;
    return context.state.serially(() => applyList(context, listed));
  },
} satisfies PollDefinition;

/**
 * Applies the scope in force to the latest server list again, without a request: a reload that changes the
 * scope calls it, so that a newly excluded server leaves the inventory (series, discovery, the remediation
 * target check) at once and a newly included one joins it. Nothing before the first list.
 */
export async function applyScope(context: PollContext): Promise<void> {
  const listed = context.state.listed;
  if (listed) await context.state.serially(() => applyList(context, listed));
}

/** The server list `listed` (as the API gave it) made the inventory, through the scope in force. */
async function applyList(context: PollContext, listed: ServerList): Promise<WorkResult> {
  const { metrics, graphStore, state } = context;
  // Out-of-scope servers are dropped before anything sees them: no series, no per-server request.
  const scope = context.config.scope;
  const list = scope ? { ...listed, servers: listed.servers.filter((server) => inScope(scope, server)) } : listed;
  const kept = new Set(list.servers);
  state.outOfScopeIds = new Set(listed.servers.filter((s) => !kept.has(s)).map((s) => s.serverId));
  const { inventory, removed } = collectServerList(list, state.inventory, context);
  const first = !state.serversKnown;
  state.inventory = inventory;
  state.serversKnown = true;
  for (const serverId of removed) {
    removeFirewallService(state.firewallState, { serviceType: 'dedicated', serviceId: serverId });
    state.attacks.remove({ serviceType: 'dedicated', serviceId: serverId });
    await graphStore.removeServer(serverId);
  }
  if (first) await graphStore.retainServers(new Set(inventory.keys()));
  warnBudget(context);
  metrics.graphImages.set({ account: context.account }, graphStore.size);
  return { items: 1, failed: 0 };
}
