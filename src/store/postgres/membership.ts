/**
 * Replica membership over the shared PostgreSQL: each replica keeps a row in `ha_replicas` whose heartbeat it
 * refreshes every few seconds; a replica is live while its heartbeat is younger than the lease. Times are the
 * database's (`now()`), so the replicas' clocks never matter. With its heartbeat a replica publishes its terms
 * (ha/terms.ts: the leadership model, the account set and its digest) and its boot identity; from the live
 * rows every replica judges whether it agrees, and the agreeing ones compute the same share-out of the accounts
 * (ha/assignment.ts).
 *
 * A name is held by one process: a heartbeat does not overwrite a live row of another boot (two replicas with
 * one `replica_name`); the row is taken over once it is older than the lease (the process died) or deleted (it
 * left).
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import { ADVISORY_LOCKS } from './bounds.js';

/** The leadership model: one leader per account (`database.share_accounts`) or one for every account. */
export type HaMode = 'shared' | 'single';

/** What a replica publishes with its heartbeat: what the split depends on (ha/terms.ts builds and judges it). */
export interface Terms {
  mode: HaMode;
  /** the configured account names, in name order */
  accounts: readonly string[];
  /** SHA-256 (hex, 32 characters) over each account's name and base URL, in name order */
  digest: string;
}

/** A live replica as its heartbeat row says (`terms` absent: a version that publishes none). */
export interface Member {
  replica: string;
  /** random per process; null from a version that publishes none */
  bootId: string | null;
  /** when this boot of the replica first beat, ms since the epoch (database time) */
  startedAt: number;
  /** how long ago its heartbeat was written, ms (database time; 0 for the row this heartbeat wrote) */
  heartbeatAgeMs?: number;
  terms: Terms | undefined;
}

export interface MembershipOptions {
  pool: pg.Pool;
  /** this replica's name, unique among the replicas sharing the database (its row's key) */
  replica: string;
  /** a replica whose heartbeat is older is no longer live, ms */
  leaseMs: number;
  /** what this replica publishes with its heartbeat */
  terms: Terms;
  /** this process's boot identity (default: a random UUID) */
  bootId?: string;
}

/** What one heartbeat read: the live rows, and whether the single leader's advisory lock is held. */
export interface Beat {
  /** every live row, in name order: this replica's (when its heartbeat was written) and a live holder of its name */
  live: Member[];
  /** some session holds the advisory lock of the single-leader mode (ha/leader.ts) */
  singleLeaderLocked: boolean;
}

/** A row of a replica gone for longer than this is deleted by the others' heartbeats, ms. */
const FORGET_AFTER_MS = 24 * 3600_000;

/** pg_locks shows a bigint advisory key as its high and low 32 bits (objsubid 1). */
const LEADER_LOCK = {
  classid: Number(ADVISORY_LOCKS.leader >> 32n),
  objid: Number(ADVISORY_LOCKS.leader & 0xffff_ffffn),
};

interface MemberRow {
  replica: string;
  boot_id: string | null;
  started_ms: string;
  mode: string | null;
  accounts: string[] | null;
  accounts_digest: string | null;
  age_ms: string;
}

export class Membership {
  readonly #o: MembershipOptions & { bootId: string };

  constructor(options: MembershipOptions) {
    this.#o = { ...options, bootId: options.bootId ?? randomUUID() };
  }

  get replica(): string {
    return this.#o.replica;
  }

  get bootId(): string {
    return this.#o.bootId;
  }

  get terms(): Terms {
    return this.#o.terms;
  }

  /**
   * Refreshes this replica's heartbeat (unless a live process of another boot holds its name) and returns the
   * live rows: one statement (the SELECT reads the snapshot before the upsert, hence the UNION with what it
   * wrote). Throws pg's error when the database does not answer.
   */
  async members(): Promise<Beat> {
    const { replica, bootId, terms, leaseMs } = this.#o;
    const live = 'now() - make_interval(secs => $2::float8 / 1000)';
    const columns = `replica, boot_id, (extract(epoch FROM started_at) * 1000)::bigint::text AS started_ms, mode,
                     accounts, accounts_digest,
                     (extract(epoch FROM now() - heartbeat_at) * 1000)::bigint::text AS age_ms`;
    const { rows } = await this.#o.pool.query<MemberRow & { locked: boolean }>(
      `WITH beat AS (
         INSERT INTO ha_replicas (replica, heartbeat_at, started_at, boot_id, mode, accounts, accounts_digest)
         VALUES ($1, now(), now(), $4, $5, $6::text[], $7)
         ON CONFLICT (replica) DO UPDATE
           SET heartbeat_at = now(),
               started_at = CASE WHEN ha_replicas.boot_id = EXCLUDED.boot_id THEN ha_replicas.started_at ELSE now() END,
               boot_id = EXCLUDED.boot_id, mode = EXCLUDED.mode, accounts = EXCLUDED.accounts,
               accounts_digest = EXCLUDED.accounts_digest
           WHERE ha_replicas.boot_id = EXCLUDED.boot_id OR ha_replicas.heartbeat_at <= ${live}
         RETURNING ${columns}
       ), forgotten AS (
         DELETE FROM ha_replicas WHERE heartbeat_at < now() - make_interval(secs => $3::float8 / 1000)
       ), locked AS (
         -- advisory locks are per database: another database of the same server is another deployment
         SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted AND classid = $8
                        AND objid = $9 AND objsubid = 1
                        AND database = (SELECT oid FROM pg_database WHERE datname = current_database())) AS locked
       )
       SELECT m.*, locked.locked FROM (
         SELECT ${columns} FROM ha_replicas
          WHERE heartbeat_at > ${live} AND NOT (replica = $1 AND boot_id IS NOT DISTINCT FROM $4)
         UNION ALL SELECT * FROM beat
       ) m RIGHT JOIN locked ON true
       ORDER BY m.replica`,
      [
        replica,
        leaseMs,
        FORGET_AFTER_MS,
        bootId,
        terms.mode,
        terms.accounts,
        terms.digest,
        LEADER_LOCK.classid,
        LEADER_LOCK.objid,
      ],
    );
    // The written row replaces what the snapshot had of this boot's (the filter above), so no replica twice.
    const members = rows.filter((r) => r.replica !== null).map(member);
    return { live: members, singleLeaderLocked: rows[0]?.locked === true };
  }

  /** Refreshes this replica's heartbeat and returns the live replicas' names, this one included, in name order. */
  async beat(): Promise<string[]> {
    return [...new Set((await this.members()).live.map((m) => m.replica))];
  }

  /** Deletes this replica's row (not another boot's): the others stop counting it at their next heartbeat. */
  async leave(): Promise<void> {
    await this.#o.pool.query('DELETE FROM ha_replicas WHERE replica = $1 AND boot_id = $2', [
      this.#o.replica,
      this.#o.bootId,
    ]);
  }
}

function member(row: MemberRow): Member {
  const mode: HaMode | undefined = row.mode === 'shared' || row.mode === 'single' ? row.mode : undefined;
  const terms =
    mode !== undefined && row.accounts !== null && row.accounts_digest !== null
      ? { mode, accounts: row.accounts, digest: row.accounts_digest }
      : undefined;
  return {
    replica: row.replica,
    bootId: row.boot_id,
    startedAt: Number(row.started_ms),
    heartbeatAgeMs: Number(row.age_ms),
    terms,
  };
}
