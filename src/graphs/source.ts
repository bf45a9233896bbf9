/**
 * Where `/graphs` reads the held images from: each account's store in `state_dir` (one replica, SQLite), or the
 * database the leader writes them to (replicas sharing PostgreSQL: store/postgres/graphs.ts).
 */
import type { GraphKey, GraphStore, HeldGraph, StoredGraph } from './store.js';
import { byCodeUnits } from '../order.js';

/** A held image without its bytes (the `/graphs` list). */
export interface GraphSummary extends HeldGraph {
  account: string;
}

export interface GraphSource {
  /** the configured accounts */
  readonly accounts: readonly string[];
  /** the latest image of `key` of `account`, if held */
  get(account: string, key: GraphKey): Promise<StoredGraph | undefined>;
  /** every held image, ordered by account, then server, type and scale */
  list(): Promise<GraphSummary[]>;
}

/** Orders images by account, then server, type and scale. */
export const byGraphKey = (a: GraphKey & { account: string }, b: GraphKey & { account: string }): number =>
  byCodeUnits(a.account, b.account) ||
  byCodeUnits(`${a.serverId}/${a.type}/${a.scale}`, `${b.serverId}/${b.type}/${b.scale}`);

/** The images each account's store holds (on disk, per graphs/store.ts). */
export function localGraphs(graphStores: ReadonlyMap<string, GraphStore>): GraphSource {
  return {
    accounts: [...graphStores.keys()],
    get: async (account, key) => graphStores.get(account)?.get(key),
    list: async () =>
      [...graphStores].flatMap(([account, store]) => store.list().map((g) => ({ ...g, account }))).sort(byGraphKey),
  };
}
