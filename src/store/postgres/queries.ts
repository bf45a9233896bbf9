/**
 * The state store's queries in PostgreSQL's dialect, over any statement runner: the pool (one statement per
 * connection checkout) or one client inside a transaction. Same tables and columns as the SQLite journal
 * (sqlite/database.ts), created by the `journal` migrations (migrations.ts); times are BIGINT Unix milliseconds, ids BIGSERIAL.
 * node-postgres returns BIGINT as a string: rows.ts converts with Number() (ms and ids stay below 2^53).
 */
import type { Decision } from '../decisions.js';
import {
  ENTRY_COLUMNS,
  desiredValues,
  entryValues,
  settlementValues,
  toDesired,
  toEntry,
  VERIFICATION_STATE_SQL,
  type VerificationEnd,
  VERIFYING_SQL,
  VERIFICATION_RECORD_SQL,
  verificationRecord,
  type VerificationRecord,
  type DesiredFirewall,
  type Delivery,
  type ApprovalSettlement,
  type JournalEntry,
  type ListFilter,
  type NewEntry,
  type Row,
  toCircuit,
  type CircuitState,
  CAPPED_DECISIONS_SQL,
  INTERRUPTED_MESSAGE,
  POWER_ACTIONS_SQL,
  SENT_DECISIONS_SQL,
} from '../rows.js';
import type { StateQueries } from '../store.js';

/** Runs one statement; rejects with JournalError. */
export type Run = (sql: string, params?: unknown[]) => Promise<{ rows: Row[]; rowCount: number | null }>;

export class PgQueries implements StateQueries {
  readonly #run: Run;

  constructor(run: Run) {
    this.#run = run;
  }

