/**
 * Replica membership over the shared PostgreSQL: each replica keeps a row in `ha_replicas` whose heartbeat it
 * refreshes every few seconds; a replica is live while its heartbeat is younger than the lease. Times are the
 * database's (`now()`), so the replicas' clocks never matter. From the live set every replica computes the same
 * share-out of the accounts (ha/assignment.ts).
 */
import type pg from 'pg';

export interface MembershipOptions {
  pool: pg.Pool;
  /** this replica's name, unique among the replicas sharing the database (its row's key) */
  replica: string;
  /** a replica whose heartbeat is older is no longer live, ms */
  leaseMs: number;
}

/** A row of a replica gone for longer than this is deleted by the others' heartbeats, ms. */
const FORGET_AFTER_MS = 24 * 3600_000;

export class Membership {
  readonly #o: MembershipOptions;

  constructor(options: MembershipOptions) {
    this.#o = options;
  }

  get replica(): string {
    return this.#o.replica;
  }

  /**
   * Refreshes this replica's heartbeat and returns the live replicas, this one included, in name order: one
   * statement (the SELECT reads the snapshot before the upsert, hence the UNION with what it wrote). Throws
   * pg's error when the database does not answer.
   */
  async beat(): Promise<string[]> {
    const { rows } = await this.#o.pool.query<{ replica: string }>(
      `WITH beat AS (
         INSERT INTO ha_replicas (replica, heartbeat_at) VALUES ($1, now())
         ON CONFLICT (replica) DO UPDATE SET heartbeat_at = now()
         RETURNING replica
       ), forgotten AS (
         DELETE FROM ha_replicas WHERE heartbeat_at < now() - make_interval(secs => $3::float8 / 1000)
       )
       SELECT replica FROM ha_replicas
        WHERE replica <> $1 AND heartbeat_at > now() - make_interval(secs => $2::float8 / 1000)
       UNION SELECT replica FROM beat
       ORDER BY 1`,
      [this.#o.replica, this.#o.leaseMs, FORGET_AFTER_MS],
    );
    return rows.map((r) => r.replica);
  }

  /** Deletes this replica's row: the others stop counting it at their next heartbeat, not a lease later. */
  async leave(): Promise<void> {
    await this.#o.pool.query('DELETE FROM ha_replicas WHERE replica = $1', [this.#o.replica]);
  }
}
