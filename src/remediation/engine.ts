/**
 * The remediation engine: decides on every request and executes the allowed ones. Each request is
 * journaled, with its delivery key claimed, in one journal transaction before any upstream call. Inside
 * it the guards (guards.ts) run in this order: idempotency (`checkDelivery`), target (`checkTarget`);
 * a power action then through the attack corroboration (`checkAttack`, unless an operator forces it) and the
 * account's circuit breaker (`checkCircuit`); then a firewall-state request becomes desired state
 * (desired-firewall.ts: hold, 2-minute window, budget); any other action goes on through cooldown
 * (`checkCooldown`), the cap per server (`checkCap`, power actions), dry run, and the hourly budget
 * (`budgetLeft`). The row is completed after the call with what the API said: `executed` only on an
 * explicit success, `failed` when it said no, `unknown` when it may have acted without saying so.
 *
 * One engine per account, over the daemon's one journal: the engine is built with the account's client,
 * server list and metrics, and every journal query it makes (cooldown, budget, desired state, recovery)
 * names its account. A decision is still one journal transaction, and the code that decides never has to
 * pick a client: it has only one.
 *
 * The store is asynchronous (SQLite or PostgreSQL, store/store.ts): a decision is one `transaction(account, …)`, which
 * on PostgreSQL serializes the account's decisions across replicas. A delivery key claimed concurrently by a
 * transaction the account lock did not serialize (another account's, with the same key) conflicts: the decision
 * is rolled back and decided again, and then finds the key taken.
 */
import type { Logger } from 'pino';
import type { Config } from '../config/schema.js';
import { DATABASE_UNREACHABLE } from '../config/database-url.js';
import { JournalError, NotFoundError, NotReadyError } from '../errors.js';
import { labelsJson, type JournalEntry, type NewEntry } from '../store/rows.js';
import { Approvals } from './approvals.js';
import type { StateQueries, StateStore } from '../store/store.js';
import type { Metrics } from '../metrics/definitions.js';
import type { UpstreamClient } from '../upstream/client.js';
import { getConsole, power } from '../upstream/dedicated.js';
import { setFirewallSensitivity, setFirewallState } from '../upstream/firewall.js';
import type { Sensitivity } from '../config/api-terms.js';
import { type Decided, type DecideFn, DesiredFirewallState } from './desired-firewall.js';
import {
  budgetLeft,
  checkAttack,
  checkCap,
  checkCircuit,
  checkCooldown,
  checkDelivery,
  checkTarget,
  type Denial,
} from './guards.js';
import { Housekeeping } from './housekeeping.js';
import { failureDecision, failureOutcome, requestDigest } from './outcome.js';
import { type ActionDecision, type ActionRequest, POWER_ACTIONS, type TargetDirectory } from './types.js';

export interface EngineDeps {
  /** the account this engine acts for: its requests must name it */
  account: string;
  /** the state store (SQLite or PostgreSQL), shared by every account's engine */
  store: StateStore;
  client: UpstreamClient;
  metrics: Metrics;
  logger: Logger;
  targets: TargetDirectory;
  config: Config['remediation'];
  /**
   * The period of `schedules.firewall`, ms (read per decision: a reload may change it); a history older than
   * STALE_AFTER_FIREWALL_PERIODS of it leaves the attack state unknown (guards.ts `checkAttack`).
   */
  firewallPeriodMs: () => number;
  /** ms since epoch */
  now?: () => number;
  /** called after every decision (the daemon re-renders the exposition) */
  onDecision?: () => void;
  /**
   * With a store shared by replicas: how long (ms) a row may stay `executing` while its call is still in
   * flight on another replica (the account's upstream.timeout, one attempt per write, plus a margin). Older
   * rows were left by a replica that died mid-call: they are recovered as `unknown` at start and then by the
   * leader's housekeeping. Unset (one process, SQLite): every `executing` row at start was left by a crash.
   */
  interruptedAfterMs?: number;
}

