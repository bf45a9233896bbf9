/**
 * One lease per account over the shared PostgreSQL (`ha_leases`): the replica that leads the account, until
 * when (database time), and an epoch that every claim bumps. A lease is claimed when it is free, expired or
 * already this replica's (then with a new epoch, so that writes of an earlier term of this same replica are
 * refused too), renewed only while it is still current, and released on a handover.
 *
 * Fencing: a write for an account runs in `fenced`, a transaction that first locks the account's lease row
 * `FOR SHARE` and checks that the epoch it carries is the current one and unexpired; otherwise nothing is
 * written (StaleLeaseError). A claim by another replica must update that row, so it waits for a fenced write in
 * flight to commit, and once it has committed every write with the older epoch is refused: a leader that was
 * paused past its lease and wakes up cannot write. A replica paused *inside* such a transaction would keep the
 * row locked and the claim waiting: the transaction sets `idle_in_transaction_session_timeout` to the lease, so
 * PostgreSQL ends that session and the claim goes through (the woken replica's COMMIT then fails).
 */
import type pg from 'pg';
import { StaleLeaseError } from '../../errors.js';

export interface LeasesOptions {
  pool: pg.Pool;
  /** this replica's name (ha_replicas) */
  replica: string;
  /** how long a claim or renewal holds the lease, ms */
  leaseMs: number;
}

/** A lease as the database has it. */
export interface LeaseRow {
  account: string;
  holder: string | null;
  /** bigint as text */
  epoch: string;
  /** whether it is unexpired (database time) */
  live: boolean;
}

const UNTIL = 'now() + make_interval(secs => $3::float8 / 1000)';

/** Who writes for an account under which lease: this replica's name and the epoch it leads under. */
export interface LeaseTerm {
  replica: string;
  /** bigint as text */
  epoch: string;
}

/**
 * Runs one statement a leader makes for `account`: once the replicas share the accounts, in a transaction that
 * first checks the account's lease (`checkLease`), refused with StaleLeaseError (nothing written) under a stale
 * one; otherwise on the pool.
 */
export type AccountWrite = (account: string, sql: string, params: unknown[]) => Promise<void>;

/** An AccountWrite straight on `pool`, unfenced: one leader for every account, or a test. */
export const poolWrite =
  (pool: pg.Pool): AccountWrite =>
  async (_account, sql, params) =>
    void (await pool.query(sql, params));

/**
 * Inside a transaction: locks `account`'s lease row FOR SHARE and throws StaleLeaseError unless `term` is its
 * current, unexpired lease (undefined: this replica does not lead the account, nothing may be written). A claim
 * by another replica updates that row, so it waits for this transaction to end — at most `leaseMs` idle in it.
 */
export async function checkLease(
  query: (sql: string, params: unknown[]) => Promise<{ rowCount: number | null }>,
  account: string,
  term: LeaseTerm | undefined,
  leaseMs: number,
): Promise<void> {
  if (term === undefined) throw new StaleLeaseError(account, 'none');
  // A replica paused inside this transaction (SIGSTOP, a frozen VM) would hold the row's lock, and every other
  // replica's claim would wait for it for ever: PostgreSQL ends a session idle in the transaction past the lease.
  await query("SELECT set_config('idle_in_transaction_session_timeout', $1, true)", [String(Math.ceil(leaseMs))]);
  const { rowCount } = await query(
    `SELECT 1 FROM ha_leases
      WHERE account = $1 AND holder = $2 AND epoch = $3::bigint AND expires_at > now() FOR SHARE`,
    [account, term.replica, term.epoch],
  );
  if (rowCount !== 1) throw new StaleLeaseError(account, term.epoch);
}

export class AccountLeases {
  readonly #o: LeasesOptions;

  constructor(options: LeasesOptions) {
    this.#o = options;
  }

  /** Claims `account`'s lease: its new epoch (bigint as text), or undefined while another replica holds it. */
  async claim(account: string): Promise<string | undefined> {
    const { rows } = await this.#o.pool.query<{ epoch: string }>(
      `INSERT INTO ha_leases (account, holder, epoch, expires_at) VALUES ($1, $2, 1, ${UNTIL})
       ON CONFLICT (account) DO UPDATE
         SET holder = EXCLUDED.holder, epoch = ha_leases.epoch + 1, expires_at = EXCLUDED.expires_at
         WHERE ha_leases.holder IS NULL OR ha_leases.holder = EXCLUDED.holder OR ha_leases.expires_at <= now()
       RETURNING epoch::text`,
      [account, this.#o.replica, this.#o.leaseMs],
    );
    return rows[0]?.epoch;
  }

  /** Extends the lease of `epoch` by the lease time from now; false when it is no longer current (lost). */
  async renew(account: string, epoch: string): Promise<boolean> {
    const { rowCount } = await this.#o.pool.query(
      `UPDATE ha_leases SET expires_at = ${UNTIL}
        WHERE account = $1 AND holder = $2 AND epoch = $4::bigint AND expires_at > now()`,
      [account, this.#o.replica, this.#o.leaseMs, epoch],
    );
    return rowCount === 1;
  }

  /** Gives the lease of `epoch` up, so that the next leader claims it at once; nothing when it is not current. */
  async release(account: string, epoch: string): Promise<void> {
    await this.#o.pool.query(
      'UPDATE ha_leases SET holder = NULL, expires_at = now() WHERE account = $1 AND holder = $2 AND epoch = $3::bigint',
      [account, this.#o.replica, epoch],
    );
  }

  /** Every account's lease, in account order (status, tests). */
  async all(): Promise<LeaseRow[]> {
    const { rows } = await this.#o.pool.query<LeaseRow>(
      'SELECT account, holder, epoch::text AS epoch, expires_at > now() AS live FROM ha_leases ORDER BY account',
    );
    return rows;
  }

  /**
   * Runs `fn` in one transaction that writes for `account` under the lease `epoch`, refused with
   * StaleLeaseError (nothing written) unless that epoch is the account's current, unexpired lease held by this
   * replica. Other errors are pg's, the transaction rolled back.
   */
  async fenced<T>(account: string, epoch: string, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    const client = await this.#o.pool.connect();
    let broken = false;
    // A checked-out client has no pool listener: the session ended under it (the timeout below) must not throw.
    const ended = () => {
      broken = true;
    };
    client.on('error', ended);
    try {
      await client.query('BEGIN');
      await checkLease(
        (sql, params) => client.query(sql, params),
        account,
        { replica: this.#o.replica, epoch },
        this.#o.leaseMs,
      );
      const result = await fn(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      await client.query('ROLLBACK').catch(() => (broken = true));
      throw error;
    } finally {
      // a broken client is discarded, and keeps the listener for its late errors
      if (!broken) client.off('error', ended);
      client.release(broken);
    }
  }
}
