/**
 * The server directory shared between replicas: the leader publishes each account's latest server list
 * (server ids and the IPs each owns: its record's and those seen in its firewall history — what the
 * remediation guards check a target against — and its record's main IP, hostname, location and status, what a
 * follower's discovery and status page show; rows of an older leader hold only the IPs and are still read) after each servers and firewall run; every replica reads it
 * back every few seconds into a snapshot, so a follower's engines check targets synchronously
 * without polling the API. The leader's own engines ask its account state (collectors/account-state.ts) while it has read a server list.
 */
import type pg from 'pg';
import type { Logger } from 'pino';
import { SCHEDULED_CANCELLATIONS, type ScheduledCancellation } from '../../config/api-terms.js';
import { type AccountWrite, poolWrite } from './leases.js';

/** server id → the IPs it owns (the shape rows had before the server's record fields were published too) */
export type ServerIps = Record<string, string[]>;

/** The fields of a server's record a follower's discovery and status page show (API contract §1). */
export interface ServerDetails {
  /** the main IP */
  ip: string;
  hostname: string;
  location: string;
  status: string;
  /** the cancellation its record says is scheduled (`immediate`, `end`), '' when none or an older leader published the row */
  cancellation: ScheduledCancellation;
}

/** One published server: the IPs it owns, and its record's fields (no `cancellation` from a leader before issue 32). */
export type PublishedServer = { ips: string[] } & Omit<ServerDetails, 'cancellation'> & {
    cancellation?: ScheduledCancellation;
  };

/** server id → what the leader publishes of it; a row may still hold the older `ServerIps` shape. */
export type PublishedServers = Record<string, PublishedServer>;

const detailsOf = (v: PublishedServer): ServerDetails => ({
  ip: v.ip,
  hostname: v.hostname,
  location: v.location,
  status: v.status,
  cancellation: v.cancellation ?? '',
});

/** One account's server list as last read from the database. */
export class DirectorySnapshot {
  #servers = new Map<string, Set<string>>();
  #details = new Map<string, ServerDetails>();
  #known = false;
  /** the row version read (bigint as text); '0' before any */
  version = '0';

  get serversKnown(): boolean {
    return this.#known;
  }

  hasServer(serverId: string): boolean {
    return this.#servers.has(serverId);
  }

  ownsIp(serverId: string, ip: string): boolean {
    return this.#servers.get(serverId)?.has(ip) ?? false;
  }

  /** servers in the list read (the leader publishes the servers in scope only) */
  serversInScope(): number {
    return this.#servers.size;
  }

  /** every server of the list read, with its IPs */
  get servers(): ReadonlyMap<string, ReadonlySet<string>> {
    return this.#servers;
  }

  /** the record fields of `serverId`; undefined when the row was published without them (an older leader) */
  details(serverId: string): ServerDetails | undefined {
    return this.#details.get(serverId);
  }

  replace(servers: ServerIps | PublishedServers, version: string): void {
    const entries = Object.entries(servers);
    this.#servers = new Map(entries.map(([id, v]) => [id, new Set(Array.isArray(v) ? v : v.ips)]));
    this.#details = new Map(entries.flatMap(([id, v]) => (Array.isArray(v) ? [] : [[id, detailsOf(v)]])));
    this.#known = true;
    this.version = version;
  }
}

const isTexts = (value: unknown): value is string[] =>
  Array.isArray(value) && value.every((ip) => typeof ip === 'string');

const isPublished = (value: unknown): value is PublishedServer => {
  if (typeof value !== 'object' || value === null) return false;
  const v = value as Record<string, unknown>;
  return (
    isTexts(v.ips) &&
    ['ip', 'hostname', 'location', 'status'].every((key) => typeof v[key] === 'string') &&
    (v.cancellation === undefined || ['', ...SCHEDULED_CANCELLATIONS].includes(v.cancellation as string))
  );
};

/** A row's servers: the current shape, or the older one (server id → IPs). */
const isServers = (value: unknown): value is ServerIps | PublishedServers =>
  typeof value === 'object' &&
  value !== null &&
  !Array.isArray(value) &&
  Object.values(value).every((v) => isTexts(v) || isPublished(v));

export interface SharedDirectoryOptions {
  pool: pg.Pool;
  /** the configured accounts */
  accounts: readonly string[];
  logger: Logger;
  /** the message of a database error, scrubbed of the URL's secrets (default: the error's message) */
  reason?: (error: unknown) => string;
  /** how often the snapshots are read again, ms (default 3000) */
  refreshMs?: number;
  /** runs a publication's statement for `account` (the store fences it with the lease); default: on the pool */
  write?: AccountWrite;
  /**
   * with shared accounts: the lease epoch under which this replica leads an account now (the one its writes
   * are fenced with), so that an unchanged list is not written again within one term; undefined: always write
   */
  epoch?: (account: string) => string | undefined;
  /** a list written under a lease term is written again after this long even if unchanged, ms (default 60000) */
  rewriteMs?: number;
}

/** What this replica last wrote of an account, under which lease epoch, when. */
interface Written {
  epoch: string;
  servers: PublishedServers;
  at: number;
}

/**
 * The two lists publish the same: the same server ids, each with the same record fields and the same IPs in the
 * same order. Compared field by field, not as JSON text: a leader publishes after every servers and firewall run,
 * and serialising a list of 1000 servers only to find it unchanged cost ~1.7 ms of its ~2.1 ms (issue 42).
 */
