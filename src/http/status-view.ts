/**
 * Builds the status page's view from the daemon's live state (each account's poller, graph store and
 * metrics; the journal). Polls, servers and services are listed per account, in config order.
 */
import type { AccountRuntime } from '../accounts.js';
import { FirewallSeriesState, type ServiceRef } from '../collectors/firewall.js';
import type { StateStore } from '../journal/store.js';
import { listGraphs } from './routes/graphs.js';
import type { StatusView } from './routes/status-page.js';

export interface StatusSources {
  version: string;
  accounts: ReadonlyMap<string, Pick<AccountRuntime, 'poller' | 'graphStore' | 'metrics'>>;
  journal: StateStore;
  now: () => number;
  /** thumbnails shown at most */
  maxGraphs?: number;
}

/** `actions: false` (an open page) leaves the journal out: it is not even read. */
export function statusViewOf(s: StatusSources): (options: { actions: boolean }) => Promise<StatusView> {
  return async (options) => {
    const runtimes = [...s.accounts];
    // The registry's apiUp holds every account's series: the page shows the worst.
    const ups = runtimes.length ? (await runtimes[0]![1].metrics.apiUp.get()).values.map((v) => v.value) : [];
    const apiUp = ups.length ? Math.min(...ups) : undefined;
    const ipsOf = (poller: AccountRuntime['poller'], ref: ServiceRef, known: string[] = []) => {
      const counts =
        poller.firewallState.services.get(FirewallSeriesState.key(ref))?.counts ?? new Map<string, number>();
      const newest = poller.attacks.newestPerIp(ref);
      const ips = new Set([...known, ...counts.keys()]);
      return [...ips].map((ip) => {
        const event = newest.get(ip);
        return { ip, events: counts.get(ip) ?? 0, ...(event ? { newest: { raw: event.raw, time: event.time } } : {}) };
      });
    };
    let actions: StatusView['actions'];
    if (options.actions) {
      try {
        actions = await s.journal.list({ limit: 10 });
      } catch {
        // The page still shows the rest when the journal is unavailable (/readyz says so).
        actions = [];
      }
    }
    return {
      version: s.version,
      apiUp,
      polls: runtimes
        .flatMap(([account, { poller }]) => [...poller.jobs.values()].map((job) => ({ account, job })))
        .map(({ account, job }) => ({
          account,
          poll: job.name,
          outcome: job.last?.outcome,
          finishedAt: job.last?.finishedAt,
          lastSuccessAt: job.lastSuccessAt,
          durationMs: job.last?.durationMs,
        })),
      servers: runtimes.flatMap(([account, { poller }]) =>
        [...poller.inventory.values()].map((server) => ({
          account,
          serverId: server.serverId,
          hostname: server.hostname,
          location: server.location,
          status: server.status,
          ips: ipsOf(poller, { serviceType: 'dedicated', serviceId: server.serverId }, server.ips),
        })),
      ),
      services: runtimes.flatMap(([account, { poller }]) =>
        poller
          .services()
          .filter((ref) => ref.serviceType !== 'dedicated')
          .map((ref) => ({
            account,
            serviceType: ref.serviceType,
            serviceId: ref.serviceId,
            ips: ipsOf(poller, ref).filter((i) => i.events > 0),
          })),
      ),
      graphs: listGraphs(new Map(runtimes.map(([account, r]) => [account, r.graphStore]))).slice(0, s.maxGraphs ?? 24),
      actions,
      now: s.now(),
    };
  };
}
