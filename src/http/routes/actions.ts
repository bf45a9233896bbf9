/**
 * Operator endpoints, through the same guards as alerts: `POST /api/v1/actions/{powercycle,poweron,
 * poweroff,firewall-state,firewall-sensitivity}`, `GET /api/v1/actions` (the journal, newest first) and
 * `GET /api/v1/servers/:server_id/console.jnlp` (the KVM/IPMI console as a download, contract §4 rule 5).
 * Each body may carry `"reason"` (at most 200 characters), journaled with the caller's principal; the journal
 * filters by `?principal=` (who asked), `?decision=`, `?approver=` (who approved or denied) and `?since=` (a
 * Prometheus duration back from now, such as `24h`). An optional `Idempotency-Key` header makes a retried operator
 * call act once: a key is the caller's (its principal, in the account: remediation/request.ts `operatorKey`), and
 * the same key with another body is refused (422). Every endpoint answers 503 while the journal is unavailable.
 * A target is (account, server_id): the bodies take `account` (the console `?account=`), which may be left
 * out when one account is configured; missing with several, or unknown, it is a 400 and nothing acts.
 * A principal with `accounts` reads the journal of those accounts only: the list leaves the others' rows out,
 * and `?account=` or an entry of another account is a 403, as acting on it is.
 */
import type { FastifyInstance } from 'fastify';
import { ACTION_SPECS, type ActionSpec } from '../../config/actions.js';
import type { Static } from 'typebox';
import { parseDuration } from '../../config/formats.js';
import { ACTIONS, PRINCIPAL_NAME, type ActionName } from '../../config/schema.js';
import type { StateStore } from '../../store/store.js';
import type { RemediationEngine } from '../../remediation/engine.js';
import { makeRequest } from '../../remediation/request.js';
import { BadRequestError, NotFoundError } from '../../errors.js';
import { type JournalEntry, type Verification, VERIFICATIONS } from '../../store/rows.js';
import { DECISIONS } from '../../store/decisions.js';
import { callerOf, listWithin, READ_ROLES, requireAccount, requireScope, routeRole } from '../principals.js';
import { accountSchema, configuredAccount, idSchema, queryInteger, queryIntegerSchema } from '../schemas.js';
import { actionBodies, type serverBody } from './generated/bodies.js';

/**
 * The body of an operator action (routes/bodies.schema.ts, from its entry in config/actions.ts): a power
 * action's is `serverBody`; an action on an IP takes `ip` and its value's field. Unknown fields are errors.
 */
const bodyOf = (action: ActionName) => actionBodies[action];

/** Any operator body, read field by field: a field its action does not have is absent. */
type ActionBody = Static<typeof serverBody> & { ip?: string } & Record<string, unknown>;

/** What `?decision=` may name: every final decision, and `executing` (a row whose upstream call runs). */
export const LISTED_DECISIONS: readonly string[] = [...DECISIONS, 'executing'];

/** `?decision=`, or BadRequestError with a plain sentence naming the decisions; undefined when absent. */
function queryDecision(text: string | undefined): string | undefined {
  if (text === undefined || LISTED_DECISIONS.includes(text)) return text;
  throw new BadRequestError(
    `decision must be one of ${LISTED_DECISIONS.join(', ')} (got ${JSON.stringify(shorten(text))})`,
  );
}

/** `?approver=`: a configured principal's name (approvers are operators), or BadRequestError; undefined when absent. */
function queryApprover(text: string | undefined): string | undefined {
  if (text === undefined || PRINCIPAL_NAME.test(text)) return text;
  throw new BadRequestError(
    `approver must be a principal's name: a letter or digit, then up to 63 letters, digits, ".", "_", "@" or "-" (got ${JSON.stringify(shorten(text))})`,
  );
}

/** The longest `?since=`: a year, beyond any journal retention worth listing in one reply. */
const MAX_SINCE_MS = 365 * 86_400_000;

/** `?since=`: a positive duration in Prometheus's format up to MAX_SINCE_MS, or BadRequestError; undefined when absent. */
function querySince(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const ms = parseDuration(text);
  if (ms !== undefined && ms <= MAX_SINCE_MS) return ms;
  throw new BadRequestError(
    `since must be a duration in Prometheus's format from 1ms to 365d, such as 24h or 1h30m (got ${JSON.stringify(shorten(text))})`,
  );
}

