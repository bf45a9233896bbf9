/**
 * `POST /api/v1/remediation/circuit/close` with `{"account": "…"}` (left out with one account): closes the
 * account's circuit breaker (remediation.safety.circuit_breaker), journaled under the closing operator's
 * principal (with the optional `"reason"`); power actions are allowed again and the breaker counts servers from
 * now on. A principal with `require_approval` asks instead: the close awaits another operator's approval
 * (`awaiting_approval`, approvals.ts). Behind `remediation.auth` like every remediation endpoint, for the operator role (principals.ts
 * its route's role) within its `accounts` (else 403); 400 for an unknown account, 503 while the journal is unavailable.
 */
import type { FastifyInstance } from 'fastify';
import { Type } from 'typebox';
import type { RemediationEngine } from '../../remediation/engine.js';
import { strictObject } from '../../json-schema.js';
import { callerOf, requireAccount, routeRole } from '../principals.js';
import { accountSchema, configuredAccount } from '../schemas.js';

const closeBody = strictObject({
  account: Type.Optional(Type.Unsafe<string>(accountSchema)),
  reason: Type.Optional(Type.String({ minLength: 1, maxLength: 200 })),
});

export function circuitRoutes(app: FastifyInstance, deps: { engines: ReadonlyMap<string, RemediationEngine> }): void {
  app.post<{ Body: { account?: string; reason?: string } }>(
    '/api/v1/remediation/circuit/close',
    { ...routeRole('operator'), schema: { body: closeBody } },
    async (request) => {
      const { account, entry: engine } = configuredAccount(deps.engines, request.body.account, 'body/account');
      const principal = callerOf(request);
      requireAccount(principal, account);
      const closed = await engine.closeCircuit(principal.name, request.body.reason, principal.requireApproval === true);
      return { account, id: closed.id, decision: closed.decision, message: closed.message, was_open: closed.wasOpen };
    },
  );
}
