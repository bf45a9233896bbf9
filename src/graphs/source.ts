/**
 * Where `/graphs` reads the held images from: each account's in-memory store (one replica, SQLite), or the
 * database the leader writes them to (replicas sharing PostgreSQL: store/postgres/graphs.ts).
 */
import type { GraphKey, GraphStore, StoredGraph } from './store.js';

/** A held image without its bytes (the `/graphs` list). */
export interface GraphSummary extends GraphKey {
  account: string;
  etag: string;
  /** ms since the epoch the image was fetched */
  updatedAt: number;
  width: number;
  height: number;
  /** size of the PNG, bytes */
  bytes: number;
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
  a.account.localeCompare(b.account) ||
  `${a.serverId}/${a.type}/${a.scale}`.localeCompare(`${b.serverId}/${b.type}/${b.scale}`);

/** Every account's held images in memory, ordered by account, then server, type and scale. */
export function listStores(graphStores: ReadonlyMap<string, GraphStore>): Array<StoredGraph & { account: string }> {
  return [...graphStores].flatMap(([account, store]) => store.list().map((g) => ({ ...g, account }))).sort(byGraphKey);
}

/** The images each account's store holds in memory. */
export function localGraphs(graphStores: ReadonlyMap<string, GraphStore>): GraphSource {
  return {
    accounts: [...graphStores.keys()],
    get: async (account, key) => graphStores.get(account)?.get(key),
    list: async () => listStores(graphStores).map(({ png, ...g }) => ({ ...g, bytes: png.length })),
  };
}
