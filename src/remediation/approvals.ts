/**
 * A second person (require_approval on a rule or a principal): a request that needs approval passes the guards
 * and is journaled `awaiting_approval`, nothing sent (engine.ts). Then another operator approves or denies it,
 * or it expires after `remediation.approval_timeout`.
 *
 * An approval settles the row first — one conditional UPDATE, so of two approvals at once (two replicas, two
 * operators) exactly one settles it and the other is a 409 — and returns a new request of the same requester
 * with the approver named, which the engine decides (`RemediationEngine.approve`): every guard runs again at that
 * moment (target, attack, breaker, cap, cooldown, budget, dry run, and whatever guards are added there later;
 * a request forced past the attack guard stays forced), and the execution is
 * claimed under the delivery key `approval:<row id>`, so it acts at most once. The awaiting row names the
 * execution's row in its message. A power call whose attack state cannot be decided here yet (NoLeaderError) is
 * checked before settling and, should the account be lost in between, the row is put back (a conditional
 * UPDATE): either way it stays awaiting, the approval not spent.
 *
 * What is approved is the request as it was journaled (request.ts `makeRequest`): the rule it was made under,
 * its labels, cooldown, hold, require_owned_ip and force as recorded, never a rule looked up again. When that
 * rule was changed or removed since, it still runs as it was made, and the reply and the row say so.
 */
import type { Logger } from 'pino';
import type { Config } from '../config/types.js';
import { ConflictError, NoLeaderError } from '../errors.js';
import { GUARD_DENIALS } from '../store/decisions.js';
import type { ApprovalSettlement, JournalEntry } from '../store/rows.js';
import type { StateStore } from '../store/store.js';
import { requireDecidable } from './guards.js';
import { makeRequest, ruleChange } from './request.js';
import type { ActionDecision, ActionRequest, TargetDirectory } from './types.js';

export interface ApprovalDeps {
  account: string;
  /** the account's inventory: the attack state an execution needs decided before the row is settled */
  targets: TargetDirectory;
  store: StateStore;
  config: Config['remediation'];
  logger: Logger;
  /** ms since epoch */
  now: () => number;
  /** closes the breaker, as `principal` asked and `approval.by` approved (operator.ts `closeCircuit`) */
  closeCircuit: (
    principal: string,
    reason: string | undefined,
    approval: { by: string; at: number },
  ) => Promise<ActionDecision>;
  /** counts a settled row (metrics, gauges) */
  record: (action: string, result: ActionDecision) => Promise<ActionDecision>;
}

/** An approval's execution, and, when the rule the request was made under changed since, a sentence saying so. */
export type ApprovalResult = ActionDecision & { ruleChanged?: string };

/** An approved request for the engine to decide: the row it settled, by whom and when, and what to run. */
export interface ApprovedExecution {
  row: JournalEntry;
  approver: string;
  /** when it was approved, ms */
  at: number;
  req: ActionRequest;
  /** the rule it was made under changed since: a sentence saying so */
  changed?: string;
}

/** What an approval comes to: a request to decide, or a breaker's close done. */
export type Approved = { execute: ApprovedExecution } | { closed: ApprovalResult };

export class Approvals {
  readonly #deps: ApprovalDeps;

  constructor(deps: ApprovalDeps) {
    this.#deps = deps;
  }