const shorten = (text: string) => (text.length > 24 ? `${text.slice(0, 24)}…` : text);

/** An epoch-ms time as the API answers it: ISO-8601 (UTC, milliseconds), null kept. */
export const iso = (ms: number | null) => (ms === null ? null : new Date(ms).toISOString());

/** An alert's labels as a JSON object, from the JSON text a row keeps; null when it keeps none (or not JSON). */
function labelsObject(text: string | null): Record<string, string> | null {
  if (text === null) return null;
  try {
    const value: unknown = JSON.parse(text);
    return value !== null && typeof value === 'object' && !Array.isArray(value)
      ? (value as Record<string, string>)
      : null;
  } catch {
    return null;
  }
}

/**
 * A journal entry as the API answers it. Times: ISO-8601 (UTC, milliseconds), except `approvedAt` and
 * `verifiedAt`, which stay Unix milliseconds as scripts read them, each with its ISO-8601 twin (`approvedAtIso`,
 * `verifiedAtIso`). `labels` stays the JSON text it always was; `alertLabels` is the same as a JSON object. An id
 * a row does not have (`serverId` of a breaker's close) is null, never "".
 */
const entryReply = (e: JournalEntry) => ({
  ...e,
  serverId: e.serverId === '' ? null : e.serverId,
  createdAt: iso(e.createdAt),
  completedAt: iso(e.completedAt),
  approvedAtIso: iso(e.approvedAt),
  verifiedAtIso: iso(e.verifiedAt),
  alertLabels: labelsObject(e.labels),
});

/** An engine's decision as a reply has it: `send` is the engine's own flag; a reply says `sent`, once. */
export function decisionReply<T extends object>(decision: T): Omit<T, 'send'> {
  const { send: _send, ...rest } = decision as T & { send?: unknown };
  return rest;
}

/**
 * The engine of the account `name` (a body's `account`, a `?account=`), or BadRequestError naming `field`:
 * left out with several accounts, or not configured.
 */
export function engineOf(
  engines: ReadonlyMap<string, RemediationEngine>,
  name: string | undefined,
  field: string,
): { account: string; engine: RemediationEngine } {
  const { account, entry } = configuredAccount(engines, name, field);
  return { account, engine: entry };
}

export function actionRoutes(
  app: FastifyInstance,
  deps: { engines: ReadonlyMap<string, RemediationEngine>; store: StateStore },
): void {
  for (const action of ACTIONS) {
    app.post<{ Body: ActionBody; Headers: { 'idempotency-key'?: string } }>(
      `/api/v1/actions/${action.replaceAll('_', '-')}`,
      {
        ...routeRole('operator'),
        schema: {
          body: bodyOf(action),
          headers: {
            type: 'object',
            properties: { 'idempotency-key': { type: 'string', minLength: 1, maxLength: 200 } },
          },
        },
      },
      async (request) => {
        const body = request.body;
        const key = request.headers['idempotency-key'];
        const field = (ACTION_SPECS[action] as ActionSpec).value?.field;
        const given = field === undefined ? undefined : body[field];
        const value = given === undefined ? undefined : String(given);
        const { account, engine } = engineOf(deps.engines, body.account, 'body/account');
        const principal = callerOf(request);
        requireScope(principal, account, action);
        const result = await engine.request(
          makeRequest({
            kind: 'operator',
            principal,
            account,
            action,
            serverId: body.server_id,
            ...(body.ip !== undefined ? { ip: body.ip } : {}),
            ...(value !== undefined ? { value } : {}),
            ...(body.reason !== undefined ? { reason: body.reason } : {}),
            ...(body.force === true ? { force: true } : {}),
            ...(key ? { idempotencyKey: key } : {}),
          }),
        );
        return { action, account, server_id: body.server_id, ip: body.ip ?? null, ...decisionReply(result) };
      },
    );
  }

  journalRoutes(app, deps);

  app.get<{ Params: { server_id: string }; Querystring: { account?: string } }>(
    '/api/v1/servers/:server_id/console.jnlp',
    {
      ...routeRole('operator'),
      schema: {
        params: { type: 'object', properties: { server_id: idSchema } },
        querystring: { type: 'object', additionalProperties: false, properties: { account: accountSchema } },
      },
    },
    async (request, reply) => {
      const { server_id } = request.params;
      const { account, engine } = engineOf(deps.engines, request.query.account, 'querystring/account');
      const principal = callerOf(request);
      requireScope(principal, account, 'console');
      // Checked against the account's server list (404 unknown, 503 before the first list) and journaled.
      const jnlp = await engine.console(server_id, principal.name);
      return reply
        .type('application/octet-stream')
        .header(
          'content-disposition',
          `attachment; filename="console-${server_id.replace(/[^A-Za-z0-9._-]/g, '_')}.jnlp"`,
        )
        .header('cache-control', 'no-store')
        .send(jnlp);
    },
  );
}

