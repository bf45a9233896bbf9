/**
 * Who calls a remediation route, and whether it may: each request's credentials (auth.ts) name one principal
 * (`remediation.auth.principals`, or one of the deprecated shared credentials, each a principal with every
 * role); the route needs one role (ROUTE_ROLES); an operator's `accounts` and `actions` bound what it may
 * touch. A request that is not allowed is a 403 naming the principal and what it lacks, before anything is
 * decided or journaled.
 */
import type { FastifyRequest } from 'fastify';
import { ACTIONS, ROLES, type PrincipalAction, type Role } from '../config/schema.js';
import type { Config, Principal } from '../config/types.js';
import { ForbiddenError } from '../errors.js';
import { createAuthCheck, type AuthCheckOptions, type AuthConfig } from './auth.js';

/**
 * The role each remediation route needs, by `METHOD path` as the route is declared. A route of the
 * remediation scope that is not listed is refused to everyone: a new route adds its line here.
 */
export const ROUTE_ROLES: Readonly<Record<string, Role>> = {
  'POST /api/v1/alertmanager': 'webhook',
  ...Object.fromEntries(ACTIONS.map((a) => [`POST /api/v1/actions/${a.replaceAll('_', '-')}`, 'operator'])),
  'GET /api/v1/servers/:server_id/console.jnlp': 'operator',
  'POST /api/v1/actions/:id/approve': 'operator',
  'POST /api/v1/actions/:id/deny': 'operator',
  'POST /api/v1/actions/:id/withdraw': 'operator',
  'POST /api/v1/remediation/circuit/close': 'operator',
  'GET /api/v1/actions': 'reader',
};

/**
 * Every principal of `remediation`: the configured ones, then the deprecated form's, each with every role:
 * `token-1`, `token-2`, … for `bearer_token_files` (in their order) and the user's name for `basic_auth_users`.
 */
export function remediationPrincipals(remediation: Config['remediation']): Principal[] {
  return [
    ...remediation.principals,
    ...remediation.bearerTokens.map((bearerToken, i) => ({ name: `token-${i + 1}`, bearerToken, roles: [...ROLES] })),
    ...Object.entries(remediation.basicAuthUsers).map(([name, basicAuthHash]) => ({
      name,
      basicAuthHash,
      roles: [...ROLES],
    })),
  ];
}

/** The principal each request was authenticated as (set by the check `createPrincipalCheck` builds). */
const callers = new WeakMap<FastifyRequest, Principal>();

/** The principal `request` was authenticated as. Throws when the route is not behind the principal check (a bug). */
export function callerOf(request: FastifyRequest): Principal {
  const principal = callers.get(request);
  if (!principal) throw new Error(`no principal for ${request.method} ${request.url}: route not behind the check`);
  return principal;
}

/**
 * The fastify `onRequest` hook of the remediation scope: authenticates (401 as auth.ts says; 403 when no
 * principal is configured), then refuses (403) a principal without the role its route needs.
 */
export function createPrincipalCheck(
  principals: readonly Principal[],
  options: AuthCheckOptions,
): (request: FastifyRequest) => Promise<void> {
  const byToken = principals.filter((p) => p.bearerToken !== undefined);
  const byUser = new Map(principals.flatMap((p) => (p.basicAuthHash === undefined ? [] : ([[p.name, p]] as const))));
  const auth: AuthConfig = {
    bearerTokens: byToken.map((p) => p.bearerToken!),
    basicAuthUsers: Object.fromEntries([...byUser].map(([name, p]) => [name, p.basicAuthHash!])),
  };
  const check = createAuthCheck(auth, 'forbid', options);
  return async (request) => {
    const credential = await check(request);
    const principal =
      credential === undefined
        ? undefined
        : 'token' in credential
          ? byToken[credential.token]
          : byUser.get(credential.user);
    if (!principal) throw new ForbiddenError('no principal for these credentials');
    const route = `${request.method} ${request.routeOptions.url ?? ''}`;
    const role = ROUTE_ROLES[route];
    if (role === undefined) throw new ForbiddenError(`principal ${principal.name}: ${route} is open to no role`);
    if (!principal.roles.includes(role))
      throw new ForbiddenError(`principal ${principal.name} lacks the role ${role} (${route})`);
    callers.set(request, principal);
  };
}

/**
 * Throws ForbiddenError (403) when `principal` may not touch `account` or ask for `action` (its `accounts` and
 * `actions`, when given).
 */
export function requireScope(principal: Principal, account: string, action: PrincipalAction): void {
  requireAccount(principal, account);
  if (principal.actions && !principal.actions.includes(action))
    throw new ForbiddenError(
      `principal ${principal.name} may not ask for ${action} (its actions: ${principal.actions.join(', ')})`,
    );
}

/** Throws ForbiddenError (403) when `principal` may not touch `account` (its `accounts`, when given). */
export function requireAccount(principal: Principal, account: string): void {
  if (principal.accounts && !principal.accounts.includes(account))
    throw new ForbiddenError(
      `principal ${principal.name} may not act on account ${account} (its accounts: ${principal.accounts.join(', ')})`,
    );
}