  /**
   * `approver` approves `row` (checked by the caller: another operator, within its accounts and actions), with
   * an optional reason (journaled `approverReason` on the row and its execution): the approval's transition. The
   * row is settled `approved` and the request to run is returned (`execute`: the engine decides it through every
   * guard, then `executed` or `notDecided` completes the row); a breaker's close is closed here (`closed`).
   * Throws ConflictError (already settled, or expired), JournalError, NoLeaderError (the attack state of a
   * power action is not decided here yet: nothing settled, ask again).
   */
  async approve(row: JournalEntry, approver: string, reason?: string): Promise<Approved> {
    const at = this.#deps.now();
    if (row.action === 'circuit_close') return { closed: await this.#approveClose(row, approver, at, reason) };
    // Made before settling: a row that cannot be run as it was made stays awaiting (a 409, nothing settled).
    const req = makeRequest({ kind: 'approval', row, approver, at, ...(reason !== undefined ? { reason } : {}) });
    const changed = ruleChange(row, this.#deps.config.rules);
    // Nor is one settled that the engine cannot decide here yet (NoLeaderError, 503): the approval is kept for
    // a retry, on this replica once it has read the history or on the account's leader.
    requireDecidable(this.#deps.targets, req, this.#deps.config.safety);
    const why = reason !== undefined ? { reason } : {};
    await this.#settle(row, { decision: 'approved', approver, ...why, at, message: `approved by ${approver}` });
    return { execute: { row, approver, at, req, ...(changed ? { changed } : {}) } };
  }

  /** The approved request of `a` was decided (`result`, its execution's row): the approved row says so. */
  async executed(a: ApprovedExecution, result: ActionDecision): Promise<ApprovalResult> {
    const { row, approver, at, changed } = a;
    const ran = GUARD_DENIALS.includes(result.decision)
      ? `nothing sent: journal entry ${result.id} is ${result.decision}`
      : `executed as journal entry ${result.id}: ${result.decision}`;
    const message = `approved by ${approver}; ${ran}${changed ? `; ${changed}` : ''}`;
    await this.#deps.store.complete(row.id, { decision: 'approved', message, at });
    await this.#deps.record(row.action, { id: row.id, decision: 'approved', message });
    this.#deps.logger.info(
      { journal_id: row.id, action: row.action, principal: row.principal, approver, execution: result.id },
      'remediation request approved',
    );
    return changed ? { ...result, ruleChanged: changed } : result;
  }

  /** The approved request of `a` could not be decided (`error`): the row says so, or awaits again. Rethrows. */
  async notDecided(a: ApprovedExecution, error: unknown): Promise<never> {
    const { row, approver, at } = a;
    // Undecidable after all (the account lost between the check and the decision; its transaction rolled
    // back): the row awaits again, the approval kept for a retry.
    if (error instanceof NoLeaderError && (await this.#reopen(row, approver, at))) throw error;
    // No decision was made (journal or server list unavailable): the row says so; the request must be asked again.
    const message = `approved by ${approver}; not decided: ${(error as Error).message}; ask again`;
    await this.#deps.store.complete(row.id, { decision: 'approved', message, at }).catch(() => undefined);
    throw error;
  }

  /** An approved close of the breaker (operator.ts `askCircuitClose`): settled, then closed as it was asked. */
  async #approveClose(row: JournalEntry, approver: string, at: number, reason?: string): Promise<ApprovalResult> {
    const why = reason !== undefined ? { reason } : {};
    await this.#settle(row, { decision: 'approved', approver, ...why, at, message: `approved by ${approver}` });
    const closed = await this.#deps.closeCircuit(row.principal ?? approver, row.reason ?? undefined, {
      by: approver,
      at,
    });
    const message = `approved by ${approver}; the circuit breaker is closed (journal entry ${closed.id})`;
    await this.#deps.store.complete(row.id, { decision: 'approved', message, at });
    await this.#deps.record(row.action, { id: row.id, decision: 'approved', message });
    this.#deps.logger.info(
      { journal_id: row.id, action: row.action, principal: row.principal, approver, execution: closed.id },
      'remediation request approved',
    );
    return closed;
  }

