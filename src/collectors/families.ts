/**
 * The series of every family the daemon exposes from polled data, as functions of the accounts' state: what
 * a Go exporter's `Collect` is. Each family (declared in metrics/definitions.ts as a StateFamily: name, help,
 * type, labels) has one entry in FAMILIES: what it reads (`version`: values that change when that does) and
 * the samples it emits from one account's state at rendering time (`collect`). The polls change the state only;
 * a server, IP, service or image gone from the state, a poll switched off, an account this replica does not
 * render (metrics/exposition-cache.ts `accountSeries`) has no series, and nothing removes one.
 */
import type { HeldGraph } from '../graphs/store.js';
import type { Metrics, StateFamilyKey } from '../metrics/definitions.js';
import type { Emit, FamilySource, KeepAccount } from '../metrics/state-family.js';
import type { AccountState } from './account-state.js';
import type { ServerRecord } from '../upstream/decode-servers.js';
import { type FirewallSeriesState, type ServiceSeries, serviceKey } from './firewall.js';
import { memoryBytes } from './inventory.js';

/** One account as the families read it. */
export interface FamilyAccount {
  name: string;
  state: AccountState;
  /** the account's graph images (graphs/store.ts GraphStore) */
  graphs: { readonly changes: number; fetched(): Iterable<HeldGraph> };
  /**
   * the account's desired firewall state rows as the store holds them (remediation/desired-rows.ts DesiredRows);
   * absent: remediation has none
   */
  desired?: {
    readonly changes: number;
    rows(): readonly { serverId: string; ip: string; desiredState: string }[];
  };
}

/** One family's part of an account: what it reads, and its samples in exposition order (a yield between items). */
interface FamilyOfState {
  version(account: FamilyAccount): unknown[];
  collect(account: FamilyAccount, emit: Emit): Iterable<void>;
}

/** Items (servers, services, images) emitted between two yields, where the rendering may give the loop a turn. */
const ITEMS_PER_YIELD = 256;

/**
 * Calls `each` with the type, id and firewall series state (undefined: none yet) of every service in scope, in
 * `services()` order, when the firewall poll is on; yields every ITEMS_PER_YIELD services.
 */
function* eachService(
  state: AccountState,
  each: (type: string, id: string, series: ServiceSeries | undefined, key: string) => void,
): Iterable<void> {
  if (!state.collectorOn('firewall')) return;
  const services = state.firewallState.services;
  let i = 0;
  for (const [type, ids] of state.serviceIds())
    for (const id of ids) {
      const key = serviceKey(type, id);
      each(type, id, services.get(key), key);
      if (++i % ITEMS_PER_YIELD === 0) yield;
    }
}

/** Calls `each` with every server of the inventory, in its order; yields every ITEMS_PER_YIELD servers. */
function* eachServer(state: AccountState, each: (server: ServerRecord) => void): Iterable<void> {
  let i = 0;
  for (const server of state.inventory.values()) {
    each(server);
    if (++i % ITEMS_PER_YIELD === 0) yield;
  }
}

/** What a firewall family reads: the services in scope and one of the firewall state's change counts. */
const firewallVersion =
  (part: keyof FirewallSeriesState['changes']) =>
  ({ state }: FamilyAccount) => [
    state.collectorOn('firewall'),
    state.firewallState.changes[part],
    ...state.servicesVersion(),
  ];

const ms = (at: number) => at / 1000;

