/**
 * Leader election between replicas that share one PostgreSQL: the leader is the replica whose dedicated
 * connection holds the session-level advisory lock `ADVISORY_LOCKS.leader`. PostgreSQL frees the lock with
 * the session, so a leader that crashes, is killed or loses its network loses the role without any
 * protocol of ours; the others try `pg_try_advisory_lock` every `retryMs` and one of them takes over.
 *
 * A leader that loses its connection must stop at once, before another replica can be elected: it learns
 * of the loss from the client's `error`/`end` events and from a heartbeat (`SELECT 1` every `heartbeatMs`,
 * given up after `timeoutMs`), and the server ends the leader's session after `sessionTimeoutMs` without a
 * query (`idle_session_timeout`), so a hung network frees the lock only after the leader has already
 * demoted itself (heartbeat period + timeout < session timeout).
 *
 * The connection URL carries the password: logs name the redacted URL, and every error text is scrubbed.
 */
import type pg from 'pg';
import type { Logger } from 'pino';
import { ADVISORY_LOCKS } from '../store/postgres/bounds.js';
import type { Scrubber } from '../scrub.js';
import { databaseScrubber, reasonOf } from '../config/database-url.js';
import { Ticker } from './ticker.js';

export interface LeaderElectorOptions {
  /** the PostgreSQL URL, with its password: never logged */
  url: string;
  /** the URL with its password masked, for logs */
  redactedUrl: string;
  logger: Logger;
  /** this replica became leader; the next role change waits for the returned promise */
  onElected: () => void | Promise<void>;
  /** this replica is no longer leader (`reason`: why); the next role change waits for the returned promise */
  onDemoted: (reason: string) => void | Promise<void>;
  /** between two attempts to take the lock (or to reconnect), ms (default 5000) */
  retryMs?: number;
  /** between two heartbeats of the leader's connection, ms (default 2000) */
  heartbeatMs?: number;
  /** connecting or a query taking longer means the connection is lost, ms (default 3000) */
  timeoutMs?: number;
  /** the server ends the leader's session after this long without a query, ms (default 10000) */
  sessionTimeoutMs?: number;
  /** `application_name` of the connection, as `pg_stat_activity` shows it */
  applicationName?: string;
  /**
   * false while this replica may not lead (it disagrees with the live replicas, ha/terms.ts): it does not try for
   * the lock, and a leader steps down at its next heartbeat (demoted, then the lock released); default always
   */
  mayLead?: () => boolean;
}

/** The reason onDemoted is given when `mayLead` turned false. */
export const DISAGREES = 'this replica disagrees with the live replicas';

/** The reason onDemoted is given by `stop()` (a graceful shutdown, not a fault). */
export const STOPPING = 'this replica is stopping';

export const LEADER_DEFAULTS = { retryMs: 5_000, heartbeatMs: 2_000, timeoutMs: 3_000, sessionTimeoutMs: 10_000 };

export class LeaderElector {
  readonly #options: LeaderElectorOptions & typeof LEADER_DEFAULTS;
  readonly #scrub: Scrubber;
  #client: pg.Client | undefined;
  #leader = false;
  /** the attempts, then the heartbeats while leading */
  readonly #ticker = new Ticker(() => this.#tick());
  /** role changes run in order: a demotion's work has ended before the next election's starts */
  #transitions: Promise<void> = Promise.resolve();
  #problem: string | undefined = 'the database has not answered yet';
  #attempted = false;
  /** the problem last logged, so that a database that stays down is logged once, not every retry */
  #logged: string | undefined;

  constructor(options: LeaderElectorOptions) {
    this.#options = { ...LEADER_DEFAULTS, ...options };
    this.#scrub = databaseScrubber(options.url);
  }

  /** True while this replica holds the lock (between onElected and onDemoted). */
  get leader(): boolean {
    return this.#leader;
  }

  /** True once an attempt to take the lock has been made while `mayLead` allowed it (readiness). */
  get attempted(): boolean {
    return this.#attempted;
  }

  /** The next attempt comes at once rather than after `retryMs` (`mayLead` just turned true). */
  nudge(): void {
    if (!this.#leader) this.#ticker.postpone(0);
  }

  /** Why the database does not answer (readiness), or undefined when the last attempt or heartbeat reached it. */
  get problem(): string | undefined {
    return this.#problem;
  }

  /** Starts trying to take the lock (at once, then every `retryMs`). */
  start(): void {
    this.#ticker.start();
  }

  /**
   * Stops trying; a leader is demoted (onDemoted has finished) before the lock is released (`pg_advisory_unlock`,
   * then the connection ends), so that a follower takes over at once and the two never poll together.
   */
  async stop(): Promise<void> {
    await this.#ticker.stop();
    const client = this.#client;
    this.#client = undefined;
    if (this.#leader) this.#demote(STOPPING);
    await this.#transitions;
    if (!client) return;
    await this.#query(client, 'SELECT pg_advisory_unlock($1)', [ADVISORY_LOCKS.leader]).catch(() => undefined);
    await client.end().catch(() => undefined);
  }

  /** One attempt or heartbeat; resolves to the delay before the next. */
  async #tick(): Promise<number> {
    const client = this.#client;
    try {
      const may = this.#options.mayLead?.() ?? true;
      if (!this.#leader) {
        if (may) {
          await this.#attempt();
          this.#attempted = true;
        }
      } else if (client && !may) await this.#stepDown(client);
      else if (client) await this.#query(client, 'SELECT 1');
      // Not reached: losing the connection demotes at once (#lost).
      else throw new Error('the connection was lost');
      this.#problem = undefined;
      this.#logged = undefined;
    } catch (error) {
      this.#lost(this.#client, this.#describe(error));
    }
    return this.#leader ? this.#options.heartbeatMs : this.#options.retryMs;
  }

  /** A leader that may no longer lead: its duties end, then the lock is released for a replica that may. */
  async #stepDown(client: pg.Client): Promise<void> {
    this.#options.logger.warn({ database: this.#options.redactedUrl }, `stepping down as leader: ${DISAGREES}`);
    this.#demote(DISAGREES);
    await this.#transitions;
    await this.#query(client, 'SELECT pg_advisory_unlock($1)', [ADVISORY_LOCKS.leader]);
  }

