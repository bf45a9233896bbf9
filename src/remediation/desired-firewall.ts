/**
 * Desired firewall state: per IP the state the daemon wants, kept in the journal. A change inside the hold,
 * the API's 2-minute window (contract §8) or a retry backoff is kept pending and applied when due; the
 * latest wins; a failed change stays pending and is retried with backoff. The engine decides on a request
 * and then hands firewall-state requests to this module (`decide` inside its transaction, `apply` after it);
 * its ticker calls `applyDue`.
 *
 * While `remediation.dry_run` is true (at start or after a reload) nothing is sent: a change that falls due
 * is held, journaled once as a `dry_run` decision, and sent when dry run is switched off. A reload that
 * removes the last firewall-state rule of an alert cancels the pending changes that alert asked for
 * (`cancelWithoutRule`, in firewall-cancel.ts).
 */
import { ApiError } from '../errors.js';
import type { DesiredFirewall } from '../store/rows.js';
import type { StateQueries } from '../store/store.js';
import type { UpstreamClient } from '../upstream/client.js';
import type { Decision } from '../store/decisions.js';
import { SENDERS } from './execute.js';
import { type CancelDeps, cancelWithoutRule, pendingEntry } from './firewall-cancel.js';
import { budgetLeft } from './guards.js';
import { failureDecision, failureOutcome, retryDelay } from './outcome.js';
import type { ActionDecision, ActionRequest } from './types.js';

/** The API's refusal inside its 2-minute window (contract §7). */
const WINDOW_REFUSAL = /2 minutes/i;
/** A pending change the budget holds back is looked at again after this long, ms. */
const BUDGET_RETRY_MS = 60_000;

/** What the decision transaction found: a final decision, or a claimed row whose call is to be made. */
export type Decided = ActionDecision & { send: boolean };

/** Journals a decision inside the engine's transaction; `executing` claims the upstream call. */
export type DecideFn = (decision: Decision | 'executing', message: string, claim: boolean) => Promise<Decided>;

export interface DesiredFirewallDeps extends CancelDeps {
  /** the account's client, which sends its desired state */
  client: UpstreamClient;
  /** counts a finished decision (metrics, gauges); `failedAt` (ms) marks a failed or unknown one */
  record: (action: string, result: ActionDecision, failedAt?: number) => Promise<ActionDecision>;
}

export class DesiredFirewallState {
  readonly #deps: DesiredFirewallDeps;
  /** IPs whose firewall state call is in flight: `server/ip` */
  readonly #inFlight = new Set<string>();
  /** changes held by dry run and journaled so: `server/ip/state`; cleared when dry run is off */
  readonly #held = new Set<string>();

  constructor(deps: DesiredFirewallDeps) {
    this.#deps = deps;
  }

  /**
   * Inside the decision transaction (`tx` its queries): records the wanted state; claims the call when due and
   * allowed, else leaves it pending. `recorded` is whether a desired-state row was saved: in dry run none is
   * (the journal's `dry_run` row is the record), so `baremetal_firewall_desired_state` only ever shows rows the
   * store holds, which the housekeeping retires and a restart rebuilds.
   */
  async decide(
    req: ActionRequest,
    now: number,
    decide: DecideFn,
    tx: StateQueries,
  ): Promise<Decided & { recorded: boolean }> {
    const decided = await this.#decide(req, now, decide, tx);
    return { ...decided, recorded: decided.decision !== 'dry_run' };
  }

  async #decide(req: ActionRequest, now: number, decide: DecideFn, tx: StateQueries): Promise<Decided> {
    const { account, config } = this.#deps;
    const ip = req.ip!;
    const state = req.value as '0' | '1';
    if (config.dryRun)
      return decide('dry_run', `dry run: desired state ${state} neither recorded nor sent upstream`, true);

