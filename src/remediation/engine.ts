/**
 * The remediation engine: desired firewall state and execution. Every request passes the guards
 * (guards.ts: idempotency, target exists, cooldown, budget; then dry run) before any upstream call, journaled before
 * the call and completed after it. Firewall state is desired state: a change inside the hold or the
 * API's 2-minute window (contract §8) is kept pending and applied when due; the latest wins.
 */
import type { Logger } from 'pino';
import type { ActionName, Config } from '../config/schema.js';
import { ApiError, NotReadyError, UpstreamError } from '../errors.js';
import type { Decision, DesiredFirewall, Journal, NewEntry } from '../journal/journal.js';
import type { Metrics } from '../metrics/definitions.js';
import type { UpstreamClient } from '../upstream/client.js';
import { power } from '../upstream/dedicated.js';
import { setFirewallSensitivity, setFirewallState } from '../upstream/firewall.js';
import type { Sensitivity } from '../upstream/params.js';
import { budgetLeft, checkCooldown, checkDelivery, checkTarget } from './guards.js';

/** What the engine needs to know of the inventory (the poller provides it). */
export interface TargetDirectory {
  /** false until the first server list was read */
  readonly serversKnown: boolean;
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
/** A failing deferred change is retried this often, this many times. */
const RETRY_MS = 60_000;
const MAX_ATTEMPTS = 5;

export class RemediationEngine {
  readonly #d: EngineDeps;
  readonly #now: () => number;
  /** IPs whose firewall state call is in flight: `server/ip` */
  readonly #inFlight = new Set<string>();
  #timer: NodeJS.Timeout | undefined;
  #ticking: Promise<void> | undefined;

  constructor(deps: EngineDeps) {
    this.#d = deps;
    this.#now = deps.now ?? Date.now;
    const interrupted = deps.journal.recoverInterrupted(this.#now());
    if (interrupted > 0) deps.logger.warn({ interrupted }, 'journal rows left executing by a previous run marked failed');
    for (const d of deps.journal.allDesired()) deps.metrics.firewallDesiredState.set({ server_id: d.serverId, ip: d.ip }, Number(d.desiredState));
    this.#refreshGauges();
  }

  /** Starts applying due firewall changes every `intervalMs` (unref'd). */
  start(intervalMs = 1000): void {
    this.#timer ??= setInterval(() => void this.tick(), intervalMs).unref();
  }

  /** Stops the ticker and waits for a tick in progress. */
  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#ticking;
  }

  /** Decides on one request; executes it when every guard allows. Throws NotReadyError, JournalError. */
  async request(req: ActionRequest): Promise<ActionResult> {
    const { targets, journal, config } = this.#d;
    if (!targets.serversKnown) throw new NotReadyError('no server list read yet: cannot check the target, retry later');
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
    const decide = (decision: Decision, message: string): ActionResult => {
      const id = journal.insert({ ...entry, decision, message });
      return this.#count(req.action, { id, decision, message });
    };

    const denial = checkDelivery(journal, req) ?? checkTarget(targets, req);
    if (denial) return decide(denial.decision, denial.message);
    // Firewall state is desired state: a change inside its window is deferred, not denied.
    if (req.action === 'firewall_state') return this.#requestFirewallState(req, entry);
    const cooling = checkCooldown(journal, req, now);
    if (cooling) return decide(cooling.decision, cooling.message);
    if (config.dryRun) return this.#claimed(req, entry, 'dry_run', 'dry run: nothing sent upstream');
    if (this.#budgetLeft(now) <= 0) {
      this.#d.logger.warn({ action: req.action, server_id: req.serverId }, 'remediation budget exhausted: action denied');
      return decide('denied_budget', `budget of ${config.budgetPerHour} actions per hour is used up`);
    }
    const claimed = this.#claimed(req, entry, 'executing', null);
    return this.#execute(claimed.id, req.action, () => this.#send(req));
  }

