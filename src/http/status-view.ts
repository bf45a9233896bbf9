/** Builds the status page's view from the daemon's live state (poller, graph store, journal, metrics). */
import { FirewallSeriesState, type ServiceRef } from '../collectors/firewall.js';
import type { GraphStore } from '../graphs/store.js';
import type { Journal } from '../journal/journal.js';
import type { Metrics } from '../metrics/definitions.js';
import type { PollJobs } from '../scheduler/jobs.js';
import type { StatusView } from './routes/status-page.js';

export interface StatusSources {
  version: string;
  poller: PollJobs;
  graphStore: GraphStore;
  journal: Journal;
  metrics: Metrics;
  now: () => number;
  /** thumbnails shown at most */
  maxGraphs?: number;
}

/** `actions: false` (an open page) leaves the journal out: it is not even read. */
export function statusViewOf(s: StatusSources): (options: { actions: boolean }) => Promise<StatusView> {
  return async (options) => {
    const apiUp = (await s.metrics.apiUp.get()).values[0]?.value;
    const series = s.poller.firewallState.services;
    const ipsOf = (ref: ServiceRef, known: string[] = []) => {
      const counts = series.get(FirewallSeriesState.key(ref))?.counts ?? new Map<string, number>();
      const newest = s.poller.attacks.newestPerIp(ref);
      const ips = new Set([...known, ...counts.keys()]);
      return [...ips].map((ip) => {
        const event = newest.get(ip);
        return { ip, events: counts.get(ip) ?? 0, ...(event ? { newest: { raw: event.raw, time: event.time } } : {}) };
      });
    };
    let actions: StatusView['actions'];
    if (options.actions) {
      try {
        actions = s.journal.list({ limit: 10 });
      } catch {
        // The page still shows the rest when the journal is unavailable (/readyz says so).
        actions = [];
      }
    }
    return {
      version: s.version,
      apiUp,
      polls: [...s.poller.jobs.values()].map((job) => ({
        poll: job.name,
        outcome: job.last?.outcome,
        finishedAt: job.last?.finishedAt,
        lastSuccessAt: job.lastSuccessAt,
        durationMs: job.last?.durationMs,
      })),
      servers: [...s.poller.inventory.values()].map((server) => ({
        serverId: server.serverId,
        hostname: server.hostname,
        location: server.location,
        status: server.status,
        ips: ipsOf({ serviceType: 'dedicated', serviceId: server.serverId }, server.ips),
      })),
      services: s.poller
        .services()
        .filter((ref) => ref.serviceType !== 'dedicated')
        .map((ref) => ({ serviceType: ref.serviceType, serviceId: ref.serviceId, ips: ipsOf(ref).filter((i) => i.events > 0) })),
      graphs: s.graphStore.list().slice(0, s.maxGraphs ?? 24),
      actions,
      now: s.now(),
    };
  };
}