/** Every family rendered from state, by its key in `Metrics`: one entry each (a missing one does not compile). */
export const FAMILIES: Record<StateFamilyKey, FamilyOfState> = {
  serverInfo: {
    version: ({ state }) => [state.inventory],
    collect: ({ name, state }, emit) =>
      eachServer(state, (s) =>
        emit([name, s.serverId, s.hostname, s.ip, s.os, s.processor, s.memory, s.location, s.status], 1),
      ),
  },
  serverMemory: {
    version: ({ state }) => [state.inventory],
    collect: ({ name, state }, emit) =>
      eachServer(state, (s) => {
        const bytes = memoryBytes(s.memory);
        if (bytes !== undefined) emit([name, s.serverId], bytes);
      }),
  },
  serverIps: {
    version: ({ state }) => [state.inventory],
    collect: ({ name, state }, emit) => eachServer(state, (s) => emit([name, s.serverId], s.ips.length)),
  },
  serverCancellation: {
    version: ({ state }) => [state.inventory],
    collect: ({ name, state }, emit) =>
      eachServer(state, (s) => {
        if (s.cancellation) emit([name, s.serverId, s.cancellation], 1);
      }),
  },
  attackEvents: {
    version: firewallVersion('attacks'),
    collect: ({ name, state }, emit) =>
      eachService(state, (type, id, series) => {
        if (series) for (const [ip, count] of series.counts) emit([name, type, id, ip], count);
      }),
  },
  attackEventsTotal: {
    version: firewallVersion('attacks'),
    collect: ({ name, state }, emit) =>
      eachService(state, (type, id, series) => {
        if (!series) return;
        for (const ip of series.counts.keys())
          emit([name, type, id, ip], series.totals.get(ip) ?? 0, ms(series.created.get(ip) ?? series.since));
      }),
  },
  firewallHistoryUp: {
    version: firewallVersion('up'),
    collect: ({ name, state }, emit) =>
      eachService(state, (type, id, series, key) => {
        // A service whose polls have all failed so far is down too.
        if (series) emit([name, type, id], series.up ? 1 : 0);
        else if (state.firewallState.failedBeforeRead.has(key)) emit([name, type, id], 0);
      }),
  },
  firewallHistoryLastSuccess: {
    // A service read the first time or forgotten changes `up` too, not always `reads` (a forgotten one).
    version: (account) => [...firewallVersion('reads')(account), account.state.firewallState.changes.up],
    collect: ({ name, state }, emit) =>
      eachService(state, (type, id, series) => {
        if (series) emit([name, type, id], ms(series.readAt));
      }),
  },
  firewallOldestReadAge: {
    version: ({ state }) => [state.collectorOn('firewall'), state.oldestReadAgeSeconds],
    *collect({ name, state }, emit) {
      if (state.collectorOn('firewall') && state.oldestReadAgeSeconds !== undefined)
        emit([name], state.oldestReadAgeSeconds);
      yield;
    },
  },
  graphLastSuccess: {
    version: ({ state, graphs }) => [state.collectorOn('graphs'), graphs.changes, state.inventory],
    *collect({ name, state, graphs }, emit) {
      if (!state.collectorOn('graphs')) return;
      let i = 0;
      for (const graph of graphs.fetched()) {
        // An image of a server no longer listed is not rendered, whatever the store still holds.
        if (!state.inventory.has(graph.serverId)) continue;
        emit([name, graph.serverId, graph.type, graph.scale], ms(graph.updatedAt));
        if (++i % ITEMS_PER_YIELD === 0) yield;
      }
    },
  },
  firewallDesiredState: {
    version: ({ desired }) => [desired?.changes],
    *collect({ name, desired }, emit) {
      let i = 0;
      for (const row of desired?.rows() ?? []) {
        emit([name, row.serverId, row.ip], Number(row.desiredState));
        if (++i % ITEMS_PER_YIELD === 0) yield;
      }
    },
  },
  catalogOperatingSystems: {
    version: ({ state }) => [state.collectorOn('catalog'), state.catalog.operatingSystems],
    *collect({ name, state }, emit) {
      if (state.collectorOn('catalog')) emit([name], state.catalog.operatingSystems);
      yield;
    },
  },
  catalogLocations: {
    version: ({ state }) => [state.collectorOn('catalog'), state.catalog.locations],
    *collect({ name, state }, emit) {
      if (state.collectorOn('catalog')) emit([name], state.catalog.locations);
      yield;
    },
  },
};

/**
 * Binds every family of FAMILIES to `accounts` (the daemon's, in config order, asked at each rendering): a
 * family's samples are those of each account the rendering keeps, account by account.
 */
export function bindStateFamilies(metrics: Metrics, accounts: () => Iterable<FamilyAccount>): void {
  for (const key of Object.keys(FAMILIES) as StateFamilyKey[]) {
    const family = FAMILIES[key];
    const kept = (keep?: KeepAccount) => [...accounts()].filter((account) => !keep || keep(account.name));
    const source: FamilySource = {
      version: (keep) => kept(keep).flatMap((account) => [account.name, account.state, ...family.version(account)]),
      *collect(emit, keep) {
        for (const account of kept(keep)) yield* family.collect(account, emit);
      },
    };
    metrics[key].bind(source);
  }
}
