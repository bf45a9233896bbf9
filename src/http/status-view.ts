/**
 * Builds the status page's view from the daemon's live state (each account's state, poll jobs and metrics; the journal;
 * the graph images `/graphs` serves). Polls, servers and services are listed per account, in config order. A
 * follower (replicas sharing PostgreSQL) does not poll: it lists the servers of the directory the leader
 * publishes, the same one its remediation guards check targets against.
 */
import type { AccountState } from '../collectors/account-state.js';
import { FirewallSeriesState, type ServiceRef } from '../collectors/firewall.js';
import type { GraphSource } from '../graphs/source.js';
import type { Metrics } from '../metrics/definitions.js';
import type { StateStore } from '../store/store.js';
import { listWithin } from './principals.js';
import type { StatusView } from './routes/status-page.js';

/** What the page reads of one account. */
export interface StatusAccount {
  state: AccountState;
  /** the account's poll jobs (the scheduler's `PollJob`s), as the page reads them */
  polls: { jobs: ReadonlyMap<string, StatusPollJob> };
  metrics: Pick<Metrics, 'apiUp'>;
}

/** What the page reads of one poll job: its name, its last finished run and its last success (ms since epoch). */
export interface StatusPollJob {
  name: string;
  last: { outcome: string; finishedAt: number; durationMs: number } | undefined;
  lastSuccessAt: number | undefined;
}

/** The server list a follower shows: the published directory of an account (server id → its IPs, and its record's fields). */
export interface PublishedServers {
  servers(account: string): ReadonlyMap<string, ReadonlySet<string>>;
  /** hostname, location and status as published; undefined when an older leader published only the IPs */
  details(account: string, serverId: string): { hostname: string; location: string; status: string } | undefined;
}

export interface StatusSources {
  version: string;
  accounts: ReadonlyMap<string, StatusAccount>;
  store: StateStore;
  /** the images `/graphs` serves: each account's store, or the shared database */
  graphs: GraphSource;
  /** with replicas: whether this one leads, and the directory a follower lists instead of its idle polls */
  replicas?: { leading: () => boolean; directory: PublishedServers };
  now: () => number;
  /** thumbnails shown at most */
  maxGraphs?: number;
  /** remediation.approval_timeout (ms): a waiting request's deadline; without it none is shown */
  approvalTimeoutMs?: number;
}

/** The requests awaiting approval and the open breakers of every account: listed behind web.auth, counted to anyone. */
async function pendingWork(
  s: StatusSources,
): Promise<{ awaiting: NonNullable<StatusView['awaiting']>; openBreakers: NonNullable<StatusView['openBreakers']> }> {
  const awaiting: NonNullable<StatusView['awaiting']> = [];
  const openBreakers: NonNullable<StatusView['openBreakers']> = [];
  for (const account of s.accounts.keys()) {
    for (const row of await s.store.awaitingApproval(account))
      awaiting.push({
        id: row.id,
        account,
        serverId: row.serverId,
        ip: row.ip,
        action: row.action,
        principal: row.principal,
        rule:
          row.alertname === null
            ? null
            : `${row.alertname}${row.ruleIndex === null ? '' : ` (rules[${row.ruleIndex}])`}`,
        reason: row.reason,
        deadline: s.approvalTimeoutMs === undefined ? undefined : row.createdAt + s.approvalTimeoutMs,
      });
    const circuit = await s.store.circuit(account);
    if (circuit.openedAt !== null) openBreakers.push({ account, openedAt: circuit.openedAt, message: circuit.message });
  }
  return { awaiting: awaiting.sort((a, b) => a.id - b.id), openBreakers };
}

/**
 * What the page shows of remediation: `actions: false` (an open page, or web.auth's own credential) leaves the
 * journal's rows out: only the requests awaiting approval and the breakers are read, to be counted. `accounts`:
 * the viewer's (a principal's `accounts`); its details (decisions, requests awaiting approval, open breakers) are
 * of those accounts only, its counts of every account as anyone sees them; absent: every account.
 */
export interface StatusViewOptions {
  actions: boolean;
  accounts?: readonly string[];
}

