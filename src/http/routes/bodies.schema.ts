/**
 * The bodies of the operator endpoints (routes/actions.ts, circuit.ts, approvals.ts), declared with TypeBox.
 * Build time only: `npm run schemas` writes them as plain JSON Schema into http/routes/generated/bodies.ts, which
 * the routes give fastify; nothing at run time imports this module (issue 53).
 */
import { Type, type TSchema } from 'typebox';
import { ACTION_SPECS, type ActionSpec } from '../../config/actions.js';
import { ACTIONS, type ActionName } from '../../config/schema.js';
import { oneOf, strictObject } from '../../json-schema.js';
import { accountSchema, idSchema } from '../schemas.js';

const ip = Type.Unsafe<string>({ type: 'string', anyOf: [{ format: 'ipv4' }, { format: 'ipv6' }] });
const serverId = Type.Unsafe<string>(idSchema);
const account = Type.Optional(Type.Unsafe<string>(accountSchema));
/** Why the operator asks: journaled with the row and returned by `GET /api/v1/actions`. */
const reason = Type.Optional(Type.String({ minLength: 1, maxLength: 200 }));
/** A power action's body; `force: true` passes the attack guard (remediation.safety), and its row says so. */
export const serverBody = strictObject({ account, server_id: serverId, reason, force: Type.Optional(Type.Boolean()) });

/**
 * The body of an operator action, from its entry in config/actions.ts: a power action's is `serverBody`; an
 * action on an IP takes `ip` and its value's field (exactly the JSON values the table lists: `true`, `"01"`
 * or `[1]` are 400). Unknown fields are errors.
 */
function bodyOf(action: ActionName): TSchema {
  const spec: ActionSpec = ACTION_SPECS[action];
  if (spec.kind === 'power') return serverBody;
  const value = spec.value ? { [spec.value.field]: oneOf(spec.value.values) } : {};
  return strictObject({ account, server_id: serverId, reason, ip, ...value });
}

/** Every operator action's body, by action. */
export const actionBodies = Object.fromEntries(ACTIONS.map((action) => [action, bodyOf(action)])) as Record<
  ActionName,
  TSchema
>;

/** `POST /api/v1/remediation/circuit/close` (circuit.ts). */
export const closeBody = strictObject({ account, reason });

/** `POST /api/v1/actions/{id}/approve`, `/deny`, `/withdraw` (approvals.ts): an optional reason. */
export const approvalBody = Type.Optional(strictObject({ reason }));