    const previous = await tx.desired(account, req.serverId, ip);
    const cooldownMs = Math.max(req.cooldownMs, previous?.cooldownMs ?? 0);
    const lastSent = await tx.lastSent(account, 'firewall_state', req.serverId, ip);
    // The window opens 2 minutes after the last call (applied or not); a failing change keeps its backoff.
    const windowOpensAt = Math.max(
      lastSent === undefined ? now : lastSent + cooldownMs,
      previous?.appliedAt == null ? now : previous.appliedAt + cooldownMs,
    );
    const backoff = previous?.pending && previous.attempts > 0 ? previous.dueAt : now;
    const dueAt = Math.max(now + (req.holdMs ?? 0), windowOpensAt, backoff);
    const desired: DesiredFirewall = {
      account,
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
      // The latest request sets the state, so its principal is the one its deferred change is journaled under.
      principal: req.principal,
    };
    await tx.saveDesired(desired);
    if (!desired.pending) return decide('duplicate', `IP ${ip} is already in state ${state}; nothing to do`, true);
    const inFlight = this.#inFlight.has(`${req.serverId}/${ip}`);
    if (dueAt > now || inFlight || (await budgetLeft(tx, account, config.budgetPerHour, now)) <= 0) {
      const why = inFlight
        ? 'another change of this IP is in flight'
        : dueAt > now
          ? `due at ${new Date(dueAt).toISOString()} (hold, 2-minute window or retry backoff)`
          : 'budget used up; retried when it allows';
      return decide('deferred', `state ${state} pending: ${why}`, true);
    }
    return decide('executing', '', true);
  }

  /** Sends a desired firewall state (journal row `id` is already written) and records the outcome. */
  async apply(d: DesiredFirewall, id: number): Promise<ActionDecision> {
    const { account, store, client, logger, now, record } = this.#deps;
    const key = `${d.serverId}/${d.ip}`;
    this.#inFlight.add(key);
    /** Updates the desired state from its latest form and completes the row, in one transaction. */
    const settle = (
      update: (latest: DesiredFirewall) => DesiredFirewall,
      done: { decision: Decision; upstreamOutcome: string; message: string; at: number },
    ) =>
      store.transaction(account, async (tx) => {
        const latest = (await tx.desired(d.account, d.serverId, d.ip)) ?? d;
        const saved = update(latest);
        await tx.saveDesired(saved);
        await tx.complete(id, done);
        return saved;
      });
    try {
      const result = await SENDERS.firewall_state(client, { serverId: d.serverId, ip: d.ip, value: d.desiredState });
      const at = now();
      // The desired state may have changed while the call was in flight: keep it pending then.
      await settle(
        (latest) => {
          const stillPending = latest.desiredState !== d.desiredState;
          return {
            ...latest,
            appliedState: d.desiredState,
            appliedAt: at,
            attempts: 0,
            pending: stillPending,
            dueAt: stillPending ? at + latest.cooldownMs : latest.dueAt,
          };
        },
        { decision: 'executed', upstreamOutcome: 'success', message: result.message, at },
      );
      return await record('firewall_state', { id, decision: 'executed', message: result.message });
    } catch (error) {
      const at = now();
      const message = error instanceof Error ? error.message : String(error);
      if (error instanceof ApiError && WINDOW_REFUSAL.test(error.apiMessage)) {
        // Changed elsewhere (or by a run before a crash) within the window: wait for it to open.
        await settle((latest) => ({ ...latest, pending: true, dueAt: at + latest.cooldownMs }), {
          decision: 'deferred',
          upstreamOutcome: error.code,
          message,
          at,
        });
        return await record('firewall_state', { id, decision: 'deferred', message });
      }
      // Failed or unknown: the change stays pending and is sent again after the window, with backoff.
      // Re-sending the same state is harmless if the unknown call did apply it.
      const decision = failureDecision(error);
      const saved = await settle(
        (latest) => {
          const attempts = latest.attempts + 1;
          return {
            ...latest,
            attempts,
            pending: latest.appliedState !== latest.desiredState || decision === 'unknown',
            dueAt: at + retryDelay(attempts, latest.cooldownMs),
          };
        },
        { decision, upstreamOutcome: failureOutcome(error), message, at },
      );
      logger.error(
        {
          server_id: d.serverId,
          ip: d.ip,
          principal: d.principal,
          attempts: saved.attempts,
          decision,
          retry_at: new Date(saved.dueAt).toISOString(),
          err: error,
        },
        'firewall state change failed; it stays pending and is retried',
      );
      return await record('firewall_state', { id, decision, message }, at);
    } finally {
      this.#inFlight.delete(key);
    }
  }

  /**
   * Applies the pending changes due now, one after the other, each decided in one transaction (another replica
   * or a request may have changed or applied it since it was listed). Returns how many were due. Once `signal`
   * is aborted (the replica stopped leading) no further change is decided or sent.
   */
  async applyDue(signal?: AbortSignal): Promise<number> {
    const { account, store, logger, record, config } = this.#deps;
    const now = this.#deps.now();
    const due = await store.dueDesired(account, now);
    if (config.dryRun) return this.#hold(due, now);
    this.#held.clear();
    for (const listed of due) {
      if (signal?.aborted) break;
      if (this.#inFlight.has(`${listed.serverId}/${listed.ip}`)) continue;
      const step = await store.transaction(account, async (tx) => {
        const d = await tx.desired(account, listed.serverId, listed.ip);
        if (!d?.pending || d.dueAt > now) return undefined;
        const base = pendingEntry(d, now);
        if (d.desiredState === d.appliedState && d.attempts === 0) {
          // Firing then resolved inside one window: the IP is already where it should end. No call.
          await tx.saveDesired({ ...d, pending: false });
          const message = `collapsed: IP ${d.ip} is already in state ${d.desiredState}`;
          return { send: false, d, id: await tx.insert({ ...base, decision: 'duplicate', message }) };
        }
        const lastSent = Math.max(
          d.appliedAt ?? -Infinity,
          (await tx.lastSent(account, 'firewall_state', d.serverId, d.ip)) ?? -Infinity,
        );
        if (now - lastSent < d.cooldownMs) {
          await tx.saveDesired({ ...d, dueAt: lastSent + d.cooldownMs });
          return undefined;
        }
        if ((await budgetLeft(tx, account, config.budgetPerHour, now)) <= 0) {
          logger.warn(
            { server_id: d.serverId, ip: d.ip, principal: d.principal },
            'remediation budget exhausted: pending firewall change waits',
          );
          await tx.saveDesired({ ...d, dueAt: now + BUDGET_RETRY_MS });
          return undefined;
        }
        return { send: true, d, id: await tx.insert(base) };
      });
      if (step?.send === false) await record('firewall_state', { id: step.id, decision: 'duplicate', message: '' });
      else if (step) await this.apply(step.d, step.id);
    }
    return due.length;
  }

  /**
   * Dry run: journals each due change once as `dry_run` (source `pending`) and sends nothing; the change stays
   * pending, due, and is sent by the first tick after dry run is switched off. Returns how many rows it wrote.
   */
  async #hold(due: DesiredFirewall[], now: number): Promise<number> {
    const { account, store, record } = this.#deps;
    let journaled = 0;
    for (const listed of due) {
      const key = `${listed.serverId}/${listed.ip}/${listed.desiredState}`;
      if (this.#held.has(key)) continue;
      const message = `dry run: pending state ${listed.desiredState} held, nothing sent upstream (sent once remediation.dry_run is false)`;
      const id = await store.transaction(account, async (tx) => {
        const d = await tx.desired(account, listed.serverId, listed.ip);
        if (!d?.pending || d.dueAt > now || d.desiredState !== listed.desiredState) return undefined;
        return tx.insert({
          ...pendingEntry(d, now),
          decision: 'dry_run',
          message,
        });
      });
      this.#held.add(key);
      if (id !== undefined) {
        journaled++;
        await record('firewall_state', { id, decision: 'dry_run', message });
      }
    }
    return journaled;
  }

  /**
   * After a reload: cancels the pending changes asked for by an alert that no firewall-state rule names any
   * more (firewall-cancel.ts, `cancelWithoutRule`), leaving those whose call is in flight. Returns how many
   * were cancelled. Throws JournalError.
   */
  cancelWithoutRule(): Promise<number> {
    return cancelWithoutRule(this.#deps, (d) => this.#inFlight.has(`${d.serverId}/${d.ip}`));
  }
}
