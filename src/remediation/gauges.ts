/**
 * The remediation engine's gauges and counters: read back from the store when the engine starts (rows a crash
 * left `executing` are recovered as `unknown` first); the gauges are read again after every decision and by
 * the leader's ticker every CIRCUIT_REFRESH_MS (engine.ts), their series being the leader's only.
 */
import type { Logger } from 'pino';
import type { Config } from '../config/types.js';
import type { Metrics } from '../metrics/definitions.js';
import type { StateStore } from '../store/store.js';
import type { DesiredRows } from './desired-rows.js';
import { budgetLeft } from './guards.js';
import { POWER_ACTIONS } from './types.js';
import { VERIFICATION_OUTCOMES } from './verify.js';
import { verifiedByAttack } from './verify-attack.js';

/** What the gauges read and set: the engine's dependencies (engine.ts `EngineDeps`) they need. */
export interface GaugeDeps {
  account: string;
  store: StateStore;
  metrics: Metrics;
  logger: Logger;
  config: Config['remediation'];
  /** the desired firewall state rows as their series show them; absent: no such series */
  desired?: DesiredRows | undefined;
  /** rows `executing` for longer than this (ms) are recovered at start; unset: every one */
  interruptedAfterMs?: number;
}

export class RemediationGauges {
  readonly #deps: GaugeDeps;
  readonly #now: () => number;
  /** the actions whose `baremetal_action_awaiting_approval` series was set (a series is set to 0, never removed) */
  readonly #approvalSeries = new Set<string>();
  /** when the store was last read (`refresh`), ms */
  readAt = -Infinity;
  /** the desired firewall state rows' reads (refresh) */
  readonly #desiredRead = new LatestRead();
  /** the circuit breaker gauge's reads (refresh) */
  readonly #circuitRead = new LatestRead();
  /** the pending gauge's reads (refresh) */
  readonly #pendingRead = new LatestRead();
  /** the awaiting-approval gauge's reads (refresh) */
  readonly #awaitingRead = new LatestRead();
  /** the budget gauge's reads (refresh) */
  readonly #budgetRead = new LatestRead();

  /** `now`: ms since epoch. */
  constructor(deps: GaugeDeps, now: () => number) {
    this.#deps = deps;
    this.#now = now;
  }

  /**
   * Recovers the rows a previous run left `executing`, and rebuilds the counters and gauges from the store.
   * Never rejects: a failure is logged, the counters then start from zero.
   */
  async restore(): Promise<void> {
    const { account, store, logger, metrics } = this.#deps;
    try {
      const at = this.#now();
      const before = this.#deps.interruptedAfterMs === undefined ? undefined : at - this.#deps.interruptedAfterMs;
      for (const row of await store.recoverInterrupted(account, at, before)) {
        logger.warn(
          { journal_id: row.id, action: row.action, server_id: row.serverId, ip: row.ip, principal: row.principal },
          'journal row left executing by a previous run: outcome unknown (the API may have acted); it counts for cooldown and budget',
        );
      }
      this.initSeries(true);
      // Decision metrics are rebuilt from the journal, so a restart loses none (failed and unknown included).
      for (const c of await store.decisionCounts(account))
        metrics.actionRequests.inc({ account, action: c.action, decision: c.decision }, c.count);
      // So are the verification outcomes and the recovery times (issue 41), from the rows that ended one.
      for (const v of await store.verificationRecords(account)) {
        metrics.remediationVerifications.inc({ account, action: v.action, rule: v.rule, outcome: v.outcome });
        if (v.outcome === 'verified' && !verifiedByAttack(v))
          metrics.remediationRecovery.observe({ account, action: v.action }, (v.verifiedAt - v.calledAt) / 1000);
      }
      for (const f of await store.lastFailures(account))
        metrics.actionLastFailure.set({ account, action: f.action, decision: f.decision }, f.at / 1000);
      await this.refresh();
    } catch (error) {
      logger.error({ err: error }, 'reading the remediation state back from the journal failed');
    }
  }

