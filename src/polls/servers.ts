/**
 * `servers` poll: the server list; series of servers that disappeared are removed. The first list also
 * retires the images of servers deleted while the daemon was down (loaded from disk at start). The list is
 * kept as the API gave it, before the scope, for `applyScope`.
 */
import { removeFirewallService } from '../collectors/firewall.js';
import { collectServerList } from '../collectors/inventory.js';
import { DEFAULT_SCHEDULES } from '../config/schema.js';
import { inScope } from '../config/scope.js';
import type { ServerList } from '../upstream/decode-servers.js';
import { listServers } from '../upstream/dedicated.js';
import { warnBudget } from './firewall.js';
import { removeGraphSeries } from './graphs.js';
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
  const { inventory, removed } = await collectServerList(list, state.inventory, metrics);
  const first = !state.serversKnown;
  state.inventory = inventory;
  state.serversKnown = true;
  for (const serverId of removed) {
    removeFirewallService(state.firewallState, metrics, { serviceType: 'dedicated', serviceId: serverId });
    for (const graph of graphStore.list().filter((g) => g.serverId === serverId)) removeGraphSeries(context, graph);
    await graphStore.removeServer(serverId);
  }
  if (first)
    for (const graph of await graphStore.retainServers(new Set(inventory.keys()))) removeGraphSeries(context, graph);
  for (const serverId of removed) state.attacks.remove({ serviceType: 'dedicated', serviceId: serverId });
  warnBudget(context);
  metrics.graphImages.set(graphStore.size);
  return { items: 1, failed: 0 };
}