export function statusViewOf(s: StatusSources): (options: StatusViewOptions) => Promise<StatusView> {
  return async (options) => {
    const runtimes = [...s.accounts];
    // The registry's apiUp holds every account's series: the page shows the worst.
    const ups = runtimes.length ? (await runtimes[0]![1].metrics.apiUp.get()).values.map((v) => v.value) : [];
    const apiUp = ups.length ? Math.min(...ups) : undefined;
    const ipsOf = (state: AccountState, ref: ServiceRef, known: string[] = []) => {
      const counts =
        state.firewallState.services.get(FirewallSeriesState.key(ref))?.counts ?? new Map<string, number>();
      const newest = state.attacks.newestPerIp(ref);
      const ips = new Set([...known, ...counts.keys()]);
      return [...ips].map((ip) => {
        const event = newest.get(ip);
        return { ip, events: counts.get(ip) ?? 0, ...(event ? { newest: { raw: event.raw, time: event.time } } : {}) };
      });
    };
    const following = s.replicas !== undefined && !s.replicas.leading();
    // What the leader published: ids and IPs (the rest of a record stays with the leader).
    const publishedServers = (account: string): StatusView['servers'] =>
      [...(s.replicas?.directory.servers(account) ?? [])].map(([serverId, ips]) => ({
        account,
        serverId,
        // Empty when an older leader published only the IPs.
        hostname: s.replicas?.directory.details(account, serverId)?.hostname ?? '',
        location: s.replicas?.directory.details(account, serverId)?.location ?? '',
        status: s.replicas?.directory.details(account, serverId)?.status ?? '',
        ips: [...ips].map((ip) => ({ ip, events: 0 })),
      }));
    let actions: StatusView['actions'];
    let pending: Awaited<ReturnType<typeof pendingWork>> | undefined;
    try {
      pending = await pendingWork(s);
      if (options.actions) actions = await listWithin(s.store, { limit: 10 }, options.accounts);
    } catch {
      // The page still shows the rest when the journal is unavailable (/readyz says so).
      if (options.actions) actions ??= [];
    }
    const pendingCounts = pending && {
      awaiting: pending.awaiting.length,
      openBreakers: pending.openBreakers.length,
    };
    const viewable = (account: string) => options.accounts === undefined || options.accounts.includes(account);
    const details = pending && {
      awaiting: pending.awaiting.filter((a) => viewable(a.account)),
      openBreakers: pending.openBreakers.filter((b) => viewable(b.account)),
    };
    return {
      version: s.version,
      apiUp,
      polls: runtimes
        .flatMap(([account, { polls }]) => [...polls.jobs.values()].map((job) => ({ account, job })))
        .map(({ account, job }) => ({
          account,
          poll: job.name,
          outcome: job.last?.outcome,
          finishedAt: job.last?.finishedAt,
          lastSuccessAt: job.lastSuccessAt,
          durationMs: job.last?.durationMs,
        })),
      // A follower does not poll: it has no coverage of its own to show.
      coverage: following
        ? []
        : runtimes.flatMap(([account, { state }]) => {
            const oldest = state.oldestRead();
            return oldest
              ? [
                  {
                    account,
                    serviceType: oldest.ref.serviceType,
                    serviceId: oldest.ref.serviceId,
                    ageMs: oldest.ageMs,
                    read: oldest.read,
                  },
                ]
              : [];
          }),
      servers: runtimes.flatMap(([account, { state }]) =>
        following
          ? publishedServers(account)
          : [...state.inventory.values()].map((server) => ({
              account,
              serverId: server.serverId,
              hostname: server.hostname,
              location: server.location,
              status: server.status,
              ips: ipsOf(state, { serviceType: 'dedicated', serviceId: server.serverId }, server.ips),
            })),
      ),
      services: runtimes.flatMap(([account, { state }]) =>
        state
          .services()
          .filter((ref) => ref.serviceType !== 'dedicated')
          .map((ref) => ({
            account,
            serviceType: ref.serviceType,
            serviceId: ref.serviceId,
            ips: ipsOf(state, ref).filter((i) => i.events > 0),
          })),
      ),
      graphs: (await s.graphs.list()).slice(0, s.maxGraphs ?? 24),
      actions,
      // The details only behind web.auth; the counts to anyone.
      ...(options.actions && details ? details : {}),
      ...(options.actions && options.accounts ? { detailsOf: options.accounts } : {}),
      ...(pendingCounts ? { pendingCounts } : {}),
      now: s.now(),
    };
  };
}
