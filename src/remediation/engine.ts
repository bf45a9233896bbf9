/**
 * The remediation engine: desired firewall state and execution. Every request passes the guards
 * (guards.ts: idempotency, target exists, cooldown, budget; then dry run) and is journaled, with its
 * delivery key claimed, in one journal transaction before any upstream call; the row is completed after
 * the call with what the API said: `executed` only on an explicit success, `failed` when it said no,
 * `unknown` when it may have acted without saying so. Firewall state is desired state: a change inside
 * the hold or the API's 2-minute window (contract §8) is kept pending and applied when due; the latest
 * wins; a failed change stays pending and is retried with backoff.
 */
import type { Logger } from 'pino';
import type { ActionName, Config } from '../config/schema.js';
import { ApiError, JournalError, NotFoundError, NotReadyError } from '../errors.js';
import type { Decision, DesiredFirewall, Journal, NewEntry } from '../journal/journal.js';
import type { Metrics } from '../metrics/definitions.js';
import type { UpstreamClient } from '../upstream/client.js';
import { getConsole, power } from '../upstream/dedicated.js';
import { setFirewallSensitivity, setFirewallState } from '../upstream/firewall.js';
import type { Sensitivity } from '../upstream/params.js';
import { budgetLeft, checkCooldown, checkDelivery, checkTarget } from './guards.js';
import { Housekeeping } from './housekeeping.js';
import { failureDecision, failureOutcome, requestDigest, retryDelay } from './outcome.js';

/** What the engine needs to know of the inventory (the poller provides it). */
export interface TargetDirectory {
  /** false until the first server list was read */
  readonly serversKnown: boolean;
  /** the server is in the latest server list */
  hasServer(serverId: string): boolean;
  /** the IP is in the server's record or in its firewall history */
  ownsIp(serverId: string, ip: string): boolean;
}

/** One action to decide on. */
export interface ActionRequest {
  source: 'alert' | 'operator';
  action: ActionName;
  serverId: string;
  ip?: string;
  /** firewall state (`0`/`1`) or sensitivity */
  value?: string;
  /** minimum time between two executions on the target, ms */
  cooldownMs: number;
  /** firewall state: apply no earlier than this many ms from now */
  holdMs?: number;
  requireOwnedIp: boolean;
  /** identity of the delivery (alert fingerprint + startsAt + status + action, or an Idempotency-Key) */
  idempotencyKey?: string;
  alert?: { alertname: string; fingerprint: string; startsAt: string };
}

export interface ActionResult {
  id: number;
  decision: Decision;
  message: string;
}

export interface EngineDeps {
  journal: Journal;
  client: UpstreamClient;
  metrics: Metrics;
  logger: Logger;
  targets: TargetDirectory;
  config: Config['remediation'];
  /** ms since epoch */
  now?: () => number;
  /** called after every decision (the daemon re-renders the exposition) */
  onDecision?: () => void;
}

/** The API's refusal inside its 2-minute window (contract §7). */
const WINDOW_REFUSAL = /2 minutes/i;
/** A pending change the budget holds back is looked at again after this long, ms. */
const BUDGET_RETRY_MS = 60_000;

/** What the decision transaction found: a final decision, or a claimed row whose call is to be made. */
type Decided = ActionResult & { send: boolean };

export class RemediationEngine {
  readonly #d: EngineDeps;
  readonly #now: () => number;
  readonly #housekeeping: Housekeeping;
  /** IPs whose firewall state call is in flight: `server/ip` */
  readonly #inFlight = new Set<string>();
  #timer: NodeJS.Timeout | undefined;
  #ticking: Promise<void> | undefined;