  async insert(entry: NewEntry): Promise<number> {
    const { rows } = await this.#run(
      `INSERT INTO actions (${ENTRY_COLUMNS})
       VALUES (${ENTRY_COLUMNS.split(',')
         .map((_, i) => `$${i + 1}`)
         .join(', ')}) RETURNING id`,
      entryValues(entry),
    );
    return Number(rows[0]!.id);
  }

  async complete(
    id: number,
    update: { decision: Decision; upstreamOutcome?: string | null; message?: string | null; at: number },
  ): Promise<void> {
    await this.#run(
      'UPDATE actions SET decision = $1, upstream_outcome = $2, message = $3, completed_at = $4 WHERE id = $5',
      [update.decision, update.upstreamOutcome ?? null, update.message ?? null, update.at, id],
    );
  }

  async claimDelivery(key: string, digest: string, actionId: number, at: number): Promise<boolean> {
    // A concurrent transaction's uncommitted claim of the same key makes this wait for it; then it conflicts.
    const result = await this.#run(
      'INSERT INTO deliveries (key, action_id, created_at, request_digest, seen_at) VALUES ($1, $2, $3, $4, $3) ON CONFLICT (key) DO NOTHING',
      [key, actionId, at, digest],
    );
    return result.rowCount === 1;
  }

  async delivery(key: string, seenAt?: number): Promise<Delivery | undefined> {
    const { rows } =
      seenAt === undefined
        ? await this.#run('SELECT action_id, request_digest, created_at FROM deliveries WHERE key = $1', [key])
        : await this.#run(
            'UPDATE deliveries SET seen_at = $2 WHERE key = $1 RETURNING action_id, request_digest, created_at',
            [key, seenAt],
          );
    const row = rows[0];
    return row
      ? {
          actionId: Number(row.action_id),
          digest: row.request_digest as string | null,
          createdAt: Number(row.created_at),
        }
      : undefined;
  }

  async releaseDelivery(key: string, actionId: number): Promise<boolean> {
    const result = await this.#run('DELETE FROM deliveries WHERE key = $1 AND action_id = $2', [key, actionId]);
    return result.rowCount === 1;
  }

  async claimsOf(
    account: string,
    prefix: string,
    since?: number,
  ): Promise<Array<{ actionId: number; createdAt: number }>> {
    const { rows } = await this.#run(
      `SELECT d.action_id, d.created_at FROM deliveries d JOIN actions a ON a.id = d.action_id
         WHERE d.seen_at >= $3 AND left(d.key, length($1)) = $1 AND a.account = $2 ORDER BY d.action_id`,
      [prefix, account, since ?? Number.MIN_SAFE_INTEGER],
    );
    return rows.map((r) => ({ actionId: Number(r.action_id), createdAt: Number(r.created_at) }));
  }

  async sentSince(account: string, since: number): Promise<number> {
    const { rows } = await this.#run(
      `SELECT count(*) AS n FROM actions WHERE account = $1 AND created_at >= $2 AND decision IN ${SENT_DECISIONS_SQL}`,
      [account, since],
    );
    return Number(rows[0]!.n);
  }

  async lastSent(account: string, action: string, serverId: string, ip: string | null): Promise<number | undefined> {
    const { rows } = await this.#run(
      `SELECT max(created_at) AS at FROM actions WHERE account = $1 AND action = $2 AND server_id = $3
         AND ip IS NOT DISTINCT FROM $4 AND decision IN ${SENT_DECISIONS_SQL}`,
      [account, action, serverId, ip],
    );
    return rows[0]!.at === null ? undefined : Number(rows[0]!.at);
  }

  async powerServersSince(account: string, since: number): Promise<string[]> {
    const { rows } = await this.#run(
      `SELECT DISTINCT server_id FROM actions WHERE account = $1 AND created_at >= $2 AND action IN ${POWER_ACTIONS_SQL}
         AND decision <> 'duplicate'`,
      [account, since],
    );
    return rows.map((r) => String(r.server_id));
  }

  async powerActionsOn(account: string, serverId: string, since: number): Promise<number> {
    const { rows } = await this.#run(
      `SELECT count(*) AS n FROM actions WHERE account = $1 AND server_id = $2 AND created_at >= $3
         AND action IN ${POWER_ACTIONS_SQL} AND decision IN ${CAPPED_DECISIONS_SQL}`,
      [account, serverId, since],
    );
    return Number(rows[0]!.n);
  }

  async circuit(account: string): Promise<CircuitState> {
    const { rows } = await this.#run('SELECT * FROM circuit_breakers WHERE account = $1', [account]);
    return toCircuit(rows[0]);
  }

  async openCircuit(account: string, at: number, message: string): Promise<void> {
    await this.#run(
      `INSERT INTO circuit_breakers (account, opened_at, message) VALUES ($1, $2, $3)
       ON CONFLICT (account) DO UPDATE SET opened_at = EXCLUDED.opened_at, message = EXCLUDED.message`,
      [account, at, message],
    );
  }

  async closeCircuit(account: string, at: number): Promise<boolean> {
    // The row as it was before the update: a CTE reads the snapshot the statement started from.
    const { rows } = await this.#run(
      `WITH before AS (SELECT opened_at FROM circuit_breakers WHERE account = $1)
       INSERT INTO circuit_breakers (account, closed_at) VALUES ($1, $2)
       ON CONFLICT (account) DO UPDATE SET opened_at = NULL, closed_at = EXCLUDED.closed_at
       RETURNING (SELECT opened_at FROM before) AS was_open`,
      [account, at],
    );
    return rows[0]?.was_open != null;
  }

  async get(id: number): Promise<JournalEntry | undefined> {
    const { rows } = await this.#run('SELECT * FROM actions WHERE id = $1', [id]);
    return rows[0] ? toEntry(rows[0]) : undefined;
  }

  async settleApproval(id: number, s: ApprovalSettlement): Promise<boolean> {
    // One UPDATE: of two replicas settling the same row at once, the row lock lets exactly one see it awaiting.
    const result = await this.#run(
      `UPDATE actions SET decision = $1, approver = $2, approver_reason = $3, approved_at = $4, completed_at = $5,
         message = $6 WHERE id = $7 AND decision = 'awaiting_approval'`,
      [...settlementValues(s), id],
    );
    return result.rowCount === 1;
  }

  async reopenApproval(
    row: Pick<JournalEntry, 'id' | 'message' | 'completedAt'>,
    approver: string,
    approvedAt: number,
  ): Promise<boolean> {
    const result = await this.#run(
      `UPDATE actions SET decision = 'awaiting_approval', approver = NULL, approver_reason = NULL, approved_at = NULL,
         completed_at = $1, message = $2 WHERE id = $3 AND decision = 'approved' AND approver = $4 AND approved_at = $5`,
      [row.completedAt, row.message, row.id, approver, approvedAt],
    );
    return result.rowCount === 1;
  }

  async awaitingApproval(account: string): Promise<JournalEntry[]> {
    const { rows } = await this.#run(
      "SELECT * FROM actions WHERE account = $1 AND decision = 'awaiting_approval' ORDER BY id LIMIT 1000",
      [account],
    );
    return rows.map(toEntry);
  }

  async verifying(account: string): Promise<JournalEntry[]> {
    const { rows } = await this.#run(
      `SELECT * FROM actions WHERE account = $1 AND ${VERIFYING_SQL} ORDER BY id LIMIT 1000`,
      [account],
    );
    return rows.map(toEntry);
  }

  async settleVerification(id: number, outcome: VerificationEnd, at: number, evidence: string): Promise<boolean> {
    // One UPDATE: of the webhook and a replica's tick ending it at once, exactly one sees it verifying.
    const result = await this.#run(
      `UPDATE actions SET verification = $1, verified_at = $2, verification_evidence = $3 WHERE id = $4 AND ${VERIFYING_SQL}`,
      [outcome, at, evidence, id],
    );
    return result.rowCount === 1;
  }

  async list(filter: ListFilter): Promise<JournalEntry[]> {
    const { rows } = await this.#run(
      `SELECT * FROM actions WHERE ($1::text IS NULL OR account = $1) AND ($2::text IS NULL OR server_id = $2)
         AND ($3::text IS NULL OR action = $3) AND ($5::text IS NULL OR principal = $5)
         AND ($6::text IS NULL OR decision = $6) AND ($7::text IS NULL OR approver = $7)
         AND ($8::bigint IS NULL OR created_at >= $8) AND ($9::text IS NULL OR
           ${VERIFICATION_STATE_SQL} = $9)
         ORDER BY id DESC LIMIT $4`,
      [
        filter.account ?? null,
        filter.serverId ?? null,
        filter.action ?? null,
        filter.limit,
        filter.principal ?? null,
        filter.decision ?? null,
        filter.approver ?? null,
        filter.since ?? null,
        filter.verification ?? null,
      ],
    );
    return rows.map(toEntry);
  }

  async recoverInterrupted(
    account: string,
    at: number,
    startedBefore = Number.MAX_SAFE_INTEGER,
  ): Promise<JournalEntry[]> {
    const { rows } = await this.#run(
      `UPDATE actions SET decision = 'unknown', upstream_outcome = 'interrupted', message = $4, completed_at = $1
       WHERE account = $2 AND decision = 'executing' AND created_at < $3 RETURNING *`,
      [at, account, startedBefore, INTERRUPTED_MESSAGE],
    );
    return rows.map(toEntry);
  }

  async decisionCounts(account: string): Promise<Array<{ action: string; decision: Decision; count: number }>> {
    const { rows } = await this.#run(
      "SELECT action, decision, count(*) AS n FROM actions WHERE account = $1 AND decision != 'executing' GROUP BY action, decision",
      [account],
    );
    return rows.map((r) => ({ action: String(r.action), decision: r.decision as Decision, count: Number(r.n) }));
  }

  async verificationRecords(account: string): Promise<VerificationRecord[]> {
    const { rows } = await this.#run(`${VERIFICATION_RECORD_SQL}$1`, [account]);
    return rows.map(verificationRecord);
  }

  async lastFailures(account: string): Promise<Array<{ action: string; decision: 'failed' | 'unknown'; at: number }>> {
    const { rows } = await this.#run(
      `SELECT action, decision, max(coalesce(completed_at, created_at)) AS at FROM actions
       WHERE account = $1 AND decision IN ('failed', 'unknown') GROUP BY action, decision`,
      [account],
    );
    return rows.map((r) => ({
      action: String(r.action),
      decision: r.decision as 'failed' | 'unknown',
      at: Number(r.at),
    }));
  }

  async prune(before: number, batch: number): Promise<number> {
    const keys = await this.#run(
      'DELETE FROM deliveries WHERE key IN (SELECT key FROM deliveries WHERE coalesce(seen_at, created_at) < $1 LIMIT $2)',
      [before, batch],
    );
    const rows = await this.#run(
      `DELETE FROM actions WHERE id IN (SELECT id FROM actions WHERE created_at < $1 AND decision != 'executing'
         AND NOT EXISTS (SELECT 1 FROM deliveries WHERE deliveries.action_id = actions.id) ORDER BY id LIMIT $2)`,
      [before, batch],
    );
    return Math.max(keys.rowCount ?? 0, rows.rowCount ?? 0);
  }

  async desired(account: string, serverId: string, ip: string): Promise<DesiredFirewall | undefined> {
    const { rows } = await this.#run(
      'SELECT * FROM firewall_desired WHERE account = $1 AND server_id = $2 AND ip = $3',
      [account, serverId, ip],
    );
    return rows[0] ? toDesired(rows[0]) : undefined;
  }

  async allDesired(account: string): Promise<DesiredFirewall[]> {
    const { rows } = await this.#run('SELECT * FROM firewall_desired WHERE account = $1', [account]);
    return rows.map(toDesired);
  }

  async dueDesired(account: string, at: number): Promise<DesiredFirewall[]> {
    const { rows } = await this.#run(
      'SELECT * FROM firewall_desired WHERE account = $1 AND pending = 1 AND due_at <= $2 ORDER BY due_at',
      [account, at],
    );
    return rows.map(toDesired);
  }

  async pendingCount(account: string): Promise<number> {
    const { rows } = await this.#run('SELECT count(*) AS n FROM firewall_desired WHERE account = $1 AND pending = 1', [
      account,
    ]);
    return Number(rows[0]!.n);
  }

  async saveDesired(d: DesiredFirewall): Promise<void> {
    await this.#run(
      `INSERT INTO firewall_desired (account, server_id, ip, desired_state, due_at, pending, attempts, applied_state, applied_at, cooldown_ms, principal)
       VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
       ON CONFLICT (account, server_id, ip) DO UPDATE SET desired_state = excluded.desired_state, due_at = excluded.due_at,
         pending = excluded.pending, attempts = excluded.attempts, applied_state = excluded.applied_state,
         applied_at = excluded.applied_at, cooldown_ms = excluded.cooldown_ms,
         principal = excluded.principal`,
      desiredValues(d),
    );
  }

  async retireMissing(
    account: string,
    isOwned: (serverId: string, ip: string) => boolean,
    at: number,
    retireBefore: number,
  ): Promise<Array<{ serverId: string; ip: string }>> {
    const { rows } = await this.#run('SELECT server_id, ip, missing_since FROM firewall_desired WHERE account = $1', [
      account,
    ]);
    const change = {
      clear: { servers: [] as string[], ips: [] as string[] },
      mark: { servers: [] as string[], ips: [] as string[] },
    };
    for (const r of rows) {
      const owned = isOwned(String(r.server_id), String(r.ip));
      const side =
        owned && r.missing_since !== null ? change.clear : !owned && r.missing_since === null ? change.mark : undefined;
      side?.servers.push(String(r.server_id));
      side?.ips.push(String(r.ip));
    }
    const pairs = '(server_id, ip) IN (SELECT * FROM unnest($2::text[], $3::text[]))';
    if (change.clear.servers.length > 0)
      await this.#run(`UPDATE firewall_desired SET missing_since = NULL WHERE account = $1 AND ${pairs}`, [
        account,
        change.clear.servers,
        change.clear.ips,
      ]);
    if (change.mark.servers.length > 0)
      await this.#run(
        `UPDATE firewall_desired SET missing_since = $4 WHERE account = $1 AND ${pairs} AND missing_since IS NULL`,
        [account, change.mark.servers, change.mark.ips, at],
      );
    const deleted = await this.#run(
      'DELETE FROM firewall_desired WHERE account = $1 AND missing_since IS NOT NULL AND missing_since < $2 RETURNING server_id, ip',
      [account, retireBefore],
    );
    return deleted.rows.map((r) => ({ serverId: String(r.server_id), ip: String(r.ip) }));
  }
}
