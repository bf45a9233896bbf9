/**
 * The remediation engine: decides on every request and executes the allowed ones. Each request is
 * journaled, with its delivery key claimed, in one journal transaction before any upstream call; the guards
 * of decide.ts GUARDS run inside it, in the order that list declares (the policy), and execute.ts makes the call and completes the
 * row with what the API said (the mechanism). This class composes them with desired firewall state
 * (desired-firewall.ts), approvals (approvals.ts), housekeeping and the gauges.
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
import type { Config } from '../config/types.js';
import { DATABASE_UNREACHABLE } from '../config/database-url.js';
import { JournalError, NotReadyError } from '../errors.js';
import type { JournalEntry } from '../store/rows.js';
import { type ApprovalResult, Approvals } from './approvals.js';
import type { StateQueries, StateStore } from '../store/store.js';
import type { Metrics } from '../metrics/definitions.js';
import type { UpstreamClient } from '../upstream/client.js';
import { ClaimConflict, decideDue, decideIn, type Guard, prepare } from './decide.js';
import { DesiredFirewallState } from './desired-firewall.js';
import { type Execution, execute, SENDERS } from './execute.js';
import { RemediationGauges } from './gauges.js';
import type { DesiredRows } from './desired-rows.js';
import { Housekeeping } from './housekeeping.js';
import { DEFAULT_RESEND_INTERVAL_MS, type EpisodeAlert, Episodes, followedBy, resolutionOf } from './episode.js';
import { SilenceKeeper, type SilenceWriter } from './silences.js';
import { type StatusReader, Verifier } from './verify.js';
import { climbMarkKey, escalationRow, nextStep } from './ladder.js';
import { LostClimbs } from './lost-climbs.js';
import { makeRequest } from './request.js';
import { askCircuitClose, closeCircuit, type OperatorDeps, readConsole } from './operator.js';
import type { ActionDecision, ActionRequest, TargetDirectory } from './types.js';

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
  /** the account's desired firewall state rows as their series show them (read back after every change) */
  desired?: DesiredRows;
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
   * Alertmanager (remediation.alertmanager): the outage gate and verification read its alerts, the silences
   * are written to it (remediation/silences.ts); absent: none configured
   */
  alertmanager?: (StatusReader & SilenceWriter) | undefined;
  /**
   * The Alertmanager whose list and status the verifier reads as evidence, when it is not `alertmanager`: a
   * replay's (cli/replay-gate.ts `replayedAlertList`), whose gate Alertmanager answers only what the outage gate
   * read; default `alertmanager`
   */
  alertList?: StatusReader | undefined;
  /** how often the verifier runs at most, ms (default verify.ts VERIFY_EVERY_MS; a replay's runs at each tick) */
  verifyEveryMs?: number | undefined;
  /** the guards every decision walks (default decide.ts GUARDS; a test plants a recording copy) */
  guards?: readonly Guard[];
  /**
   * With a store shared by replicas: how long (ms) a row may stay `executing` while its call is still in
   * flight on another replica (the account's upstream.timeout, one attempt per write, plus a margin). Older
   * rows were left by a replica that died mid-call: they are recovered as `unknown` at start and then by the
   * leader's housekeeping. Unset (one process, SQLite): every `executing` row at start was left by a crash.
   */
  interruptedAfterMs?: number;
  /**
   * One process (SQLite): how long (ms) a row may stay `executing` while this process's own call is in flight
   * (a write's deadline, plus a margin). Older rows are ones whose completion could not be written (the
   * journal failed after the call): the housekeeping recovers them as `unknown`, so none stays `executing`
   * until a restart.
   */
  stuckAfterMs?: number;
}

export class RemediationEngine {
  readonly #deps: EngineDeps;
  readonly #now: () => number;
  readonly #housekeeping: Housekeeping;
  readonly #firewall: DesiredFirewallState;
  readonly #approvals: Approvals;
  readonly #gauges: RemediationGauges;
  readonly #verifier: Verifier;
  readonly #silences: SilenceKeeper;
  readonly #episodes: Episodes;
  #timer: NodeJS.Timeout | undefined;
  #ticking: Promise<void> | undefined;
  /** aborts the tick in progress: checked before each pending change is sent (stop(), i.e. demotion) */
  #tickAbort: AbortController | undefined;
  /** the last tick failed on the journal (logged once until a tick succeeds) */
  #tickFailing = false;
  readonly #lostClimbs: LostClimbs;

