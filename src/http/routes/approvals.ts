/**
 * `POST /api/v1/actions/{id}/approve` and `POST /api/v1/actions/{id}/deny` (optional `{"reason"}`): another
 * operator settles a request journaled `awaiting_approval` (require_approval on its rule or principal). The
 * approver must be an operator other than the requester (four eyes: the requester is a 403) and within its
 * accounts and actions; an unknown row is a 404, one no longer awaiting (settled by someone else, another
 * replica, or expired) a 409, told only to an operator within the row's account and actions (anyone else gets
 * the 403 of its scope first, which names the row's account and nothing else of it).
 *
 * An approval's reply says at the top level whether anything was sent (`sent`, the execution's `decision`, a
 * `message`): when a guard denied the execution (breaker open, cooldown …) it is a 409
 * `BM_ERR_APPROVED_NOT_SENT`, the approval spent and nothing sent, so that neither a person nor a script
 * reads it as done; otherwise a 200.
 *
 * `POST /api/v1/actions/{id}/withdraw` (optional `{"reason"}`): the requester itself withdraws its awaiting
 * request, or any operator of its account an alert's (`withdrawn`, nothing sent, the withdrawing operator
 * journaled as the row's `approver` and in its message; remediation/withdrawal.ts); anyone else is a 403, a row
 * no longer awaiting a 409.
 */
import { STATUS_CODES } from 'node:http';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import type { Static } from 'typebox';
import { ApprovedNotSentError, ConflictError, ForbiddenError, NotFoundError } from '../../errors.js';
import type { RemediationEngine } from '../../remediation/engine.js';
import { GUARD_DENIALS, SENT } from '../../store/decisions.js';
import type { JournalEntry } from '../../store/rows.js';
import type { StateStore } from '../../store/store.js';
import type { PrincipalAction } from '../../config/schema.js';
import { callerOf, requireAccount, requireScope, routeRole } from '../principals.js';
import { withdrawalRefusal } from '../../remediation/withdrawal.js';
import { decisionReply, engineOf } from './actions.js';
import { approvalBody } from './generated/bodies.js';

/**
 * A 409 saying what `row` is when it awaits no approval (executed, denied, withdrawn, expired, an alert's row that
 * never awaited …): approving an executed row is not "expired: nobody approved it".
 */
function settled(row: JournalEntry): void {
  if (row.decision === 'awaiting_approval') return;
  const by = row.approver ? ` (by ${row.approver})` : '';
  // A withdrawal says why: its requester's reason, or the resolution of its alert (remediation/episode.ts).
  const why = row.decision === 'withdrawn' && row.message ? ` (${row.message})` : '';
  throw new ConflictError(
    `journal entry ${row.id} is ${row.decision}${by}${why}, not awaiting approval: there is nothing to settle (${row.source} ${row.action}${row.serverId ? ` of ${row.serverId}` : ''})`,
  );
}

const params = { type: 'object', properties: { id: { type: 'string', pattern: '^[1-9][0-9]{0,15}$' } } } as const;
type Route = { Params: { id: string }; Body: Static<typeof approvalBody> };

export function approvalRoutes(
  app: FastifyInstance,
  deps: { engines: ReadonlyMap<string, RemediationEngine>; store: StateStore },
): void {
  /** The row, its engine and the approver, once the approver may settle it. */
  const settle = async (request: FastifyRequest<Route>) => {
    const approver = callerOf(request);
    const row: JournalEntry | undefined = await deps.store.get(Number(request.params.id));
    if (!row) throw new NotFoundError(`no journal entry ${request.params.id}`);
    const { engine } = engineOf(deps.engines, row.account, 'params/id');
    // A close of the breaker is no action of an operator's `actions`: its account is what bounds it. Checked
    // before what the row is, so that an operator outside its scope learns nothing of the row's decision.
    if (row.action === 'circuit_close') requireAccount(approver, row.account);
    else requireScope(approver, row.account, row.action as PrincipalAction);
    settled(row);
    if (row.principal === approver.name)
      throw new ForbiddenError(
        `principal ${approver.name} asked for journal entry ${row.id}: another operator must approve or deny it`,
      );
    return { row, engine, approver: approver.name };
  };
  const options = { ...routeRole('operator'), schema: { params, body: approvalBody } };
  app.post<Route>('/api/v1/actions/:id/approve', options, async (request, reply) => {
    const { row, engine, approver } = await settle(request);
    const { ruleChanged, ...decided } = await engine.approve(row, approver, request.body?.reason);
    const execution = decisionReply(decided);
    const sent = SENT.includes(execution.decision);
    const answer = {
      approved: row.id,
      approver,
      execution,
      // `ruleChanged`: the rule the request was made under changed since; it ran as it was made.
      ...(ruleChanged ? { ruleChanged } : {}),
      sent,
      decision: execution.decision,
    };
    // A resolved episode (remediation/episode.ts) is refused as a guard's denial is: nothing was sent.
    if (GUARD_DENIALS.includes(execution.decision) || execution.decision === 'resolved') {
      const refused = new ApprovedNotSentError(
        `approved by ${approver}, but nothing was sent: journal entry ${execution.id} is ${execution.decision} (${execution.message}); the approval is spent, ask again once that allows it`,
      );
      return reply.code(refused.statusCode).send({
        statusCode: refused.statusCode,
        code: refused.code,
        error: STATUS_CODES[refused.statusCode],
        message: refused.message,
        ...answer,
      });
    }
    const message = sent
      ? `approved by ${approver}; sent as journal entry ${execution.id}: ${execution.decision}`
      : execution.decision === 'circuit_closed'
        ? `approved by ${approver}; the circuit breaker is closed (journal entry ${execution.id})`
        : `approved by ${approver}; nothing sent: journal entry ${execution.id} is ${execution.decision} (${execution.message})`;
    return { ...answer, message };
  });
  app.post<Route>('/api/v1/actions/:id/deny', options, async (request) => {
    const { row, engine, approver } = await settle(request);
    return { denied: row.id, approver, ...decisionReply(await engine.deny(row, approver, request.body?.reason)) };
  });
  app.post<Route>('/api/v1/actions/:id/withdraw', options, async (request) => {
    const caller = callerOf(request);
    const row: JournalEntry | undefined = await deps.store.get(Number(request.params.id));
    if (!row) throw new NotFoundError(`no journal entry ${request.params.id}`);
    const { engine } = engineOf(deps.engines, row.account, 'params/id');
    // Someone else's (an alert's) request: an operator of its account. Checked first, so that an operator
    // outside it learns nothing of the row (its requester, its decision).
    if (row.principal !== caller.name) requireAccount(caller, row.account);
    const refusal = withdrawalRefusal(row, caller.name);
    if (refusal !== undefined) throw new ForbiddenError(refusal);
    settled(row);
    const result = await engine.withdraw(row, caller.name, request.body?.reason);
    return { withdrawn: row.id, principal: caller.name, ...decisionReply(result) };
  });
}