export class RemediationEngine {
  readonly #deps: EngineDeps;
  readonly #now: () => number;
  readonly #housekeeping: Housekeeping;
  readonly #firewall: DesiredFirewallState;
  readonly #approvals: Approvals;
  /** the actions whose `baremetal_action_pending` series was set (a series is set to 0, never removed) */
  /** the actions whose `baremetal_action_awaiting_approval` series was set */
  readonly #approvalSeries = new Set<string>();
  #timer: NodeJS.Timeout | undefined;
  #ticking: Promise<void> | undefined;
  /** aborts the tick in progress: checked before each pending change is sent (stop(), i.e. demotion) */
  #tickAbort: AbortController | undefined;
  /** the last tick failed on the journal (logged once until a tick succeeds) */
  #tickFailing = false;
  /** when the circuit breaker's gauge was last read from the store, ms */
  #circuitReadAt = -Infinity;

  constructor(deps: EngineDeps) {
    this.#deps = deps;
    this.#now = deps.now ?? Date.now;
    this.#housekeeping = new Housekeeping(deps);
    this.#firewall = new DesiredFirewallState({
      ...deps,
      now: this.#now,
      record: (action, result, failedAt) => this.#record(action, result, failedAt),
    });
    this.#approvals = new Approvals({
      ...deps,
      now: this.#now,
      request: (req) => this.request(req),
      record: (action, result) => this.#record(action, result),
    });
    const { store, logger } = deps;
    if (store.unavailable !== undefined)
      logger.error(
        { reason: store.unavailable },
        'remediation disabled: the journal is unavailable; polling and /metrics go on, the action endpoints answer 503',
      );
    this.ready = store.opened.then((open) => (open ? this.#restore() : undefined));
  }

  /**
   * Resolves once the engine has read its state back (interrupted rows, counters, gauges) after the store
   * opened; never rejects (a failure is logged, the counters then start from zero).
   */
  readonly ready: Promise<void>;

  async #restore(): Promise<void> {
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
      // Decision metrics are rebuilt from the journal, so a restart loses none (failed and unknown included).
      for (const c of await store.decisionCounts(account))
        metrics.actionRequests.inc({ action: c.action, decision: c.decision }, c.count);
      for (const f of await store.lastFailures(account))
        metrics.actionLastFailure.set({ action: f.action, decision: f.decision }, f.at / 1000);
      for (const d of await store.allDesired(account))
        metrics.firewallDesiredState.set({ server_id: d.serverId, ip: d.ip }, Number(d.desiredState));
      await this.#refreshGauges();
    } catch (error) {
      logger.error({ err: error }, 'reading the remediation state back from the journal failed');
    }
  }

  /** Starts applying due firewall changes every `intervalMs` (unref'd), and the housekeeping. */
  start(intervalMs = 1000): void {
    this.#timer ??= setInterval(() => void this.tick(), intervalMs).unref();
  }

  /**
   * Stops the ticker and aborts a tick in progress: a call already sent is let finish (aborting it would
   * leave its outcome unknown), no further pending change is sent. Called when this replica stops leading,
   * so a demoted leader does not go on sending besides the journal's per-change check. Resolves when the
   * tick has ended.
   */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.#tickAbort?.abort();
    await this.#ticking;
  }

  /** Decides on one request; executes it when every guard allows. Throws JournalError, NotReadyError, IdempotencyMismatchError. */
  async request(req: ActionRequest): Promise<ActionDecision> {
    const { account, store, config } = this.#deps;
    // The route picks the engine by the request's account; a mismatch is a bug, never a guess.
    if (req.account !== account)
      throw new Error(`request for account ${req.account} given to the engine of account ${account}`);
    this.#requireUsable();
    const now = this.#now();
    const entry: NewEntry = {
      account,
      createdAt: now,
      source: req.source,
      action: req.action,
      serverId: req.serverId,
      ip: req.ip ?? null,
      value: req.value ?? null,
      alertname: req.alert?.alertname ?? null,
      fingerprint: req.alert?.fingerprint ?? null,
      startsAt: req.alert?.startsAt ?? null,
      labels: labelsJson(req.alert?.labels),
      alertStatus: req.alert?.status ?? null,
      decision: 'executing',
      principal: req.principal,
      reason: req.reason ?? null,
      approver: req.approval?.by ?? null,
      approvedAt: req.approval?.at ?? null,
    };
    const needsApproval = req.requireApproval === true && req.approval === undefined;
    const awaiting = `awaiting approval by an operator other than ${req.principal} until ${new Date(now + config.approvalTimeoutMs).toISOString()}; nothing sent`;
    const digest = requestDigest(req);
    const forced = req.force === true && POWER_ACTIONS.has(req.action);
    /** A forced power call says so in its row's message, whatever the decision. */
    const note = (message: string) => (forced ? (message ? `${FORCED}; ${message}` : FORCED) : message);
    await this.ready;
    let desiredRecorded = false;
    /** One decision: checks, the row and the claim, in one transaction (`tx`). */
    const decideIn = async (tx: StateQueries): Promise<Decided> => {
      desiredRecorded = false;
      const decide: DecideFn = async (decision, message, claim) => {
        const id = await tx.insert({ ...entry, decision, message: note(message) });
        if (claim && req.idempotencyKey !== undefined && !(await tx.claimDelivery(req.idempotencyKey, digest, id, now)))
          throw new ClaimConflict();
        return decision === 'executing'
          ? { id, decision: 'executed', message: '', send: true }
          : { id, decision, message, send: false };
      };
      const denial = (await checkDelivery(tx, req, digest, now)) ?? checkTarget(this.#deps.targets, req);
      if (denial) return decide(denial.decision, denial.message, false);
      // Not claimed: the attack may end, an operator may close the breaker, and another replica (the
      // leader, which has the attack data) decides on the same delivery.
      const powerDenial = await this.#powerGuards(tx, req, now);
      if (powerDenial) return decide(powerDenial.decision, powerDenial.message, false);
      // Firewall state is desired state: a change inside its window is deferred, not denied; one that needs
      // approval becomes desired state only once approved.
      if (req.action === 'firewall_state' && needsApproval) return decide('awaiting_approval', awaiting, true);
      if (req.action === 'firewall_state') {
        desiredRecorded = true;
        return this.#firewall.decide(req, now, decide, tx);
      }
      const cooling = await checkCooldown(tx, req, now);
      if (cooling) {
        // An alert delivered again inside this cooldown (to another replica, or retried) is a duplicate: one
        // cooldown decision per alert and cooldown, claimed under a key naming the cooldown's start, so the
        // alert still acts once the cooldown is over.
        const key =
          req.source === 'alert' && req.idempotencyKey !== undefined
            ? `${req.idempotencyKey}:cooldown:${cooling.since}`
            : undefined;
        const seen = key === undefined ? undefined : await tx.delivery(key, now);
        if (seen) {
          const message = `already decided on this alert in this cooldown (journal entry ${seen.actionId})`;
          return decide('duplicate', message, false);
        }
        const decided = await decide(cooling.decision, cooling.message, false);
        if (key !== undefined && !(await tx.claimDelivery(key, digest, decided.id, now))) throw new ClaimConflict();
        return decided;
      }
      if (POWER_ACTIONS.has(req.action)) {
        // Claimed: this alert's episode is handed to a person (BaremetalRemediationEscalated).
        const capped = await checkCap(tx, req, config.safety, now);
        if (capped) return decide(capped.decision, capped.message, true);
      }
      if (config.dryRun) return decide('dry_run', 'dry run: nothing sent upstream', true);
      if ((await budgetLeft(tx, account, config.budgetPerHour, now)) <= 0) {
        this.#deps.logger.warn(
          { action: req.action, server_id: req.serverId, principal: req.principal },
          'remediation budget exhausted: action denied',
        );
        return decide('denied_budget', `budget of ${config.budgetPerHour} actions per hour is used up`, false);
      }
      // Every guard allowed it: a request that needs a second operator waits for one (approvals.ts).
      if (needsApproval) return decide('awaiting_approval', awaiting, true);
      return decide('executing', '', true);
    };
    // One transaction checks and claims: a second request (or replica) for the same key waits for it. A claim
    // that conflicts rolls back; decided again, the key is then found taken (a duplicate).
    let decided: Decided;
    try {
      decided = await store.transaction(account, decideIn);
    } catch (error) {
      if (!(error instanceof ClaimConflict)) throw error;
      decided = await store.transaction(account, decideIn);
    }
    if (desiredRecorded) {
      this.#deps.metrics.firewallDesiredState.set({ server_id: req.serverId, ip: req.ip! }, Number(req.value));
    }
    if (!decided.send) return this.#record(req.action, decided);
    if (req.action === 'firewall_state')
      return this.#firewall.apply((await store.desired(account, req.serverId, req.ip!))!, decided.id);
    return this.#execute(decided.id, req, async () => {
      const result = await this.#send(req);
      return { message: note(result.message) };
    });
  }

  /** The attack corroboration and the circuit breaker, for power actions only. */
  async #powerGuards(tx: StateQueries, req: ActionRequest, now: number): Promise<Denial | undefined> {
    if (!POWER_ACTIONS.has(req.action)) return undefined;
    const { targets, config } = this.#deps;
    const attacked = checkAttack(targets, req, config.safety, now, this.#deps.firewallPeriodMs());
    if (attacked) return attacked;
    const open = await checkCircuit(tx, req, config.safety, targets.serversInScope?.() ?? 0, now);
    if (open) this.#deps.logger.error({ action: req.action, server_id: req.serverId }, open.message);
    return open;
  }

  /**
   * Closes the account's circuit breaker (an operator's call), journaled (source `operator`, action
   * `circuit_close`, decision `circuit_closed`) under `principal`, the closing operator's principal name (and
   * `reason` when given); servers counted before no longer count. Throws JournalError.
   */
  async closeCircuit(principal: string, reason?: string): Promise<ActionDecision & { wasOpen: boolean }> {
    const { account, store } = this.#deps;
    this.#requireUsable();
    await this.ready;
    const now = this.#now();
    const closed = await store.transaction(account, async (tx) => {
      const wasOpen = await tx.closeCircuit(account, now);
      const message = wasOpen
        ? 'circuit breaker closed by an operator: power actions are allowed again, counted from now'
        : 'circuit breaker was not open; its window starts again from now';
      const id = await tx.insert({
        account,
        createdAt: now,
        source: 'operator',
        action: 'circuit_close',
        serverId: '',
        ip: null,
        value: null,
        alertname: null,
        fingerprint: null,
        startsAt: null,
        decision: 'circuit_closed',
        message,
        principal,
        reason: reason ?? null,
      });
      return { id, decision: 'circuit_closed' as const, message, wasOpen };
    });
    this.#deps.logger.warn({ was_open: closed.wasOpen, journal_id: closed.id, principal }, closed.message);
    await this.#record('circuit_close', closed);
    return closed;
  }

  /**
   * The KVM/IPMI console descriptor of a server in the server list, journaled (source `operator`, action
   * `console`, the asking `principal`). Throws JournalError, NotReadyError, NotFoundError (unknown server),
   * UpstreamError.
   */
  async console(serverId: string, principal: string): Promise<string> {
    const { account, store, targets } = this.#deps;
    this.#requireUsable();
    await this.ready;
    const now = this.#now();
    const entry: NewEntry = {
      account,
      createdAt: now,
      source: 'operator',
      action: 'console',
      serverId,
      ip: null,
      value: null,
      alertname: null,
      fingerprint: null,
      startsAt: null,
      decision: 'executing',
      principal,
    };
    if (!targets.hasServer(serverId)) {
      const message = `server ${serverId} is not in the latest server list`;
      const id = await store.insert({ ...entry, decision: 'denied_unknown_target', message });
      await this.#record('console', { id, decision: 'denied_unknown_target', message });
      throw new NotFoundError(message);
    }
    const id = await store.insert(entry);
    try {
      const xml = await getConsole(this.#deps.client, serverId);
      const message = `console descriptor sent (${Buffer.byteLength(xml)} bytes)`;
      await store.complete(id, { decision: 'executed', upstreamOutcome: 'success', message, at: this.#now() });
      await this.#record('console', { id, decision: 'executed', message });
      return xml;
    } catch (error) {
      // Reading a descriptor changes nothing upstream: a failure is `failed`, never `unknown`.
      const at = this.#now();
      const message = error instanceof Error ? error.message : String(error);
      await store.complete(id, { decision: 'failed', upstreamOutcome: failureOutcome(error), message, at });
      await this.#record('console', { id, decision: 'failed', message }, at);
      throw error;
    }
  }

  /**
   * Another operator approves (or, `deny`, denies) journal row `row` of this account, awaiting approval; the
   * caller checked that `approver` may (approvals.ts). Returns the execution's decision, or the denial.
   * Throws ConflictError (settled already, or expired), JournalError, NotReadyError.
   */
  async approve(row: JournalEntry, approver: string): Promise<ActionDecision> {
    this.#requireUsable();
    await this.ready;
    return this.#approvals.approve(row, approver);
  }

  async deny(row: JournalEntry, approver: string, reason?: string): Promise<ActionDecision> {
    this.#requireUsable();
    await this.ready;
    return this.#approvals.deny(row, approver, reason);
  }

  /** Applies the pending firewall changes that are due, and the housekeeping. Called by the ticker; safe to call directly. */
  tick(): Promise<void> {
    if (this.#deps.store.unavailable !== undefined) return Promise.resolve();
    if (this.#ticking) return this.#ticking;
    const abort = new AbortController();
    this.#tickAbort = abort;
    this.#ticking = this.ready
      .then(() => this.#firewall.applyDue(abort.signal))
      // The ticker runs every second; with nothing due it costs one indexed query and no gauge update.
      .then(async (due) => {
        if (due > 0) await this.#refreshGauges();
        // Another replica may have opened or closed the breaker: read again every CIRCUIT_REFRESH_MS.
        else if (this.#now() - this.#circuitReadAt >= CIRCUIT_REFRESH_MS) await this.#refreshCircuit();
      })
      .then(() => (abort.signal.aborted ? undefined : this.#housekeeping.run(this.#now())))
      .then(() => (abort.signal.aborted ? undefined : this.#approvals.expire()))
      .then(() => {
        if (this.#tickFailing) this.#deps.logger.info('applying pending firewall changes works again');
        this.#tickFailing = false;
      })
      .catch((error: unknown) => {
        // Once per outage, not every second: a lost database fails every tick until it is back.
        if (!(this.#tickFailing && error instanceof JournalError))
          this.#deps.logger.error({ err: error }, 'applying pending firewall changes failed');
        this.#tickFailing = error instanceof JournalError;
      })
      .finally(() => {
        this.#ticking = undefined;
        this.#tickAbort = undefined;
      });
    return this.#ticking;
  }

  /**
   * After a configuration reload changed the rules: cancels the pending firewall changes whose alert no rule
   * names any more (desired-firewall.ts, `cancelWithoutRule`). Returns how many; throws JournalError.
   */
  async rulesChanged(): Promise<number> {
    if (this.#deps.store.unavailable !== undefined) return 0;
    await this.ready;
    const cancelled = await this.#firewall.cancelWithoutRule();
    if (cancelled > 0) await this.#refreshGauges();
    return cancelled;
  }

  /** Throws when no decision can be made: the journal is unavailable, or no server list was read yet. */
  #requireUsable(): void {
    const unavailable = this.#deps.store.unavailable;
    if (unavailable !== undefined) {
      // PostgreSQL's reason names host, port, user and database: the reply names the part, the log the rest.
      if (this.#deps.store.kind === 'postgres')
        throw new JournalError(`remediation is disabled: the journal is unavailable: state ${DATABASE_UNREACHABLE}`, {
          cause: new Error(unavailable),
        });
      throw new JournalError(`remediation is disabled: the journal is unavailable: ${unavailable}`);
    }
    if (!this.#deps.targets.serversKnown)
      throw new NotReadyError('no server list read yet: cannot check the target, retry later');
  }

  /** Runs the upstream call of journal row `id` (for `req`) and completes the row with what the API said. */
  async #execute(id: number, req: ActionRequest, call: () => Promise<{ message: string }>): Promise<ActionDecision> {
    const { action, principal } = req;
    try {
      const result = await call();
      await this.#deps.store.complete(id, {
        decision: 'executed',
        upstreamOutcome: 'success',
        message: result.message,
        at: this.#now(),
      });
      return this.#record(action, { id, decision: 'executed', message: result.message });
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      const decision = failureDecision(error);
      const at = this.#now();
      await this.#deps.store.complete(id, { decision, upstreamOutcome: failureOutcome(error), message, at });
      this.#deps.logger.error(
        { action, journal_id: id, decision, principal, err: error },
        decision === 'unknown'
          ? 'remediation action outcome unknown: the API may have acted'
          : 'remediation action failed',
      );
      return this.#record(action, { id, decision, message }, at);
    }
  }

  #send(req: ActionRequest): Promise<{ message: string }> {
    const { client } = this.#deps;
    switch (req.action) {
      case 'powercycle':
      case 'poweron':
      case 'poweroff':
        return power(client, req.action, req.serverId);
      case 'firewall_sensitivity':
        return setFirewallSensitivity(client, {
          serverId: req.serverId,
          ip: req.ip!,
          sensitivity: req.value as Sensitivity,
        });
      case 'firewall_state':
        return setFirewallState(client, { serverId: req.serverId, ip: req.ip!, state: req.value as '0' | '1' });
    }
  }

  /** Counts a finished decision; `failedAt` (ms) marks a failed or unknown one for BaremetalRemediationFailed. */
  async #record(action: string, result: ActionDecision, failedAt?: number): Promise<ActionDecision> {
    const { metrics, logger } = this.#deps;
    metrics.actionRequests.inc({ action, decision: result.decision });
    if (failedAt !== undefined) metrics.actionLastFailure.set({ action, decision: result.decision }, failedAt / 1000);
    // The decision is made and journaled: gauges that cannot be read now are refreshed by the next one.
    await this.#refreshGauges().catch((error: unknown) =>
      logger.warn({ err: error }, 'cannot refresh the pending and budget gauges from the journal'),
    );
    this.#deps.onDecision?.();
    return result;
  }

  async #refreshGauges(): Promise<void> {
    const { metrics, store, account, config } = this.#deps;
    const pending = await store.pendingCount(account);
    const awaiting = await store.awaitingApproval(account);
    const left = await budgetLeft(store, account, config.budgetPerHour, this.#now());
    metrics.actionPending.set({ action: 'firewall_state' }, pending);
    // A series per action that ever waited for approval (set to 0 afterwards, never removed); apart from
    // baremetal_action_pending, whose alert (BaremetalRemediationPendingStuck) is about firewall changes.
    for (const row of awaiting) this.#approvalSeries.add(row.action);
    for (const action of this.#approvalSeries)
      metrics.actionAwaitingApproval.set({ action }, awaiting.filter((row) => row.action === action).length);
    metrics.actionBudgetRemaining.set(Math.max(0, left));
    await this.#refreshCircuit();
  }

  /** The breaker's gauge from the store (another replica may have opened or closed it). */
  async #refreshCircuit(): Promise<void> {
    const { metrics, store, account } = this.#deps;
    this.#circuitReadAt = this.#now();
    metrics.remediationCircuitOpen.set((await store.circuit(account)).openedAt === null ? 0 : 1);
  }
}

/** How often the leader's ticker reads the circuit breaker's state for its gauge, ms. */
const CIRCUIT_REFRESH_MS = 10_000;

/** What the journal row of a forced power call says first. */
const FORCED = 'forced by the operator past the attack guard';

/** A delivery key claimed by a concurrent transaction: the decision is rolled back and made again. */
class ClaimConflict extends Error {
  constructor() {
    super('the delivery key was claimed concurrently');
  }
}