  constructor(deps: EngineDeps) {
    this.#deps = deps;
    this.#now = deps.now ?? Date.now;
    this.#housekeeping = new Housekeeping(deps);
    this.#verifier = new Verifier({
      ...deps,
      now: this.#now,
      alertmanager: deps.alertList ?? deps.alertmanager,
      everyMs: deps.verifyEveryMs,
      resendIntervalMs: () => deps.config.alertmanager?.resendIntervalMs ?? DEFAULT_RESEND_INTERVAL_MS,
    });
    this.#lostClimbs = new LostClimbs({
      ...deps,
      now: this.#now,
      escalate: (row, message, lost) => this.#escalate(row, message, lost),
    });
    this.#episodes = new Episodes({
      ...deps,
      now: this.#now,
      verifier: this.#verifier,
      record: (action, result) => this.#record(action, result),
      rules: () => deps.config.rules,
    });
    this.#silences = new SilenceKeeper({
      ...deps,
      alertmanager: deps.config.alertmanager?.silenceWhileHandled === false ? undefined : deps.alertmanager,
      approvalTimeoutMs: () => deps.config.approvalTimeoutMs,
    });
    this.#gauges = new RemediationGauges(deps, this.#now);
    this.#firewall = new DesiredFirewallState({
      ...deps,
      now: this.#now,
      record: (action, result, failedAt) => this.#record(action, result, failedAt),
    });
    this.#approvals = new Approvals({
      ...deps,
      now: this.#now,
      closeCircuit: (principal, reason, approval) => closeCircuit(this.#actionDeps(), principal, reason, approval),
      record: (action, result) => this.#record(action, result),
    });
    const { store, logger } = deps;
    if (store.unavailable !== undefined)
      logger.error(
        { reason: store.unavailable },
        'remediation disabled: the journal is unavailable; polling and /metrics go on, the action endpoints answer 503',
      );
    this.ready = store.opened.then((open) => (open ? this.#gauges.restore() : undefined));
  }

  /**
   * Resolves once the engine has read its state back (interrupted rows, counters, gauges) after the store
   * opened; never rejects (a failure is logged, the counters then start from zero).
   */
  readonly ready: Promise<void>;

  /**
   * Starts applying due firewall changes every `intervalMs` (unref'd), and the housekeeping. Called when this
   * replica starts leading: what its leader-only series show is read again at once (the first tick), not
   * left as this replica last read it, perhaps as a follower long ago.
   */
  start(intervalMs = 1000): void {
    if (this.#timer !== undefined) return;
    this.#gauges.readAt = -Infinity;
    this.#lostClimbs.started();
    this.#timer = setInterval(() => void this.tick(), intervalMs).unref();
    void this.tick();
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
    this.#lostClimbs.stopped();
    this.#tickAbort?.abort();
    await this.#ticking;
  }

  /** Decides on one request; executes it when every guard allows. Throws JournalError, NotReadyError, IdempotencyMismatchError. */
  async request(asked: ActionRequest): Promise<ActionDecision> {
    const { account, store } = this.#deps;
    // The route picks the engine by the request's account; a mismatch is a bug, never a guess.
    if (asked.account !== account)
      throw new Error(`request for account ${asked.account} given to the engine of account ${account}`);
    this.#requireUsable();
    await this.ready;
    // A ladder stopped at a step that expired unapproved: the delivery asks for that step again (episode.ts).
    const again = await this.#episodes.expiredStep(asked);
    const req = again === undefined ? asked : makeRequest({ kind: 'ladder', row: again.before, steps: again.steps });
    const p = await prepare(req, this.#deps, this.#now);
    const decideTx = (tx: StateQueries) => decideIn(this.#deps, this.#firewall, p, tx);
    // One transaction checks and claims: a second request (or replica) for the same key waits for it. A claim
    // that conflicts rolls back; decided again, the key is then found taken (a duplicate).
    let decided: Awaited<ReturnType<typeof decideTx>>;
    try {
      decided = await store.transaction(account, decideTx);
    } catch (error) {
      if (!(error instanceof ClaimConflict)) throw error;
      decided = await store.transaction(account, decideTx);
    }
    // A recorded desired state shows once the decision is recorded: #record reads the rows back (gauges.ts).
    const { desiredRecorded: _recorded, escalatedAfter, ...result } = decided;
    if (escalatedAfter !== undefined) this.#logEscalation(req, result.id, escalatedAfter);
    if (!result.send) return this.#record(req.action, result);
    if (req.action === 'firewall_state')
      return this.#firewall.apply((await store.desired(account, req.serverId, req.ip!))!, decided.id);
    const executed = await this.#execute({
      id: decided.id,
      action: req.action,
      log: { principal: req.principal },
      call: () => SENDERS[req.action](this.#deps.client, req),
      message: (sent) => p.note(sent.message),
    });
    if (req.verifyWithinMs !== undefined && executed.decision === 'executed')
      await this.#episodes.afterCall(executed.id);
    return executed;
  }

  /**
   * One warning per `escalated` decision, once its row is committed: the server needs a person, and an info
   * line among the webhook's would not page anyone reading the log. `count` is what the cap counted.
   */
  #logEscalation(req: ActionRequest, id: number, count: number): void {
    const { logger, config } = this.#deps;
    const window = `${config.safety.capWindowMs / 1000}s`;
    logger.warn(
      { action: req.action, server_id: req.serverId, count, window, id, source: req.source },
      `remediation escalated: server ${req.serverId} already had ${count} power actions within ${window}; nothing sent, a person must look at it`,
    );
  }

  /**
   * Closes the account's circuit breaker (an operator's call), journaled (source `operator`, action
   * `circuit_close`, decision `circuit_closed`) under `principal`, the closing operator's principal name (and
   * `reason` when given); servers counted before no longer count. With `requireApproval` (the principal's
   * `require_approval`) nothing closes yet: the close awaits another operator's approval (`awaiting_approval`).
   * Throws JournalError.
   */
  async closeCircuit(
    principal: string,
    reason?: string,
    requireApproval = false,
  ): Promise<ActionDecision & { wasOpen: boolean }> {
    this.#requireUsable();
    await this.ready;
    if (requireApproval)
      return askCircuitClose(
        { ...this.#actionDeps(), approvalTimeoutMs: this.#deps.config.approvalTimeoutMs },
        principal,
        reason,
      );
    return closeCircuit(this.#actionDeps(), principal, reason);
  }

  /**
   * The KVM/IPMI console descriptor of a server in the server list, journaled (source `operator`, action
   * `console`, the asking `principal`). Throws JournalError, NotReadyError, NotFoundError (unknown server),
   * UpstreamError.
   */
  async console(serverId: string, principal: string): Promise<string> {
    this.#requireUsable();
    await this.ready;
    return readConsole(this.#actionDeps(), serverId, principal);
  }

  /**
   * Another operator approves (or, `deny`, denies) journal row `row` of this account, awaiting approval; the
   * caller checked that `approver` may (approvals.ts). Returns the execution's decision, or the denial.
   * Throws ConflictError (settled already, or expired), JournalError, NotReadyError.
   */
  async approve(row: JournalEntry, approver: string, reason?: string): Promise<ApprovalResult> {
    this.#requireUsable();
    await this.ready;
    // The approval's transition settles the row; its request is decided here, as every request is.
    const approved = await this.#approvals.approve(row, approver, reason);
    if ('closed' in approved) return approved.closed;
    let result: ActionDecision;
    try {
      result = await this.request(approved.execute.req);
    } catch (error) {
      return this.#approvals.notDecided(approved.execute, error);
    }
    return this.#approvals.executed(approved.execute, result);
  }

  async deny(row: JournalEntry, approver: string, reason?: string): Promise<ActionDecision> {
    this.#requireUsable();
    await this.ready;
    return this.#approvals.deny(row, approver, reason);
  }

  /** Its requester withdraws journal row `row`, awaiting approval (checked by the caller). Throws as `deny`. */
  async withdraw(row: JournalEntry, principal: string, reason?: string): Promise<ActionDecision> {
    this.#requireUsable();
    await this.ready;
    return this.#approvals.withdraw(row, principal, reason);
  }

  /**
   * The resolved delivery of `alert`'s episode (account, fingerprint, start, labels: episode.ts `Episodes`),
   * delivered by `principal`: the resolution is journaled (`resolved`, once), what awaits approval is withdrawn,
   * what verifies is `verified` (verify.ts), and a call in flight is settled when it completes (`request`).
   * Returns how many rows it ended and the resolution's row when this call journaled it; throws JournalError.
   */
  async alertResolved(
    alert: EpisodeAlert,
    principal = 'alertmanager',
  ): Promise<{ ended: number; resolution?: ActionDecision & { action: string } }> {
    if (this.#deps.store.unavailable !== undefined) return { ended: 0 };
    await this.ready;
    return this.#episodes.resolved(alert, principal);
  }

  /** Applies the pending firewall changes that are due, and the housekeeping. Called by the ticker; safe to call directly. */
  tick(): Promise<void> {
    if (this.#deps.store.unavailable !== undefined) return Promise.resolve();
    if (this.#ticking) return this.#ticking;
    const abort = new AbortController();
    this.#tickAbort = abort;
    this.#ticking = this.ready
      .then(() => this.#applyDue(abort.signal))
      // The ticker runs every second; with nothing due it costs one indexed query and no gauge update.
      .then(async (due) => {
        // Another replica may have decided, approved, applied or closed the breaker: read again every
        // CIRCUIT_REFRESH_MS (gauges.ts `refresh`), and at once when changes were applied here.
        if (due > 0 || this.#now() - this.#gauges.readAt >= CIRCUIT_REFRESH_MS) {
          await this.#gauges.refresh();
          // What was read is rendered soon, not at the next poll's end (the exposition renders what changed).
          this.#deps.onDecision?.();
        }
      })
      .then(() => (abort.signal.aborted ? undefined : this.#housekeeping.run(this.#now())))
      .then(() => (abort.signal.aborted ? undefined : this.#approvals.expire()))
      .then(() => (abort.signal.aborted ? undefined : this.#lostClimbs.handOver()))
      .then(() => (abort.signal.aborted ? undefined : this.#verify(this.#now())))
      .then(() => (abort.signal.aborted ? undefined : this.#silences.reconcile(this.#now())))
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
    this.#gauges.initSeries();
    const cancelled = await this.#firewall.cancelWithoutRule();
    if (cancelled > 0) await this.#gauges.refresh();
    return cancelled;
  }

  /**
   * Applies the pending firewall changes due now, one after the other, each decided in one transaction by the
   * guards (decide.ts `decideDue`, with desired firewall state as every decision has it) and then sent
   * (desired-firewall.ts `apply`) or counted. Returns how many were due (in dry run, how many were journaled
   * held). Once `signal` is aborted (the replica stopped leading) no further change is decided or sent.
   */
  async #applyDue(signal: AbortSignal): Promise<number> {
    const { account, store } = this.#deps;
    const now = this.#now();
    const { due, count } = await this.#firewall.listDue(now);
    for (const listed of due) {
      if (signal.aborted) break;
      // the leader's write: with shared accounts, refused unless this replica still holds the account's lease
      const step = await store.transaction(
        account,
        async (tx) => {
          const d = await this.#firewall.stillDue(listed, now, tx);
          if (d === undefined) return undefined;
          const decided = await decideDue(this.#deps, this.#firewall, d, now, tx);
          return decided && { d, ...decided };
        },
        { leader: true },
      );
      if (step?.send) await this.#firewall.apply(step.d, step.id);
      else if (step)
        await this.#record('firewall_state', { id: step.id, decision: step.decision, message: step.message });
    }
    return count;
  }

  /**
   * The verifications at `now` (ms), in one direction: the verifier judges what Alertmanager's list says
   * (verify.ts `judge`); the episodes it ended are resolved as a resolved delivery resolves them (episode.ts);
   * the verifier settles the rows (`settle`), and each `ineffective` one climbs its ladder right after it is
   * settled (ladder.ts `nextStep`: the next step decided here through every guard, or the episode escalated),
   * never for an episode that resolved: a row the journal fails to settle holds up no other's climb. Throws
   * JournalError (the first, once every row was tried).
   */
  async #verify(now: number): Promise<void> {
    const judged = await this.#verifier.judge(now);
    if (judged === undefined) return;
    for (const alert of judged.ended) await this.#episodes.resolved(alert, 'alertmanager (alert list)');
    let ended = 0;
    try {
      await this.#verifier.settle(judged, now, async (row, outcome) => {
        ended++;
        if (outcome !== 'ineffective') return;
        // The outcome is journaled whatever comes next: a next step that cannot be asked for now is logged, and
        // handed to a person later (lost-climbs.ts).
        await this.#climb(row).catch((error: unknown) => {
          // Its mark is still held: a later tick hands the episode to a person unless it resolved or its
          // ladder went on (lost-climbs.ts).
          this.#lostClimbs.owe(row.id);
          this.#deps.logger.error(
            { err: error, journal_id: row.id },
            'the next step of the escalation ladder could not be asked for: a later tick hands the episode to a person unless it resolved',
          );
        });
      });
    } finally {
      if (ended > 0) this.#deps.onDecision?.();
    }
  }

  /**
   * After `row` ended ineffective: its ladder's next step, or the episode escalated (ladder.ts); nothing for an
   * episode that resolved (episode.ts).
   */
  async #climb(row: JournalEntry): Promise<unknown> {
    if (await this.#episodes.hasResolved(row)) return this.#deps.store.releaseDelivery(climbMarkKey(row.id), row.id);
    const next = nextStep(this.#deps.config.rules, row);
    if (next === undefined) return undefined;
    if ('request' in next) return this.request(next.request);
    return this.#escalate(row, next.escalate).catch((error: unknown) => {
      // Handed over later with its own message, not as a lost climb (lost-climbs.ts).
      this.#lostClimbs.owe(row.id, next.escalate);
      throw error;
    });
  }

  /**
   * Hands `row`'s episode to a person (ladder.ts `escalationRow`): the row journaled `escalated` with `message`
   * in the transaction that takes `row`'s climb mark (ladder.ts `climbMarkKey`), logged and counted. `lost`: a
   * lost climb's (lost-climbs.ts), whose mark may outlive what it owed — nothing is written when its episode
   * resolved or its ladder went on meanwhile (episode.ts `followedBy`; when the journal cannot tell, it is
   * handed over: that sends nothing). Undefined, nothing written, when the mark is gone (another replica
   * decided what follows). Throws JournalError.
   */
  async #escalate(row: JournalEntry, message: string, lost = false): Promise<ActionDecision | undefined> {
    const { account, store, logger } = this.#deps;
    const id = await store.transaction(account, async (tx) => {
      if (!(await tx.releaseDelivery(climbMarkKey(row.id), row.id))) return undefined;
      if (lost && ((await resolutionOf(tx, row)) !== undefined || (await followedBy(tx, row)) === 'went on'))
        return undefined;
      return tx.insert(escalationRow(row, this.#now(), message));
    });
    if (id === undefined) return undefined;
    logger.warn(
      { action: row.action, server_id: row.serverId, id, ...(lost ? { cause: 'a lost climb' } : {}) },
      `remediation escalated: ${message}`,
    );
    return this.#record(row.action, { id, decision: 'escalated', message });
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

  /** What execution and the operator's actions use (execute.ts, operator.ts). */
  #actionDeps(): OperatorDeps {
    const record = (action: string, result: ActionDecision, failedAt?: number) =>
      this.#record(action, result, failedAt);
    return { ...this.#deps, now: this.#now, record };
  }

  /** Makes the upstream call of a journaled row and completes the row with what the API said (execute.ts). */
  async #execute<T>(x: Execution<T>): Promise<ActionDecision> {
    const { id, decision, message } = await execute(this.#actionDeps(), x);
    return { id, decision, message };
  }

  /** Counts a finished decision; `failedAt` (ms) marks a failed or unknown one for BaremetalRemediationFailed. */
  async #record(action: string, result: ActionDecision, failedAt?: number): Promise<ActionDecision> {
    const { account, metrics, logger } = this.#deps;
    metrics.actionRequests.inc({ account, action, decision: result.decision });
    if (failedAt !== undefined)
      metrics.actionLastFailure.set({ account, action, decision: result.decision }, failedAt / 1000);
    // The decision is made and journaled: gauges that cannot be read now are refreshed by the next one.
    await this.#gauges
      .refresh()
      .catch((error: unknown) =>
        logger.warn({ err: error }, 'cannot refresh the pending and budget gauges from the journal'),
      );
    this.#deps.onDecision?.();
    return result;
  }
}

/**
 * How often the leader's ticker reads again what its remediation series show from the shared store (circuit
 * breaker, desired firewall state, pending, awaiting approval, budget), ms.
 */
const CIRCUIT_REFRESH_MS = 10_000;
