/**
 * The operator steps of `remediation test` (the human path): approve, deny, withdraw, expire and close the
 * breaker, driving the offline engine the way the daemon's routes do (http/routes/approvals.ts, actions.ts):
 * the same engine methods, and the same four-eyes checks before them — an approver other than the requester,
 * a withdrawal by the requester or, for an alert's request, by an operator (remediation/withdrawal.ts). Settling a request needs no `remediation.auth` here: principals are
 * names, and whether one may approve an action is the daemon's matter (check-config, the routes).
 */
import { BaremetalError } from '../errors.js';
import type { RemediationEngine } from '../remediation/engine.js';
import { withdrawalRefusal } from '../remediation/withdrawal.js';
import type { JournalEntry } from '../store/rows.js';
import type { StateStore } from '../store/store.js';
import type { TestStep } from './remediation-test-file.js';

/**
 * An operator step the daemon would refuse: the requester approving its own request (a 403), or no single
 * request awaiting approval that the step names (nothing to settle: expired, settled, or several).
 */
export class StepRefused extends BaremetalError {}

interface StepDeps {
  engine: RemediationEngine;
  store: StateStore;
  account: string;
}

type Settle = NonNullable<TestStep['approve']> | NonNullable<TestStep['withdraw']>;

/**
 * Runs the operator part of `step`, if any. Throws StepRefused (what the daemon refuses with a 403, or no
 * single request awaiting approval to settle), ConflictError (the request is no longer awaiting, or expired).
 */
export async function operatorStep(step: TestStep, deps: StepDeps): Promise<void> {
  const { engine } = deps;
  if (step.approve) {
    const row = await awaitingRow(step.approve, 'approve', deps);
    fourEyes(row, step.approve.by);
    await engine.approve(row, step.approve.by, step.approve.reason);
  } else if (step.deny) {
    const row = await awaitingRow(step.deny, 'deny', deps);
    fourEyes(row, step.deny.by);
    await engine.deny(row, step.deny.by, step.deny.reason);
  } else if (step.withdraw) {
    const row = await awaitingRow(step.withdraw, 'withdraw', deps);
    // An alert's requester is Alertmanager's webhook principal, no operator: the daemon refuses it (403), so
    // its request is withdrawn by an operator the step names.
    if (row.source === 'alert' && (step.withdraw.by === undefined || step.withdraw.by === row.principal))
      throw new StepRefused(
        `journal entry ${row.id} is an alert's request: an operator withdraws it (name one with by:), not ${row.principal ?? 'its webhook principal'}, which has no operator role`,
      );
    const by = step.withdraw.by ?? row.principal ?? '';
    const refusal = withdrawalRefusal(row, by);
    if (refusal !== undefined) throw new StepRefused(refusal);
    await engine.withdraw(row, by, step.withdraw.reason);
  } else if (step.close_breaker) {
    await engine.closeCircuit(step.close_breaker.by, step.close_breaker.reason);
  }
}

/** The daemon's four-eyes rule (http/routes/approvals.ts): the requester never settles its own request. */
function fourEyes(row: JournalEntry, approver: string): void {
  if (row.principal === approver)
    throw new StepRefused(
      `principal ${approver} asked for journal entry ${row.id}: another operator must approve or deny it`,
    );
}

/** The one request awaiting approval that `which` names (by server_id and action, when given). */
async function awaitingRow(which: Settle, verb: string, deps: StepDeps): Promise<JournalEntry> {
  const rows = (await deps.store.awaitingApproval(deps.account)).filter(
    (r) =>
      (which.server_id === undefined || r.serverId === which.server_id) &&
      (which.action === undefined || r.action === which.action),
  );
  if (rows.length === 1) return rows[0]!;
  const what = rows.length === 0 ? 'no request awaits approval' : `${rows.length} requests await approval`;
  const fields = which.server_id !== undefined || which.action !== undefined ? ' with those fields' : '';
  const hint = rows.length === 0 ? '' : ': name its server_id or action';
  throw new StepRefused(`${verb}: ${what}${fields}${hint}`);
}

/**
 * The moment an `expire` step moves the clock to (ms): when every request awaiting approval is past
 * `timeoutMs`, or `now` when none is (or all are already).
 */
export async function expiryTime(deps: StepDeps, timeoutMs: number, now: number): Promise<number> {
  const rows = await deps.store.awaitingApproval(deps.account);
  return Math.max(now, ...rows.map((r) => r.createdAt + timeoutMs));
}
