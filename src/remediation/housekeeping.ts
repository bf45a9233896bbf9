/**
 * Keeps the journal bounded: desired firewall state of servers gone from the server list, or of IPs their
 * server no longer owns, for `remediation.retire_after` is retired (rows and `baremetal_firewall_desired_state`
 * series), and journal rows older than
 * `remediation.journal_retention` are pruned (`pruneEveryMs`) in small batches, yielding between them so that a large
 * backlog never blocks the event loop. Rows a delivery key or a pending change still needs are kept
 * (the store's `prune`).
 */
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { Config } from '../config/types.js';
import type { StateQueries } from '../store/store.js';
import type { Metrics } from '../metrics/definitions.js';
import type { DesiredRows } from './desired-rows.js';
import type { TargetDirectory } from './types.js';

/** Rows deleted per statement when pruning. */
export const PRUNE_BATCH = 500;
/** How often the server list is compared with the desired state, ms. */
const RETIRE_EVERY_MS = 60_000;
/** How often old rows are pruned at most, ms. */
const PRUNE_EVERY_MS = 3_600_000;

/**
 * How often old rows are pruned under `retentionMs` (ms): hourly, or every tenth of a shorter retention (at
 * least a minute), so that no row outlives the retention by more than a tenth of it (issue 32: a 10-minute
 * retention pruned hourly kept up to 70 minutes of rows).
 */
export function pruneEveryMs(retentionMs: number): number {
  return Math.max(RETIRE_EVERY_MS, Math.min(PRUNE_EVERY_MS, retentionMs / 10));
}

/** What the housekeeping needs of the engine's dependencies. */
export interface HousekeepingDeps {
  /** the account whose desired state is retired; pruning is journal-wide */
  account: string;
  store: StateQueries;
  metrics: Metrics;
  logger: Logger;
  targets: TargetDirectory;
  config: Config['remediation'];
  /** the desired firewall state rows as their series show them (see EngineDeps) */
  desired?: DesiredRows | undefined;
  /** a shared store: rows `executing` longer than this (ms) are recovered as `unknown` (see EngineDeps) */
  interruptedAfterMs?: number;
  /** one process: the same, for rows whose completion could not be written (see EngineDeps) */
  stuckAfterMs?: number;
}

export class Housekeeping {
  readonly #deps: HousekeepingDeps;
  #retiredAt = -Infinity;
  #prunedAt = -Infinity;

  constructor(deps: HousekeepingDeps) {
    this.#deps = deps;
  }

  /** Runs what is due at `now` (ms). */
  async run(now: number): Promise<void> {
    if (now - this.#retiredAt >= RETIRE_EVERY_MS) {
      this.#retiredAt = now;
      await this.retire(now);
      await this.recoverInterrupted(now);
    }
    if (now - this.#prunedAt >= pruneEveryMs(this.#deps.config.journalRetentionMs)) {
      this.#prunedAt = now;
      await this.prune(now);
    }
  }

  /**
   * Rows left `executing` longer than any call in flight can be become `unknown`: with a shared store, left by
   * a replica that died mid-call; in one process, rows whose completion could not be written. The API may
   * have acted: they still count for cooldown and budget.
   */
  async recoverInterrupted(now: number): Promise<number> {
    const { account, store, logger } = this.#deps;
    const afterMs = this.#deps.interruptedAfterMs ?? this.#deps.stuckAfterMs;
    if (afterMs === undefined) return 0;
    const rows = await store.recoverInterrupted(account, now, now - afterMs);
    for (const row of rows)
      logger.warn(
        { journal_id: row.id, action: row.action, server_id: row.serverId, ip: row.ip },
        'journal row left executing past any call in flight (a replica that stopped mid-call, or a completion not written): outcome unknown (the API may have acted); it counts for cooldown and budget',
      );
    return rows.length;
  }

  /**
   * Marks desired state of (server, IP) pairs whose server is unlisted or no longer owns the IP, and retires what
   * has been so for `remediation.retire_after`. Returns the rows retired.
   */
  async retire(now: number): Promise<number> {
    const { account, store, desired, logger, targets, config } = this.#deps;
    // Before the first server list every server would look gone.
    if (!targets.serversKnown) return 0;
    const owned = (id: string, ip: string) => targets.hasServer(id) && targets.ownsIp(id, ip);
    const retired = await store.retireMissing(account, owned, now, now - config.retireAfterMs);
    // Their series go with the rows (desired-rows.ts): read back from the store.
    if (retired.length > 0 && desired) desired.replace(await store.allDesired(account));
    if (retired.length > 0)
      logger.info(
        { retired: retired.length, retire_after_ms: config.retireAfterMs },
        'desired firewall state of servers gone from the server list, or of IPs their server no longer owns, retired',
      );
    return retired.length;
  }

  /** Deletes rows older than the retention, PRUNE_BATCH per statement. Returns the rows deleted. */
  async prune(now: number): Promise<number> {
    const { store, logger, config } = this.#deps;
    const before = now - config.journalRetentionMs;
    let total = 0;
    for (;;) {
      const n = await store.prune(before, PRUNE_BATCH);
      total += n;
      if (n < PRUNE_BATCH) break;
      await yieldToLoop();
    }
    if (total > 0)
      logger.info(
        { pruned: total, retention_ms: config.journalRetentionMs },
        'journal rows older than the retention pruned',
      );
    return total;
  }
}