  /** Applies the pending firewall changes that are due. Called by the ticker; safe to call directly. */
  tick(): Promise<void> {
    this.#ticking ??= this.#applyDue().finally(() => {
      this.#ticking = undefined;
    });
    return this.#ticking;
  }

  #budgetLeft(now: number): number {
    return budgetLeft(this.#d.journal, this.#d.config.budgetPerHour, now);
  }

  /** Journals the decision and claims the delivery key in one transaction. */
  #claimed(req: ActionRequest, entry: NewEntry, decision: Decision | 'executing', message: string | null): ActionResult {
    const { journal } = this.#d;
    const id = journal.transaction(() => {
      const rowId = journal.insert({ ...entry, decision, message });
      if (req.idempotencyKey !== undefined) journal.claimDelivery(req.idempotencyKey, rowId, entry.createdAt);
      return rowId;
    });
    if (decision === 'executing') return { id, decision: 'executed', message: '' };
    return this.#count(req.action, { id, decision, message: message ?? '' });
  }

  /** Runs the upstream call of journal row `id` and completes the row. */
  async #execute(id: number, action: string, call: () => Promise<{ message: string }>): Promise<ActionResult> {
    try {
      const result = await call();
      this.#d.journal.complete(id, { decision: 'executed', upstreamOutcome: 'success', message: result.message, at: this.#now() });
      return this.#count(action, { id, decision: 'executed', message: result.message });
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      const outcome = error instanceof UpstreamError ? error.code : 'error';
      this.#d.journal.complete(id, { decision: 'failed', upstreamOutcome: outcome, message, at: this.#now() });
      this.#d.logger.error({ action, journal_id: id, err: error }, 'remediation action failed');
      return this.#count(action, { id, decision: 'failed', message });
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

  /** Records the wanted state; applies it now when due and allowed, else leaves it pending. */
  async #requestFirewallState(req: ActionRequest, entry: NewEntry): Promise<ActionResult> {
    const { journal, config, metrics } = this.#d;
    const now = entry.createdAt;
    const ip = req.ip!;
    const state = req.value as '0' | '1';
    metrics.firewallDesiredState.set({ server_id: req.serverId, ip }, Number(state));
    if (config.dryRun) return this.#claimed(req, entry, 'dry_run', `dry run: desired state ${state} recorded, nothing sent upstream`);

    const previous = journal.desired(req.serverId, ip);
    const cooldownMs = Math.max(req.cooldownMs, previous?.cooldownMs ?? 0);
    const windowOpensAt = previous?.appliedAt == null ? now : previous.appliedAt + cooldownMs;
    const dueAt = Math.max(now + (req.holdMs ?? 0), windowOpensAt);
    const desired: DesiredFirewall = {
      serverId: req.serverId,
      ip,
      desiredState: state,
      dueAt,
      pending: previous?.appliedState !== state,
      attempts: 0,
      appliedState: previous?.appliedState ?? null,
      appliedAt: previous?.appliedAt ?? null,
      cooldownMs,
    };
    const key = `${req.serverId}/${ip}`;
    if (!desired.pending) {
      journal.saveDesired(desired);
      return this.#claimed(req, entry, 'duplicate', `IP ${ip} is already in state ${state}; nothing to do`);
    }
    if (dueAt > now || this.#inFlight.has(key) || this.#budgetLeft(now) <= 0) {
      journal.saveDesired(desired);
      const why = this.#inFlight.has(key) ? 'another change of this IP is in flight' : dueAt > now ? `due at ${new Date(dueAt).toISOString()} (hold or 2-minute window)` : 'budget used up; retried when it allows';
      return this.#claimed(req, entry, 'deferred', `state ${state} pending: ${why}`);
    }
    journal.saveDesired(desired);
    const claimed = this.#claimed(req, entry, 'executing', null);
    return this.#applyFirewall(desired, claimed.id);
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
      const attempts = latest.attempts + 1;
      journal.saveDesired({ ...latest, attempts, pending: attempts < MAX_ATTEMPTS, dueAt: at + RETRY_MS });
      journal.complete(id, { decision: 'failed', upstreamOutcome: error instanceof UpstreamError ? error.code : 'error', message, at });
      logger.error({ server_id: d.serverId, ip: d.ip, attempts, err: error }, 'firewall state change failed');
      return this.#count('firewall_state', { id, decision: 'failed', message });
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
      if (d.desiredState === d.appliedState) {
        // Firing then resolved inside one window: the IP is already where it should end. No call.
        journal.saveDesired({ ...d, pending: false });
        this.#count('firewall_state', { id: journal.insert({ ...base, decision: 'duplicate', message: `collapsed: IP ${d.ip} is already in state ${d.desiredState}` }), decision: 'duplicate', message: '' });
        continue;
      }
      if (d.appliedAt !== null && now - d.appliedAt < d.cooldownMs) {
        journal.saveDesired({ ...d, dueAt: d.appliedAt + d.cooldownMs });
        continue;
      }
      if (this.#budgetLeft(now) <= 0) {
        logger.warn({ server_id: d.serverId, ip: d.ip }, 'remediation budget exhausted: pending firewall change waits');
        journal.saveDesired({ ...d, dueAt: now + RETRY_MS });
        continue;
      }
      await this.#applyFirewall(d, journal.insert(base));
    }
    this.#refreshGauges();
  }

  #count(action: string, result: ActionResult): ActionResult {
    this.#d.metrics.actionRequests.inc({ action, decision: result.decision });
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
