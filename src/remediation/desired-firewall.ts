/**
 * Desired firewall state: per IP the state the daemon wants, kept in the journal. A change inside the hold,
 * the API's 2-minute window (contract §8) or a retry backoff is kept pending and applied when due; the
 * latest wins; a failed change stays pending and is retried with backoff. The engine decides on a request
 * and then hands firewall-state requests to this module (`admit` inside its transaction, `apply` after it);
 * its tick asks for the changes due (`listDue`) and decides each through the guards before `apply`.
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
import { type Completion, execute, judgeWrite, SENDERS } from './execute.js';
import { type CancelDeps, cancelWithoutRule, pendingEntry } from './firewall-cancel.js';
import { retryDelay } from './outcome.js';
import type { ActionDecision, ActionRequest, Verdict } from './types.js';

/** The API's refusal inside its 2-minute window (contract §7). */
const WINDOW_REFUSAL = /2 minutes/i;
/** A pending change the budget holds back is looked at again after this long, ms. */
export const BUDGET_RETRY_MS = 60_000;

/** Why a firewall change waits for `until` (ms): its hold, the API's 2-minute window or a retry backoff. */
export const dueAtWhy = (until: number) =>
  `due at ${new Date(until).toISOString()} (hold, 2-minute window or retry backoff)`;

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
   * The `desired_state` guard (decide.ts GUARDS), inside the decision transaction `tx`. A request: records the
   * wanted state (`desired`; in dry run none is — the journal's `dry_run` row is the record, so
   * `baremetal_firewall_desired_state` only ever shows rows the store holds), `duplicate` when the IP is
   * already in that state, deferred while its hold or retry backoff runs or another change of the IP is in
   * flight. A due change (`due`, as listed): collapsed when the IP is already where it should end, deferred
   * while in flight. The window and the budget are the guards after this one.
   */
  async admit(
    req: ActionRequest,
    now: number,
    tx: StateQueries,
    due?: DesiredFirewall,
  ): Promise<{ desired?: DesiredFirewall; verdict?: Verdict }> {
    const { account, config } = this.#deps;
    const ip = req.ip!;
    const state = req.value as '0' | '1';
    const inFlight = this.#inFlight.has(`${req.serverId}/${ip}`);
    const whileInFlight = (d: DesiredFirewall): Verdict => ({
      defer: { until: d.dueAt, why: 'another change of this IP is in flight' },
    });
    if (due) {
      if (due.desiredState === due.appliedState && due.attempts === 0) {
        // Firing then resolved inside one window: the IP is already where it should end. No call.
        await tx.saveDesired({ ...due, pending: false });
        const message = `collapsed: IP ${due.ip} is already in state ${due.desiredState}`;
        return { verdict: { decision: 'duplicate', message, claim: false } };
      }
      return inFlight ? { verdict: whileInFlight(due) } : {};
    }
    if (config.dryRun)
      return {
        verdict: {
          decision: 'dry_run',
          message: `dry run: desired state ${state} neither recorded nor sent upstream`,
          claim: true,
        },
      };
    const previous = await tx.desired(account, req.serverId, ip);
    // A failing change keeps its backoff.
    const backoff = previous?.pending && previous.attempts > 0 ? previous.dueAt : now;
    const desired: DesiredFirewall = {
      account,
      serverId: req.serverId,
      ip,
      desiredState: state,
      dueAt: Math.max(now + (req.holdMs ?? 0), backoff),
      // After a failed or unknown attempt the API's state is not known for sure: send, even the applied state.
      pending: previous?.appliedState !== state || (previous.pending && previous.attempts > 0),
      attempts: previous?.pending ? previous.attempts : 0,
      appliedState: previous?.appliedState ?? null,
      appliedAt: previous?.appliedAt ?? null,
      cooldownMs: Math.max(req.cooldownMs, previous?.cooldownMs ?? 0),
      // The latest request sets the state, so its principal is the one its deferred change is journaled under.
      principal: req.principal,
    };
    await tx.saveDesired(desired);
    if (!desired.pending)
      return {
        desired,
        verdict: {
          decision: 'duplicate',
          message: `IP ${ip} is already in state ${state}; nothing to do`,
          claim: true,
        },
      };
    if (inFlight) return { desired, verdict: whileInFlight(desired) };
    if (desired.dueAt > now)
      return { desired, verdict: { defer: { until: desired.dueAt, why: dueAtWhy(desired.dueAt) } } };
    return { desired };
  }

  /**
   * Sends a desired firewall state (journal row `id` is already written) through the one way out (execute.ts)
   * and settles it: the desired state is saved from its latest form and the row completed, in one transaction.
   * A refusal inside the API's window is `deferred` (changed elsewhere, or by a run before a crash): due again
   * when the window opens. A failed or unknown change stays pending and is sent again after the window, with
   * backoff (re-sending the same state is harmless if the unknown call did apply it).
   */
  async apply(d: DesiredFirewall, id: number): Promise<ActionDecision> {
    const { account, store } = this.#deps;
    const key = `${d.serverId}/${d.ip}`;
    this.#inFlight.add(key);
    const settle = (done: Completion) =>
      store.transaction(account, async (tx) => {
        const latest = (await tx.desired(d.account, d.serverId, d.ip)) ?? d;
        const saved = settled(d, latest, done);
        await tx.saveDesired(saved);
        await tx.complete(id, done);
        return { retry_at: new Date(saved.dueAt).toISOString(), attempts: saved.attempts };
      });
    try {
      const {
        id: row,
        decision,
        message,
      } = await execute(this.#deps, {
        id,
        action: 'firewall_state',
        log: { server_id: d.serverId, ip: d.ip, principal: d.principal },
        call: () =>
          SENDERS.firewall_state(this.#deps.client, { serverId: d.serverId, ip: d.ip, value: d.desiredState }),
        message: (sent) => sent.message,
        judge: (error) =>
          error instanceof ApiError && WINDOW_REFUSAL.test(error.apiMessage)
            ? { decision: 'deferred', upstreamOutcome: error.code }
            : judgeWrite(error),
        complete: settle,
        failedMessage: 'firewall state change failed; it stays pending and is retried',
      });
      return { id: row, decision, message };
    } finally {
      this.#inFlight.delete(key);
    }
  }

  /**
   * The pending changes due at `now` (ms), for the engine's tick to decide one by one (engine.ts: each in one
   * transaction, `stillDue` then the guards, decide.ts `decideDue`; then `apply` or recorded); `count`, how many
   * were due. In dry run none is returned: each is journaled once as held (`count`: how many rows that wrote).
   */
  async listDue(now: number): Promise<{ due: DesiredFirewall[]; count: number }> {
    const { account, store, config } = this.#deps;
    const due = await store.dueDesired(account, now);
    if (config.dryRun) return { due: [], count: await this.#hold(due, now) };
    this.#held.clear();
    return { due, count: due.length };
  }

  /**
   * `listed` as it is now in `tx`, when still pending and due at `now` (ms): another replica or a request may
   * have changed or applied it since it was listed. Throws JournalError.
   */
  async stillDue(listed: DesiredFirewall, now: number, tx: StateQueries): Promise<DesiredFirewall | undefined> {
    const d = await tx.desired(this.#deps.account, listed.serverId, listed.ip);
    return d?.pending && d.dueAt <= now ? d : undefined;
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

/**
 * The desired state once the call of `d` ended `done`, from its `latest` form (it may have changed while the
 * call was in flight: then it stays pending). A deferral waits for the window; a failure backs off.
 */
function settled(d: DesiredFirewall, latest: DesiredFirewall, done: Completion): DesiredFirewall {
  const { decision, at } = done;
  if (decision === 'executed') {
    const stillPending = latest.desiredState !== d.desiredState;
    return {
      ...latest,
      appliedState: d.desiredState,
      appliedAt: at,
      attempts: 0,
      pending: stillPending,
      dueAt: stillPending ? at + latest.cooldownMs : latest.dueAt,
    };
  }
  if (decision === 'deferred') return { ...latest, pending: true, dueAt: at + latest.cooldownMs };
  const attempts = latest.attempts + 1;
  return {
    ...latest,
    attempts,
    pending: latest.appliedState !== latest.desiredState || decision === 'unknown',
    dueAt: at + retryDelay(attempts, latest.cooldownMs),
  };
}