  /**
   * Creates at 0 the series an alert or a panel takes `increase()` of, so that the first event counts (a series
   * born at 1 shows no increase): `escalated` of every power action, and per rule with `verify_within` (or a
   * ladder) the verification outcomes of its actions and, at start (`atStart`: before the journal's are
   * observed, as zeroing a histogram resets it), their recovery histogram. Called at start and after a reload
   * changed the rules.
   */
  initSeries(atStart = false): void {
    const { account, metrics, config } = this.#deps;
    for (const action of POWER_ACTIONS) metrics.actionRequests.inc({ account, action, decision: 'escalated' }, 0);
    // An awaiting-approval series for each action a rule or ladder step requires approval for (set at the next
    // refresh): from the config, so that a replica that becomes leader shows the same series as the one before.
    for (const rule of config.rules)
      for (const step of [rule, ...(rule.steps ?? [])]) if (step.requireApproval) this.#approvalSeries.add(step.action);
    for (const rule of config.rules) {
      const verified = [rule, ...(rule.steps ?? [])].filter((r) => r.verifyWithinMs !== undefined);
      for (const { action } of verified) {
        for (const outcome of VERIFICATION_OUTCOMES)
          metrics.remediationVerifications.inc({ account, action, rule: rule.alertname, outcome }, 0);
        if (atStart) metrics.remediationRecovery.zero({ account, action });
      }
    }
  }

  /**
   * Reads again what another replica may have changed in the shared store, and sets what shows it: the pending,
   * awaiting-approval, budget and circuit-breaker gauges, and the desired firewall state rows their series show
   * (desired-rows.ts). Called at start, after each decision, and by the leader's ticker (engine.ts, every
   * CIRCUIT_REFRESH_MS and after applying due changes). Their series are the leader's only
   * (metrics/definitions.ts LEADER_ONLY_METRICS): a follower decides too, and so reads them then, but never
   * ticks, so its values would go stale. Throws JournalError.
   */
  async refresh(): Promise<void> {
    const { metrics, store, account, desired, config } = this.#deps;
    this.readAt = this.#now();
    // The ticker's read and a decision's run at once; with PostgreSQL on two connections, the one started
    // before a commit may answer after the one started after it: only the latest-started reply counts.
    await this.#desiredRead.apply(
      () => store.allDesired(account),
      (rows) => desired?.replace(rows),
    );
    await this.#circuitRead.apply(
      () => store.circuit(account),
      (circuit) => metrics.remediationCircuitOpen.set({ account }, circuit.openedAt === null ? 0 : 1),
    );
    await this.#pendingRead.apply(
      () => store.pendingCount(account),
      (pending) => metrics.actionPending.set({ account, action: 'firewall_state' }, pending),
    );
    await this.#awaitingRead.apply(
      () => store.awaitingApproval(account),
      (awaiting) => {
        // A series per action seen waiting (an operator's require_approval) besides the rules' (initSeries): set
        // to 0 afterwards, never removed. Apart from baremetal_action_pending, whose alert
        // (BaremetalRemediationPendingStuck) is about firewall changes.
        for (const row of awaiting) this.#approvalSeries.add(row.action);
        for (const action of this.#approvalSeries)
          metrics.actionAwaitingApproval.set(
            { account, action },
            awaiting.filter((row) => row.action === action).length,
          );
      },
    );
    await this.#budgetRead.apply(
      () => budgetLeft(store, account, config.budgetPerHour, this.#now()),
      (left) => metrics.actionBudgetRemaining.set({ account }, Math.max(0, left)),
    );
  }
}

/**
 * Applies the replies of one kind of read in the order the reads started: a reply to a read started before
 * one already applied is older than what is shown, and is dropped.
 */
class LatestRead {
  /** reads started, in order: each read's number */
  #started = 0;
  /** the number of the read applied last */
  #applied = 0;

  async apply<T>(read: () => Promise<T>, apply: (value: T) => void): Promise<void> {
    const number = ++this.#started;
    const value = await read();
    if (number < this.#applied) return;
    this.#applied = number;
    apply(value);
  }
}
