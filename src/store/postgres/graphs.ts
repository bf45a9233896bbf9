/**
 * Graph images shared between replicas through PostgreSQL: the leader's graph store writes each image it
 * keeps to `ha_graphs` (bytea, the latest per account and key, upserted) and removes those of servers that
 * are gone; every replica serves `/graphs` from the table. Chosen over proxying `/graphs` to the leader:
 * followers need no route, address or credentials to reach the leader, and the images survive a failover.
 * With the accounts shared among replicas each write carries the account's lease epoch and is refused by the
 * database under a stale one (the store's `write`, leases.ts `checkLease`): a leader that was paused past its
 * lease and wakes up cannot overwrite or delete the images its successor stores.
 */
import type pg from 'pg';
import type { Logger } from 'pino';
import { DATABASE_UNREACHABLE } from '../../config/database-url.js';
import { NotReadyError } from '../../errors.js';
import type { GraphScale, GraphType } from '../../config/api-terms.js';
import { byGraphKey, type GraphSource, type GraphSummary } from '../../graphs/source.js';
import type { GraphKey, GraphMirror, StoredGraph } from '../../graphs/store.js';
import { type AccountWrite, poolWrite } from './leases.js';

interface Row {
  account: string;
  server_id: string;
  type: string;
  scale: string;
  etag: string;
  width: number;
  height: number;
  updated_at: string;
}

const summaryOf = (row: Row & { bytes: number }): GraphSummary => ({
  account: row.account,
  serverId: row.server_id,
  type: row.type as GraphType,
  scale: row.scale as GraphScale,
  etag: row.etag,
  width: row.width,
  height: row.height,
  updatedAt: Number(row.updated_at),
  bytes: row.bytes,
});

export class SharedGraphs implements GraphSource {
  readonly accounts: readonly string[];
  readonly #pool: pg.Pool;
  readonly #logger: Logger;
  /** the message of a database error, scrubbed of the URL's secrets (databaseScrubber) */
  readonly #reason: (error: unknown) => string;
  /** runs a leader's statement for an account (the store fences it with the lease once shared) */
  readonly #write: AccountWrite;

  /** `write` runs each statement that changes an account's images (default: on the pool, unfenced) */
  constructor(
    pool: pg.Pool,
    accounts: readonly string[],
    logger: Logger,
    reason: (error: unknown) => string,
    write?: AccountWrite,
  ) {
    this.#pool = pool;
    this.accounts = accounts;
    this.#logger = logger;
    this.#reason = reason;
    this.#write = write ?? poolWrite(pool);
  }

  /** The mirror of `account`'s graph store. */
  mirror(account: string): GraphMirror {
    const write = this.#write;
    // A removal left undone is repeated when a leader reads its first server list (retainServers).
    const remove = async (serverIds: string[], sql: string) => {
      try {
        await write(account, sql, [account, serverIds]);
      } catch (error) {
        this.#logger.warn(
          { account, reason: this.#reason(error) },
          'cannot remove the graph images of removed servers from the database: /graphs lists them until a leader reads its first server list',
        );
      }
    };
    return {
      // An image fetched again unchanged (same ETag: the API redraws a graph every few minutes, the poll may
      // run more often) keeps its stored bytes: the row keeps its TOAST reference, so only `updated_at` is
      // written, not another copy of the PNG for autovacuum to reclaim (what grew the soak's database).
      // Under a stale lease it throws StaleLeaseError, nothing written (the graphs poll counts the item failed).
      put: async (g) => {
        await write(
          account,
          `INSERT INTO ha_graphs (account, server_id, type, scale, png, etag, width, height, updated_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9)
           ON CONFLICT (account, server_id, type, scale) DO UPDATE SET
             png = CASE WHEN ha_graphs.etag = EXCLUDED.etag THEN ha_graphs.png ELSE EXCLUDED.png END,
             etag = EXCLUDED.etag, width = EXCLUDED.width, height = EXCLUDED.height, updated_at = EXCLUDED.updated_at`,
          [account, g.serverId, g.type, g.scale, g.png, g.etag, g.width, g.height, g.updatedAt],
        );
      },
      removeServer: (serverId) =>
        remove([serverId], 'DELETE FROM ha_graphs WHERE account = $1 AND server_id = ANY($2::text[])'),
      retainServers: (serverIds) =>
        remove([...serverIds], 'DELETE FROM ha_graphs WHERE account = $1 AND NOT (server_id = ANY($2::text[]))'),
    };
  }

  async get(account: string, key: GraphKey): Promise<StoredGraph | undefined> {
    const { rows } = await this.#read(() =>
      this.#pool.query<Row & { png: Buffer }>(
        `SELECT account, server_id, type, scale, etag, width, height, updated_at::text AS updated_at, png
         FROM ha_graphs WHERE account = $1 AND server_id = $2 AND type = $3 AND scale = $4`,
        [account, key.serverId, key.type, key.scale],
      ),
    );
    const row = rows[0];
    if (!row) return undefined;
    const { account: _account, ...graph } = summaryOf({ ...row, bytes: row.png.length });
    return { ...graph, png: row.png };
  }

  async list(): Promise<GraphSummary[]> {
    const { rows } = await this.#read(() =>
      this.#pool.query<Row & { bytes: number }>(
        `SELECT account, server_id, type, scale, etag, width, height, updated_at::text AS updated_at,
           octet_length(png) AS bytes
         FROM ha_graphs WHERE account = ANY($1::text[])`,
        [[...this.accounts]],
      ),
    );
    return rows.map(summaryOf).sort(byGraphKey);
  }

  /**
   * A database that does not answer is a 503 (the caller retries) that names the part, never the host, port,
   * user or database: `/graphs` and the status page may be open. The log line keeps what failed (scrubbed).
   */
  async #read<T>(query: () => Promise<T>): Promise<T> {
    try {
      return await query();
    } catch (error) {
      const message = `graph images are unavailable: state ${DATABASE_UNREACHABLE}`;
      this.#logger.warn({ reason: this.#reason(error) }, message);
      throw new NotReadyError(message);
    }
  }
}
