/**
 * Who calls a remediation route, and whether it may: each request's credentials (auth.ts) name one principal
 * (`remediation.auth.principals`, or one of the deprecated shared credentials, each a principal with every
 * role); the route needs one role, declared where it is registered (`config: { role }`, `routeRole`); an operator's `accounts` and `actions` bound what it may
 * touch, and a reader's or operator's `accounts` what it may read (`listWithin`, `requireAccount`). A request that is not allowed is a 403 naming the principal and what it lacks, before anything is
 * decided or journaled.
 */
import type { FastifyRequest } from 'fastify';
import { ROLES, type PrincipalAction, type Role } from '../config/schema.js';
import type { Config, Principal } from '../config/types.js';
import { ForbiddenError } from '../errors.js';
import type { JournalEntry, ListFilter } from '../store/rows.js';
import type { StateStore } from '../store/store.js';
import { createAuthCheck, type AuthCheckOptions, type AuthConfig } from './auth.js';

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * the role a principal needs for this remediation route (principals.ts), or the roles any one of which will
     * do; none: refused to everyone
     */
    role?: Role | readonly Role[];
  }
}

/**
 * The route option that declares the role a remediation route needs, given where the route is registered:
 * `app.post(url, { ...routeRole('operator'), schema }, handler)`. A route of the remediation scope without one
 * is refused to everyone.
 */
export const routeRole = (role: Role | readonly Role[]) => ({ config: { role } });

/**
 * The roles that may read (the journal, one entry, the breakers' state, the status page's details): a reader's,
 * and an operator's, so that one credential serves a person for everything an operator uses.
 */
export const READ_ROLES: readonly Role[] = ['reader', 'operator'];

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
    const role = request.routeOptions.config.role;
    if (role === undefined) throw new ForbiddenError(`principal ${principal.name}: ${route} is open to no role`);
    const roles: readonly Role[] = typeof role === 'string' ? [role] : role;
    if (!roles.some((r) => principal.roles.includes(r)))
      throw new ForbiddenError(`principal ${principal.name} lacks the role ${roles.join(' or ')} (${route})`);
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

/**
 * `store.list(filter)` bounded to `accounts` (a principal's `accounts`; undefined: every account): newest first,
 * `filter.limit` rows at most, as `list` answers. With `filter.account` outside `accounts`, no row (the route
 * refuses that with `requireAccount` first). One query per account: the newest `limit` of each hold the newest
 * `limit` of all.
 */
export async function listWithin(
  store: Pick<StateStore, 'list'>,
  filter: ListFilter,
  accounts: readonly string[] | undefined,
): Promise<JournalEntry[]> {
  if (accounts === undefined) return store.list(filter);
  const within = [...new Set(accounts)].filter((a) => filter.account === undefined || a === filter.account);
  const lists = await Promise.all(within.map((account) => store.list({ ...filter, account })));
  return lists
    .flat()
    .sort((a, b) => b.id - a.id)
    .slice(0, filter.limit);
}
