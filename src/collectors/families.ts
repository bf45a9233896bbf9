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
import type { ServiceSeries } from './firewall.js';
import { memoryBytes } from './inventory.js';

/** One account as the families read it. */
export interface FamilyAccount {
  name: string;
  state: AccountState;
  /** the account's graph images (graphs/store.ts GraphStore) */
  graphs: { readonly changes: number; fetched(): Iterable<HeldGraph> };
}

/** One family's part of an account: what it reads, and its samples in exposition order (a yield between items). */
interface FamilyOfState {
  version(account: FamilyAccount): unknown[];
  collect(account: FamilyAccount, emit: Emit): Iterable<void>;
}

/** The firewall series of each service in scope: its state, or none yet (never read, or forgotten). */
function* services(state: AccountState): Iterable<[string, string, ServiceSeries | undefined, string]> {
  if (!state.collectorOn('firewall')) return;
  for (const [type, id, key] of state.serviceKeys()) yield [type, id, state.firewallState.services.get(key), key];
}

/** What the attack and history_up families read: the services in scope and their series state. */
const firewallSeries = ({ state }: FamilyAccount) => [
  state.collectorOn('firewall'),
  state.firewallState.changes.series,
  ...state.servicesVersion(),
];

const ms = (at: number) => at / 1000;

/** Every family rendered from state, by its key in `Metrics`: one entry each (a missing one does not compile). */
export const FAMILIES: Record<StateFamilyKey, FamilyOfState> = {
  serverInfo: {
    version: ({ state }) => [state.inventory],
    *collect({ name, state }, emit) {
      for (const s of state.inventory.values()) {
        emit([name, s.serverId, s.hostname, s.ip, s.os, s.processor, s.memory, s.location, s.status], 1);
        yield;
      }
    },
  },
  serverMemory: {
    version: ({ state }) => [state.inventory],
    *collect({ name, state }, emit) {
      for (const s of state.inventory.values()) {
        const bytes = memoryBytes(s.memory);
        if (bytes !== undefined) emit([name, s.serverId], bytes);
        yield;
      }
    },
  },
  serverIps: {
    version: ({ state }) => [state.inventory],
    *collect({ name, state }, emit) {
      for (const s of state.inventory.values()) {
        emit([name, s.serverId], s.ips.length);
        yield;
      }
    },
  },
  serverCancellation: {
    version: ({ state }) => [state.inventory],
    *collect({ name, state }, emit) {
      for (const s of state.inventory.values()) {
        if (s.cancellation) emit([name, s.serverId, s.cancellation], 1);
        yield;
      }
    },
  },
  attackEvents: {
    version: firewallSeries,
    *collect({ name, state }, emit) {
      for (const [type, id, series] of services(state)) {
        for (const [ip, count] of series?.counts ?? []) emit([name, type, id, ip], count);
        yield;
      }
    },
  },
  attackEventsTotal: {
    version: firewallSeries,
    *collect({ name, state }, emit) {
      for (const [type, id, series] of services(state)) {
        if (!series) continue;
        for (const ip of series.counts.keys())
          emit([name, type, id, ip], series.totals.get(ip) ?? 0, ms(series.created.get(ip) ?? series.since));
        yield;
      }
    },
  },
  firewallHistoryUp: {
    version: (account) => [...firewallSeries(account), account.state.firewallState.failedBeforeRead.size],
    *collect({ name, state }, emit) {
      for (const [type, id, series, key] of services(state)) {
        // A service whose polls have all failed so far is down too.
        if (series) emit([name, type, id], series.up ? 1 : 0);
        else if (state.firewallState.failedBeforeRead.has(key)) emit([name, type, id], 0);
        yield;
      }
    },
  },
  firewallHistoryLastSuccess: {
    version: ({ state }) => [
      state.collectorOn('firewall'),
      state.firewallState.changes.series,
      state.firewallState.changes.reads,
      ...state.servicesVersion(),
    ],
    *collect({ name, state }, emit) {
      for (const [type, id, series] of services(state)) {
        if (series) emit([name, type, id], ms(series.readAt));
        yield;
      }
    },
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
    version: ({ state, graphs }) => [state.collectorOn('graphs'), graphs.changes],
    *collect({ name, state, graphs }, emit) {
      if (!state.collectorOn('graphs')) return;
      for (const graph of graphs.fetched()) {
        emit([name, graph.serverId, graph.type, graph.scale], ms(graph.updatedAt));
        yield;
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