  /** Connects when needed and tries to take the lock; on success this replica leads. */
  async #attempt(): Promise<void> {
    const client = this.#client ?? (await this.#connect());
    const { rows } = await this.#query<{ locked: boolean }>(client, 'SELECT pg_try_advisory_lock($1) AS locked', [
      ADVISORY_LOCKS.leader,
    ]);
    if (rows[0]?.locked !== true || this.#ticker.stopped) return;
    // From now on a session left without a query (the network hung) is ended by the server, freeing the lock.
    await this.#query(client, `SET idle_session_timeout = ${Math.round(this.#options.sessionTimeoutMs)}`).catch(
      (error: unknown) => {
        // PostgreSQL before 14 lacks the setting: the lock is then freed when the server's TCP keepalive gives up.
        if ((error as { code?: string }).code !== '42704') throw error;
        this.#options.logger.warn(
          { database: this.#options.redactedUrl },
          'PostgreSQL has no idle_session_timeout (before 14): after a network partition the lock is freed only when the server notices the dead connection',
        );
      },
    );
    // The connection may have been lost meanwhile (its error event): then the lock went with it.
    if (client !== this.#client) throw new Error('the connection was lost while taking the lock');
    this.#leader = true;
    this.#options.logger.info(
      { database: this.#options.redactedUrl },
      'elected leader: this replica polls the API and applies deferred firewall changes',
    );
    this.#transition(() => this.#options.onElected());
  }

  async #connect(): Promise<pg.Client> {
    // node-postgres is loaded by the first election, not by importing this module (a SQLite daemon never elects).
    const { default: postgres } = await import('pg');
    const client = new postgres.Client({
      connectionString: this.#options.url,
      connectionTimeoutMillis: this.#options.timeoutMs,
      keepAlive: true,
      application_name: this.#options.applicationName ?? 'baremetal-exporter-leader',
    });
    // Either event means the session, and with it the lock, is gone (or going).
    client.on('error', (error) => this.#lost(client, this.#describe(error)));
    client.on('end', () => this.#lost(client, 'the connection ended'));
    this.#client = client;
    await client.connect();
    return client;
  }

  #query<R extends pg.QueryResultRow = pg.QueryResultRow>(
    client: pg.Client,
    text: string,
    values: unknown[] = [],
  ): Promise<pg.QueryResult<R>> {
    // query_timeout per query is supported by node-postgres's Client but missing from its QueryConfig type.
    const config = { text, values, query_timeout: this.#options.timeoutMs } as pg.QueryConfig;
    return client.query<R>(config);
  }

  /** The connection `client` is lost (or unusable): drop it; a leader is demoted at once. */
  #lost(client: pg.Client | undefined, reason: string): void {
    if (client !== undefined && client !== this.#client) return;
    this.#client = undefined;
    // A query timed out on a hung network: end() destroys the socket rather than waiting for a goodbye.
    void client?.end().catch(() => undefined);
    this.#problem = reason;
    const fields = { database: this.#options.redactedUrl, reason };
    if (this.#leader) {
      this.#options.logger.error(
        fields,
        'lost the database connection: no longer leader; polling and deferred firewall changes stop until this replica is elected again',
      );
      this.#demote(reason);
      // The next heartbeat was due soon; as a follower it tries again after retryMs like the others, so a
      // replica whose connection just failed does not retake the lock before a healthy one can.
      this.#ticker.postpone(this.#options.retryMs);
    } else if (this.#logged !== reason && !this.#ticker.stopped) {
      this.#options.logger.warn(
        { ...fields, retry_ms: this.#options.retryMs },
        'cannot reach the database for the leader election; retrying',
      );
    }
    this.#logged = reason;
  }

  #demote(reason: string): void {
    this.#leader = false;
    this.#transition(() => this.#options.onDemoted(reason));
  }

  #transition(change: () => void | Promise<void>): void {
    this.#transitions = this.#transitions
      .then(change)
      .catch((error: unknown) => this.#options.logger.error({ reason: this.#describe(error) }, 'changing role failed'));
  }

  #describe(error: unknown): string {
    return reasonOf(this.#scrub, error);
  }
}