export function samePublished(a: PublishedServers, b: PublishedServers): boolean {
  const ids = Object.keys(a);
  if (ids.length !== Object.keys(b).length) return false;
  for (const id of ids) {
    const x = a[id]!;
    const y = Object.hasOwn(b, id) ? b[id]! : undefined;
    if (
      y === undefined ||
      x.ip !== y.ip ||
      x.hostname !== y.hostname ||
      x.location !== y.location ||
      x.status !== y.status ||
      (x.cancellation ?? '') !== (y.cancellation ?? '') ||
      x.ips.length !== y.ips.length
    )
      return false;
    for (let i = 0; i < x.ips.length; i++) if (x.ips[i] !== y.ips[i]) return false;
  }
  return true;
}

export class SharedDirectory {
  readonly #options: SharedDirectoryOptions;
  readonly #snapshots: Map<string, DirectorySnapshot>;
  #timer: NodeJS.Timeout | undefined;
  #refreshing: Promise<void> | undefined;
  /** each account's publication in progress (they run one after the other) */
  readonly #publishing = new Map<string, Promise<void>>();
  /** the refresh problem last logged (logged once while it lasts) */
  #logged: string | undefined;
  /** each account's list last written successfully under its current epoch: an equal one is not written again */
  readonly #written = new Map<string, Written>();
  readonly #write: AccountWrite;

  constructor(options: SharedDirectoryOptions) {
    this.#options = options;
    this.#write = options.write ?? poolWrite(options.pool);
    this.#snapshots = new Map(options.accounts.map((account) => [account, new DirectorySnapshot()]));
  }

  /** The snapshot of `account` (a configured account). */
  snapshot(account: string): DirectorySnapshot {
    const snapshot = this.#snapshots.get(account);
    if (!snapshot) throw new Error(`no directory snapshot for account ${account}`);
    return snapshot;
  }

  /** The servers of `account`'s snapshot, with their IPs (a follower's status page). */
  servers(account: string): ReadonlyMap<string, ReadonlySet<string>> {
    return this.snapshot(account).servers;
  }

  /** The record fields of a server of `account`'s snapshot; undefined when not published (an older leader). */
  details(account: string, serverId: string): ServerDetails | undefined {
    return this.snapshot(account).details(serverId);
  }

  /**
   * Publishes the server list of `account` (the leader, after a servers or firewall run), read from `servers`
   * when the previous publication of the account has ended (so the newest list is written last); a list
   * equal to the one held writes nothing. With shared accounts (`epoch`), a list equal to the one this replica
   * last wrote under the same lease epoch, less than `rewriteMs` ago, sends no statement at all.
   */
  publish(account: string, servers: () => PublishedServers): Promise<void> {
    const previous = this.#publishing.get(account) ?? Promise.resolve();
    const next = previous
      .catch(() => undefined)
      .then(async () => {
        const list = servers();
        const epoch = this.#options.epoch?.(account);
        const held = this.#written.get(account);
        const now = Date.now();
        if (epoch !== undefined && held?.epoch === epoch && now - held.at < (this.#options.rewriteMs ?? 60_000))
          if (samePublished(held.servers, list)) return;
        const text = JSON.stringify(list);
        // Forgotten until the write succeeds: a failed one is retried with the next list, equal or not.
        this.#written.delete(account);
        await this.#write(
          account,
          `INSERT INTO ha_directory (account, servers, version) VALUES ($1, $2, 1)
           ON CONFLICT (account) DO UPDATE SET servers = EXCLUDED.servers, version = ha_directory.version + 1, updated_at = now()
           WHERE ha_directory.servers IS DISTINCT FROM EXCLUDED.servers`,
          [account, text],
        );
        if (epoch !== undefined) this.#written.set(account, { epoch, servers: list, at: now });
      });
    this.#publishing.set(account, next);
    return next;
  }

  /** Forgets what was written of `account` (its term ended): the next publication writes. */
  forget(account: string): void {
    this.#written.delete(account);
  }

  /** Reads every account's list that changed since the last read. Never throws: a failure keeps the last snapshot. */
  refresh(): Promise<void> {
    this.#refreshing ??= this.#read().finally(() => {
      this.#refreshing = undefined;
    });
    return this.#refreshing;
  }

  async #read(): Promise<void> {
    const { pool, logger } = this.#options;
    try {
      // One statement for every account (a replica reads this every few seconds): the rows whose version
      // differs from the one each snapshot holds.
      const held = [...this.#snapshots];
      const { rows } = await pool.query<{ account: string; version: string; servers: unknown }>(
        `SELECT d.account, d.version::text AS version, d.servers
           FROM ha_directory d JOIN unnest($1::text[], $2::text[]) AS held(account, version) USING (account)
          WHERE d.version::text <> held.version`,
        [held.map(([account]) => account), held.map(([, snapshot]) => snapshot.version)],
      );
      for (const row of rows) {
        const snapshot = this.#snapshots.get(row.account)!;
        if (isServers(row.servers)) snapshot.replace(row.servers, row.version);
        else
          logger.error(
            { account: row.account },
            'the shared server directory holds a malformed row: keeping the last list read',
          );
      }
      this.#logged = undefined;
    } catch (error) {
      const reason = this.#options.reason?.(error) ?? (error instanceof Error ? error.message : String(error));
      if (this.#logged !== reason)
        logger.warn(
          { reason },
          "cannot read the shared server directory: this replica's target checks use the last list read",
        );
      this.#logged = reason;
    }
  }

  /** Reads at once, then every `refreshMs`. */
  start(): void {
    if (this.#timer) return;
    void this.refresh();
    this.#timer = setInterval(() => void this.refresh(), this.#options.refreshMs ?? 3_000).unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#refreshing;
  }
}