  /** `approver` denies `row`, with an optional reason (journaled `approverReason`). Throws ConflictError, JournalError. */
  async deny(row: JournalEntry, approver: string, reason?: string): Promise<ActionDecision> {
    const at = this.#deps.now();
    const message = `denied by ${approver}${reason ? `: ${reason}` : ''}; nothing sent`;
    const why = reason !== undefined ? { reason } : {};
    await this.#settle(row, { decision: 'denied_by_approver', approver, ...why, at, message });
    this.#deps.logger.info(
      { journal_id: row.id, action: row.action, principal: row.principal, approver },
      'remediation request denied',
    );
    return this.#deps.record(row.action, { id: row.id, decision: 'denied_by_approver', message });
  }

  /**
   * `principal` withdraws `row` (who may is checked by the caller, remediation/withdrawal.ts: its requester, or an
   * operator for an alert's request), with an optional reason (in the message): journaled `withdrawn`, nothing
   * sent; an operator other than the requester is journaled as the row's `approver`, the one who settled it.
   * Throws ConflictError, JournalError.
   */
  async withdraw(row: JournalEntry, principal: string, reason?: string): Promise<ActionDecision> {
    const at = this.#deps.now();
    const message = `withdrawn by ${principal}${reason ? `: ${reason}` : ''}; nothing sent`;
    const approver = principal === row.principal ? null : principal;
    await this.#settle(row, { decision: 'withdrawn', approver, at, message });
    this.#deps.logger.info(
      { journal_id: row.id, action: row.action, principal, requester: row.principal },
      approver === null
        ? 'remediation request withdrawn by its requester'
        : 'remediation request withdrawn by an operator',
    );
    return this.#deps.record(row.action, { id: row.id, decision: 'withdrawn', message });
  }

  /** Expires the rows awaiting approval longer than approval_timeout; returns how many. Throws JournalError. */
  async expire(): Promise<number> {
    const { account, store, config } = this.#deps;
    const now = this.#deps.now();
    let expired = 0;
    for (const row of await store.awaitingApproval(account)) {
      if (now - row.createdAt < config.approvalTimeoutMs) continue;
      const message = expiredMessage(config.approvalTimeoutMs);
      if (!(await store.settleApproval(row.id, { decision: 'expired', approver: null, at: now, message }))) continue;
      expired++;
      this.#deps.logger.warn(
        { journal_id: row.id, action: row.action, server_id: row.serverId, principal: row.principal },
        'remediation request expired: nobody approved it',
      );
      await this.#deps.record(row.action, { id: row.id, decision: 'expired', message });
    }
    return expired;
  }

  /** `row`, approved by `approver` at `at`, awaits approval again; false when that could not be written. */
  async #reopen(row: JournalEntry, approver: string, at: number): Promise<boolean> {
    const reopened = await this.#deps.store.reopenApproval(row, approver, at).catch(() => false);
    if (reopened)
      this.#deps.logger.info(
        { journal_id: row.id, action: row.action, approver },
        'remediation approval not decided here yet (no leader that has read the attack state): awaiting approval again',
      );
    return reopened;
  }

  /** Settles an awaiting row once; an expired one is settled `expired`. Throws ConflictError. */
  async #settle(row: JournalEntry, settlement: ApprovalSettlement): Promise<void> {
    const { store, config } = this.#deps;
    if (settlement.at - row.createdAt >= config.approvalTimeoutMs) {
      const message = expiredMessage(config.approvalTimeoutMs);
      if (await store.settleApproval(row.id, { decision: 'expired', approver: null, at: settlement.at, message }))
        await this.#deps.record(row.action, { id: row.id, decision: 'expired', message });
      throw new ConflictError(`journal entry ${row.id} expired: ${message}`);
    }
    if (!(await store.settleApproval(row.id, settlement))) {
      const now = await store.get(row.id);
      // A withdrawal says why: its requester's reason, or the resolution of its alert (episode.ts).
      const why = now?.decision === 'withdrawn' && now.message ? ` (${now.message})` : '';
      throw new ConflictError(
        `journal entry ${row.id} is ${now?.decision ?? 'gone'}${now?.approver ? ` (by ${now.approver})` : ''}${why}, no longer awaiting approval`,
      );
    }
  }
}

const expiredMessage = (timeoutMs: number) =>
  `expired: nobody approved it within ${Math.round(timeoutMs / 1000)} s (remediation.approval_timeout); nothing sent`;
