/**
 * `GET /api/v1/remediation/circuit[?account=]`: each account's breaker as the state store holds it now (open or
 * closed, since when, why), for a reader or an operator within its `accounts`; the same store the engine
 * consults, so it says "open" from the moment the breaker opened (the gauge of /metrics is refreshed every 10 s),
 * on any replica.
 *
 * `POST /api/v1/remediation/circuit/close` with `{"account": "…"}` (left out with one account): closes the
 * account's circuit breaker (remediation.safety.circuit_breaker), journaled under the closing operator's
 * principal (with the optional `"reason"`); power actions are allowed again and the breaker counts servers from
 * now on. A principal with `require_approval` asks instead: the close awaits another operator's approval
 * (`awaiting_approval`, approvals.ts). Behind `remediation.auth` like every remediation endpoint, for the operator role (principals.ts
 * its route's role) within its `accounts` (else 403); 400 for an unknown account, 503 while the journal is unavailable.
 */
import type { FastifyInstance } from 'fastify';
import type { RemediationEngine } from '../../remediation/engine.js';
import type { StateStore } from '../../store/store.js';
import { callerOf, READ_ROLES, requireAccount, routeRole } from '../principals.js';
import { accountSchema, configuredAccount } from '../schemas.js';
import { iso } from './actions.js';
import { closeBody } from './generated/bodies.js';

/** One account's breaker as `GET /api/v1/remediation/circuit` answers it (times ISO-8601, UTC). */
export interface BreakerReply {
  account: string;
  open: boolean;
  /** when it opened; null while closed */
  openedAt: string | null;
  /** when an operator last closed it; null when never */
  closedAt: string | null;
  /** why it opened; null while closed */
  message: string | null;
}

export function circuitRoutes(
  app: FastifyInstance,
  deps: { engines: ReadonlyMap<string, RemediationEngine>; store: Pick<StateStore, 'circuit'> },
): void {
  app.get<{ Querystring: { account?: string } }>(
    '/api/v1/remediation/circuit',
    {
      ...routeRole(READ_ROLES),
      schema: { querystring: { type: 'object', additionalProperties: false, properties: { account: accountSchema } } },
    },
    async (request) => {
      const principal = callerOf(request);
      const asked = request.query.account;
      // One account asked for: 400 when unknown, 403 outside the principal's accounts; else every one it may see.
      if (asked !== undefined) {
        configuredAccount(deps.engines, asked, 'querystring/account');
        requireAccount(principal, asked);
      }
      const accounts = [...deps.engines.keys()].filter(
        (a) => (asked === undefined || a === asked) && (!principal.accounts || principal.accounts.includes(a)),
      );
      const breakers: BreakerReply[] = [];
      for (const account of accounts) {
        const state = await deps.store.circuit(account);
        breakers.push({
          account,
          open: state.openedAt !== null,
          openedAt: iso(state.openedAt),
          closedAt: iso(state.closedAt),
          message: state.openedAt === null ? null : state.message,
        });
      }
      return { breakers };
    },
  );

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