/**
 * `GET /api/v1/actions` (the journal, filtered) and `GET /api/v1/actions/:id` (one entry), for a reader or an
 * operator, within its `accounts`.
 */
function journalRoutes(
  app: FastifyInstance,
  deps: { engines: ReadonlyMap<string, RemediationEngine>; store: StateStore },
): void {
  app.get<{
    Querystring: {
      account?: string;
      server_id?: string;
      action?: ActionName;
      principal?: string;
      decision?: string;
      approver?: string;
      since?: string;
      verification?: Verification;
      limit?: string;
    };
  }>(
    '/api/v1/actions',
    {
      ...routeRole(READ_ROLES),
      schema: {
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: {
            account: accountSchema,
            server_id: idSchema,
            action: { enum: [...ACTIONS] },
            // A configured principal's name, or the `api` command's `cli:<login name>`.
            principal: {
              type: 'string',
              pattern: `^(cli:[A-Za-z0-9._@-]{1,64}|${PRINCIPAL_NAME.source.slice(1, -1)})$`,
            },
            // Checked by the handler, which names what is allowed; a repeated parameter is an array: 400.
            decision: { type: 'string' },
            approver: { type: 'string' },
            since: { type: 'string' },
            verification: { enum: [...VERIFICATIONS] },
            limit: queryIntegerSchema,
          },
        },
      },
    },
    async (request) => {
      const { account, server_id, action, principal, verification } = request.query;
      const decision = queryDecision(request.query.decision);
      const approver = queryApprover(request.query.approver);
      const since = querySince(request.query.since);
      const caller = callerOf(request);
      // An unknown account is a 400, as on the POST endpoints, not an empty list that looks like "no actions";
      // one outside the caller's accounts a 403, as on every route.
      if (account !== undefined) {
        engineOf(deps.engines, account, 'querystring/account');
        requireAccount(caller, account);
      }
      const limit = queryInteger('limit', request.query.limit, { min: 1, max: 1000 }) ?? 100;
      // Without `?account=`: the rows of every account the caller may read (its `accounts`, when given).
      const entries = await listWithin(
        deps.store,
        {
          ...(account ? { account } : {}),
          ...(server_id ? { serverId: server_id } : {}),
          ...(action ? { action } : {}),
          ...(principal ? { principal } : {}),
          ...(decision ? { decision } : {}),
          ...(approver ? { approver } : {}),
          ...(since !== undefined ? { since: Date.now() - since } : {}),
          ...(verification ? { verification } : {}),
          limit,
        },
        caller.accounts,
      );
      return { actions: entries.map(entryReply) };
    },
  );

  // One entry by its id, as the list shows it: 404 for none; 403 for one of an account outside the caller's
  // `accounts` (as approve, deny and withdraw answer it), which says nothing of the row but its account.
  app.get<{ Params: { id: string } }>(
    '/api/v1/actions/:id',
    {
      ...routeRole(READ_ROLES),
      schema: { params: { type: 'object', properties: { id: { type: 'string', pattern: '^[1-9][0-9]{0,15}$' } } } },
    },
    async (request) => {
      const entry = await deps.store.get(Number(request.params.id));
      if (!entry) throw new NotFoundError(`no journal entry ${request.params.id}`);
      requireAccount(callerOf(request), entry.account);
      return entryReply(entry);
    },
  );
}