  constructor(deps: EngineDeps) {
    this.#d = deps;
    this.#now = deps.now ?? Date.now;
    this.#housekeeping = new Housekeeping(deps);
    const { journal, logger, metrics } = deps;
    if (journal.unavailable !== undefined) {
      logger.error({ reason: journal.unavailable }, 'remediation disabled: the journal is unavailable; polling and /metrics go on, the action endpoints answer 503');
      return;
    }
    for (const row of journal.recoverInterrupted(this.#now())) {
      logger.warn({ journal_id: row.id, action: row.action, server_id: row.serverId, ip: row.ip }, 'journal row left executing by a previous run: outcome unknown (the API may have acted); it counts for cooldown and budget');
    }
    // Decision metrics are rebuilt from the journal, so a restart loses none (failed and unknown included).
    for (const c of journal.decisionCounts()) metrics.actionRequests.inc({ action: c.action, decision: c.decision }, c.count);
    for (const f of journal.lastFailures()) metrics.actionLastFailure.set({ action: f.action, decision: f.decision }, f.at / 1000);
    for (const d of journal.allDesired()) metrics.firewallDesiredState.set({ server_id: d.serverId, ip: d.ip }, Number(d.desiredState));
    this.#refreshGauges();
  }

  /** Starts applying due firewall changes every `intervalMs` (unref'd), and the housekeeping. */
  start(intervalMs = 1000): void {
    this.#timer ??= setInterval(() => void this.tick(), intervalMs).unref();
  }

  /** Stops the ticker and waits for a tick in progress. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#ticking;
  }

  /** Decides on one request; executes it when every guard allows. Throws JournalError, NotReadyError, IdempotencyMismatchError. */
  async request(req: ActionRequest): Promise<ActionResult> {
    const { journal, config } = this.#d;
    this.#requireUsable();
    const now = this.#now();
    const entry: NewEntry = {
      createdAt: now,
      source: req.source,
      action: req.action,
      serverId: req.serverId,
      ip: req.ip ?? null,
      value: req.value ?? null,
      alertname: req.alert?.alertname ?? null,
      fingerprint: req.alert?.fingerprint ?? null,
      startsAt: req.alert?.startsAt ?? null,
      decision: 'executing',
    };
    const digest = requestDigest(req);
    const decide = (decision: Decision | 'executing', message: string, claim: boolean): Decided => {
      const id = journal.insert({ ...entry, decision, message });
      if (claim && req.idempotencyKey !== undefined) journal.claimDelivery(req.idempotencyKey, digest, id, now);
      return decision === 'executing' ? { id, decision: 'executed', message: '', send: true } : { id, decision, message, send: false };
    };
    let desiredRecorded = false;
    // One transaction checks and claims: a second request (or daemon) for the same key waits for it.
    const decided = journal.transaction((): Decided => {
      const denial = checkDelivery(journal, req, digest, now) ?? checkTarget(this.#d.targets, req);
      if (denial) return decide(denial.decision, denial.message, false);
      // Firewall state is desired state: a change inside its window is deferred, not denied.
      if (req.action === 'firewall_state') {
        desiredRecorded = true;
        return this.#decideFirewallState(req, now, decide);
      }
      const cooling = checkCooldown(journal, req, now);
      if (cooling) return decide(cooling.decision, cooling.message, false);
      if (config.dryRun) return decide('dry_run', 'dry run: nothing sent upstream', true);
      if (this.#budgetLeft(now) <= 0) {
        this.#d.logger.warn({ action: req.action, server_id: req.serverId }, 'remediation budget exhausted: action denied');
        return decide('denied_budget', `budget of ${config.budgetPerHour} actions per hour is used up`, false);
      }
      return decide('executing', '', true);
    });
    if (desiredRecorded) {
      this.#d.metrics.firewallDesiredState.set({ server_id: req.serverId, ip: req.ip! }, Number(req.value));
    }
    if (!decided.send) return this.#count(req.action, decided);
    if (req.action === 'firewall_state') return this.#applyFirewall(journal.desired(req.serverId, req.ip!)!, decided.id);
    return this.#execute(decided.id, req.action, () => this.#send(req));
  }

  /**
   * The KVM/IPMI console descriptor of a server in the server list, journaled (source `operator`, action
   * `console`). Throws JournalError, NotReadyError, NotFoundError (unknown server), UpstreamError.
   */
  async console(serverId: string): Promise<string> {
    const { journal, targets } = this.#d;
    this.#requireUsable();
    const now = this.#now();
    const entry: NewEntry = { createdAt: now, source: 'operator', action: 'console', serverId, ip: null, value: null, alertname: null, fingerprint: null, startsAt: null, decision: 'executing' };
    if (!targets.hasServer(serverId)) {
      const message = `server ${serverId} is not in the latest server list`;
      this.#count('console', { id: journal.insert({ ...entry, decision: 'denied_unknown_target', message }), decision: 'denied_unknown_target', message });
      throw new NotFoundError(message);
    }
    const id = journal.insert(entry);
    try {
      const xml = await getConsole(this.#d.client, serverId);
      const message = `console descriptor sent (${Buffer.byteLength(xml)} bytes)`;
      journal.complete(id, { decision: 'executed', upstreamOutcome: 'success', message, at: this.#now() });
      this.#count('console', { id, decision: 'executed', message });
      return xml;
    } catch (error) {
      // Reading a descriptor changes nothing upstream: a failure is `failed`, never `unknown`.
      const at = this.#now();
      const message = error instanceof Error ? error.message : String(error);
      journal.complete(id, { decision: 'failed', upstreamOutcome: failureOutcome(error), message, at });
      this.#count('console', { id, decision: 'failed', message }, at);
      throw error;
    }
  }

  /** Applies the pending firewall changes that are due, and the housekeeping. Called by the ticker; safe to call directly. */
  tick(): Promise<void> {
    if (this.#d.journal.unavailable !== undefined) return Promise.resolve();
    this.#ticking ??= this.#applyDue()
      .then(() => this.#housekeeping.run(this.#now()))
      .catch((error: unknown) => this.#d.logger.error({ err: error }, 'applying pending firewall changes failed'))
      .finally(() => {
        this.#ticking = undefined;
      });
    return this.#ticking;
  }

  /** Throws when no decision can be made: the journal is unavailable, or no server list was read yet. */
  #requireUsable(): void {
    const unavailable = this.#d.journal.unavailable;
    if (unavailable !== undefined) throw new JournalError(`remediation is disabled: the journal is unavailable: ${unavailable}`);
    if (!this.#d.targets.serversKnown) throw new NotReadyError('no server list read yet: cannot check the target, retry later');
  }

  #budgetLeft(now: number): number {
    return budgetLeft(this.#d.journal, this.#d.config.budgetPerHour, now);
  }

  /** Runs the upstream call of journal row `id` and completes the row with what the API said. */
  async #execute(id: number, action: string, call: () => Promise<{ message: string }>): Promise<ActionResult> {
    try {
      const result = await call();
      this.#d.journal.complete(id, { decision: 'executed', upstreamOutcome: 'success', message: result.message, at: this.#now() });
      return this.#count(action, { id, decision: 'executed', message: result.message });
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      const decision = failureDecision(error);
      const at = this.#now();
      this.#d.journal.complete(id, { decision, upstreamOutcome: failureOutcome(error), message, at });
      this.#d.logger.error({ action, journal_id: id, decision, err: error }, decision === 'unknown' ? 'remediation action outcome unknown: the API may have acted' : 'remediation action failed');
      return this.#count(action, { id, decision, message }, at);
    }
  }

  #send(req: ActionRequest): Promise<{ message: string }> {
    const { client } = this.#d;
    switch (req.action) {
      case 'powercycle':
      case 'poweron':
      case 'poweroff':
        return power(client, req.action, req.serverId);
      case 'firewall_sensitivity':
        return setFirewallSensitivity(client, { serverId: req.serverId, ip: req.ip!, sensitivity: req.value as Sensitivity });
      case 'firewall_state':
        return setFirewallState(client, { serverId: req.serverId, ip: req.ip!, state: req.value as '0' | '1' });
    }
  }

  /** Inside the decision transaction: records the wanted state; claims the call when due and allowed, else leaves it pending. */
  #decideFirewallState(req: ActionRequest, now: number, decide: (decision: Decision | 'executing', message: string, claim: boolean) => Decided): Decided {
    const { journal, config } = this.#d;
    const ip = req.ip!;
    const state = req.value as '0' | '1';
    if (config.dryRun) return decide('dry_run', `dry run: desired state ${state} recorded, nothing sent upstream`, true);

    const previous = journal.desired(req.serverId, ip);
    const cooldownMs = Math.max(req.cooldownMs, previous?.cooldownMs ?? 0);
    const lastSent = journal.lastSent('firewall_state', req.serverId, ip);
    // The window opens 2 minutes after the last call (applied or not); a failing change keeps its backoff.
    const windowOpensAt = Math.max(lastSent === undefined ? now : lastSent + cooldownMs, previous?.appliedAt == null ? now : previous.appliedAt + cooldownMs);
    const backoff = previous?.pending && previous.attempts > 0 ? previous.dueAt : now;
    const dueAt = Math.max(now + (req.holdMs ?? 0), windowOpensAt, backoff);
    const desired: DesiredFirewall = {
      serverId: req.serverId,
      ip,
      desiredState: state,
      dueAt,
      // After a failed or unknown attempt the API's state is not known for sure: send, even the applied state.
      pending: previous?.appliedState !== state || (previous.pending && previous.attempts > 0),
      attempts: previous?.pending ? previous.attempts : 0,
      appliedState: previous?.appliedState ?? null,
      appliedAt: previous?.appliedAt ?? null,
      cooldownMs,
    };
    journal.saveDesired(desired);
    if (!desired.pending) return decide('duplicate', `IP ${ip} is already in state ${state}; nothing to do`, true);
    const inFlight = this.#inFlight.has(`${req.serverId}/${ip}`);
    if (dueAt > now || inFlight || this.#budgetLeft(now) <= 0) {
      const why = inFlight ? 'another change of this IP is in flight' : dueAt > now ? `due at ${new Date(dueAt).toISOString()} (hold, 2-minute window or retry backoff)` : 'budget used up; retried when it allows';
      return decide('deferred', `state ${state} pending: ${why}`, true);
    }
    return decide('executing', '', true);
  }

  /** Sends a desired firewall state (journal row `id` is already written) and records the outcome. */
  async #applyFirewall(d: DesiredFirewall, id: number): Promise<ActionResult> {
    const { journal, client, logger } = this.#d;
    const key = `${d.serverId}/${d.ip}`;
    this.#inFlight.add(key);
    try {
      const result = await setFirewallState(client, { serverId: d.serverId, ip: d.ip, state: d.desiredState });
      const at = this.#now();
      // The desired state may have changed while the call was in flight: keep it pending then.
      const latest = journal.desired(d.serverId, d.ip) ?? d;
      const stillPending = latest.desiredState !== d.desiredState;
      journal.saveDesired({ ...latest, appliedState: d.desiredState, appliedAt: at, attempts: 0, pending: stillPending, dueAt: stillPending ? at + latest.cooldownMs : latest.dueAt });
      journal.complete(id, { decision: 'executed', upstreamOutcome: 'success', message: result.message, at });
      return this.#count('firewall_state', { id, decision: 'executed', message: result.message });
    } catch (error) {
      const at = this.#now();
      const message = error instanceof Error ? error.message : String(error);
      const latest = journal.desired(d.serverId, d.ip) ?? d;
      if (error instanceof ApiError && WINDOW_REFUSAL.test(error.apiMessage)) {
        // Changed elsewhere (or by a run before a crash) within the window: wait for it to open.
        journal.saveDesired({ ...latest, pending: true, dueAt: at + latest.cooldownMs });
        journal.complete(id, { decision: 'deferred', upstreamOutcome: error.code, message, at });
        return this.#count('firewall_state', { id, decision: 'deferred', message });
      }
      // Failed or unknown: the change stays pending and is sent again after the window, with backoff.
      // Re-sending the same state is harmless if the unknown call did apply it.
      const decision = failureDecision(error);
      const attempts = latest.attempts + 1;
      const retryAt = at + retryDelay(attempts, latest.cooldownMs);
      journal.saveDesired({ ...latest, attempts, pending: latest.appliedState !== latest.desiredState || decision === 'unknown', dueAt: retryAt });
      journal.complete(id, { decision, upstreamOutcome: failureOutcome(error), message, at });
      logger.error({ server_id: d.serverId, ip: d.ip, attempts, decision, retry_at: new Date(retryAt).toISOString(), err: error }, 'firewall state change failed; it stays pending and is retried');
      return this.#count('firewall_state', { id, decision, message }, at);
    } finally {
      this.#inFlight.delete(key);
    }
  }

  async #applyDue(): Promise<void> {
    const { journal, logger } = this.#d;
    const now = this.#now();
    const due = journal.dueDesired(now);
    // The ticker runs every second; with nothing due it costs one indexed query.
    if (due.length === 0) return;
    for (const d of due) {
      if (this.#inFlight.has(`${d.serverId}/${d.ip}`)) continue;
      const base: NewEntry = { createdAt: now, source: 'pending', action: 'firewall_state', serverId: d.serverId, ip: d.ip, value: d.desiredState, alertname: null, fingerprint: null, startsAt: null, decision: 'executing' };
      if (d.desiredState === d.appliedState && d.attempts === 0) {
        // Firing then resolved inside one window: the IP is already where it should end. No call.
        journal.saveDesired({ ...d, pending: false });
        this.#count('firewall_state', { id: journal.insert({ ...base, decision: 'duplicate', message: `collapsed: IP ${d.ip} is already in state ${d.desiredState}` }), decision: 'duplicate', message: '' });
        continue;
      }
      const lastSent = Math.max(d.appliedAt ?? -Infinity, journal.lastSent('firewall_state', d.serverId, d.ip) ?? -Infinity);
      if (now - lastSent < d.cooldownMs) {
        journal.saveDesired({ ...d, dueAt: lastSent + d.cooldownMs });
        continue;
      }
      if (this.#budgetLeft(now) <= 0) {
        logger.warn({ server_id: d.serverId, ip: d.ip }, 'remediation budget exhausted: pending firewall change waits');
        journal.saveDesired({ ...d, dueAt: now + BUDGET_RETRY_MS });
        continue;
      }
      await this.#applyFirewall(d, journal.insert(base));
    }
    this.#refreshGauges();
  }

  /** Counts a decision; `failedAt` (ms) marks a failed or unknown one for BaremetalRemediationFailed. */
  #count(action: string, result: ActionResult, failedAt?: number): ActionResult {
    const { metrics } = this.#d;
    metrics.actionRequests.inc({ action, decision: result.decision });
    if (failedAt !== undefined) metrics.actionLastFailure.set({ action, decision: result.decision }, failedAt / 1000);
    this.#refreshGauges();
    this.#d.onDecision?.();
    return result;
  }

  #refreshGauges(): void {
    const { metrics, journal } = this.#d;
    metrics.actionPending.set({ action: 'firewall_state' }, journal.pendingCount());
    metrics.actionBudgetRemaining.set(Math.max(0, this.#budgetLeft(this.#now())));
  }
}
