/**
 * The PostgreSQL backend's constants that parts not talking to the database need too: advisory lock ids (listed
 * here, one place, so that no two parts pick the same) and the pool's limits. Apart from pool.ts so that reading
 * them does not load node-postgres (issue 53: a deployment on SQLite never loads `pg`).
 */
/** Session-level advisory lock ids (bigint; these are arbitrary constants, stable across versions). */
export const ADVISORY_LOCKS = {
  /** held while migrations are applied */
  migrations: 0x6d78_0001n,
  /** held by the leader for as long as it leads (session level, on its own connection) */
  leader: 0x6d78_0002n,
} as const;

/**
 * The transaction-level advisory lock key of an account's decisions (`$1`: the account name), taken with
 * `pg_advisory_xact_lock` by every guard decision: derived from the name, in the same bigint space as the ids
 * above (a collision with them is a 2^-64 chance and would only make a decision wait).
 */
export const ACCOUNT_LOCK_KEY = "hashtextextended('bmx:' || $1, 0)";

/** Bounds of every connection: how long to wait for a connection and for a statement, in ms. */
export interface PoolLimits {
  /** connections at most */
  max: number;
  /** giving up on connecting after, ms */
  connectTimeoutMs: number;
  /** a statement running longer is cancelled by the server (statement_timeout), ms */
  statementTimeoutMs: number;
  /** an idle connection is closed after, ms */
  idleTimeoutMs: number;
}

export const DEFAULT_POOL_LIMITS: PoolLimits = {
  max: 10,
  connectTimeoutMs: 5_000,
  statementTimeoutMs: 10_000,
  idleTimeoutMs: 30_000,
};
