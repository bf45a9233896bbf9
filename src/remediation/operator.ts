/**
 * The operator's own actions on an account, journaled like every request but past the guard pipeline:
 * closing the circuit breaker and reading a server's console descriptor. engine.ts's `closeCircuit` and
 * `console` check that the engine is usable and call these.
 */
import { NotFoundError } from '../errors.js';
import { journalRow } from '../store/rows.js';
import type { UpstreamClient } from '../upstream/client.js';
import { getConsole } from '../upstream/dedicated.js';
import { type ExecuteDeps, execute } from './execute.js';
import { failureOutcome } from './outcome.js';
import type { ActionDecision, TargetDirectory } from './types.js';

/** What the operator's actions need of the engine: its account's store, client and servers, and its counting. */
export interface OperatorDeps extends ExecuteDeps {
  account: string;
  client: UpstreamClient;
  targets: TargetDirectory;
}

/**
 * Closes the account's circuit breaker under `principal` (engine.ts `closeCircuit`); `approval` names the
 * second operator who approved a close asked for by a principal with `require_approval` (its row says so).
 * Throws JournalError.
 */
export async function closeCircuit(
  deps: OperatorDeps,
  principal: string,
  reason?: string,
  approval?: { by: string; at: number },
): Promise<ActionDecision & { wasOpen: boolean }> {
  const { account, store } = deps;
  const now = deps.now();
  const closed = await store.transaction(account, async (tx) => {
    const wasOpen = await tx.closeCircuit(account, now);
    const message = wasOpen
      ? 'circuit breaker closed by an operator: power actions are allowed again, counted from now'
      : 'circuit breaker was not open; its window starts again from now';
    const id = await tx.insert({
      ...circuitRow(account, now, principal, reason, 'circuit_closed'),
      message: approval ? `${message}; approved by ${approval.by}` : message,
      ...(approval ? { approver: approval.by, approvedAt: approval.at } : {}),
    });
    return { id, decision: 'circuit_closed' as const, message, wasOpen };
  });
  deps.logger.warn({ was_open: closed.wasOpen, journal_id: closed.id, principal }, closed.message);
  await deps.record('circuit_close', closed);
  return closed;
}

/** The row of a close of the breaker (action `circuit_close`, no server) asked for by `principal`. */
const circuitRow = (
  account: string,
  now: number,
  principal: string,
  reason: string | undefined,
  decision: 'circuit_closed' | 'awaiting_approval',
) =>
  journalRow({
    account,
    createdAt: now,
    source: 'operator',
    action: 'circuit_close',
    serverId: '',
    decision,
    principal,
    reason: reason ?? null,
  });

/**
 * A close of the breaker asked for by a principal with `require_approval`: journaled `awaiting_approval`
 * (action `circuit_close`), the breaker left as it is until another operator approves it (approvals.ts), denies
 * it, or it expires after `remediation.approval_timeout` — the riskiest override gets a second person like
 * any action. Throws JournalError.
 */
export async function askCircuitClose(
  deps: OperatorDeps & { approvalTimeoutMs: number },
  principal: string,
  reason?: string,
): Promise<ActionDecision & { wasOpen: boolean }> {
  const { account, store } = deps;
  const now = deps.now();
  const wasOpen = (await store.circuit(account)).openedAt !== null;
  const message = `awaiting approval by an operator other than ${principal} until ${new Date(now + deps.approvalTimeoutMs).toISOString()}; the circuit breaker stays as it is`;
  const id = await store.insert({ ...circuitRow(account, now, principal, reason, 'awaiting_approval'), message });
  const asked = { id, decision: 'awaiting_approval' as const, message, wasOpen };
  await deps.record('circuit_close', asked);
  return asked;
}

/** The console descriptor of `serverId`, journaled (engine.ts `console`). Throws JournalError, NotFoundError, UpstreamError. */
export async function readConsole(deps: OperatorDeps, serverId: string, principal: string): Promise<string> {
  const { account, store, targets } = deps;
  const now = deps.now();
  const entry = journalRow({
    account,
    createdAt: now,
    source: 'operator',
    action: 'console',
    serverId,
    decision: 'executing',
    principal,
  });
  if (!targets.hasServer(serverId)) {
    const message = `server ${serverId} is not in the latest server list`;
    const id = await store.insert({ ...entry, decision: 'denied_unknown_target', message });
    await deps.record('console', { id, decision: 'denied_unknown_target', message });
    throw new NotFoundError(message);
  }
  const id = await store.insert(entry);
  const sent = await execute(deps, {
    id,
    action: 'console',
    log: { principal, server_id: serverId },
    call: () => getConsole(deps.client, serverId),
    message: (xml) => `console descriptor sent (${Buffer.byteLength(xml)} bytes)`,
    // Reading a descriptor changes nothing upstream: a failure is `failed`, never `unknown`.
    judge: (error) => ({ decision: 'failed', upstreamOutcome: failureOutcome(error) }),
    failedMessage: 'console descriptor read failed',
  });
  if (!('result' in sent)) throw sent.error;
  return sent.result;
}
