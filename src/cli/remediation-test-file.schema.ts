/**
 * The schema of a `remediation test` file (cli/remediation-test-file.ts reads it), declared with TypeBox. Build
 * time only: `npm run schemas` writes it as plain JSON Schema into cli/generated/remediation-test-file.ts; nothing
 * at run time imports this module (issue 53).
 */
import { Type } from 'typebox';
import { oneOf, stringMap, strictObject } from '../json-schema.js';
import { webhookSchema } from '../remediation/webhook.schema.js';

// Any duration in Prometheus's format (`8m1s`, `1h30m`), as the config takes it: checked by `ms`, which names it.
const duration = Type.String({ minLength: 1 });
const row = Type.Object(
  {
    action: Type.Optional(Type.String()),
    server_id: Type.Optional(Type.String()),
    ip: Type.Optional(Type.String()),
    decision: Type.String(),
    source: Type.Optional(Type.String()),
    principal: Type.Optional(Type.String()),
    approver: Type.Optional(Type.String()),
    /** verifying, verified, ineffective (a rule's verify_within) */
    verification: Type.Optional(Type.String()),
  },
  { additionalProperties: false },
);
const call = strictObject({
  operation: Type.String(),
  server_id: Type.Optional(Type.String()),
  ip: Type.Optional(Type.String()),
  state: Type.Optional(Type.String()),
  sensitivity: Type.Optional(Type.String()),
});
const shortAlert = strictObject({
  alertname: Type.String({ minLength: 1 }),
  labels: stringMap({ default: {} }),
  status: oneOf(['firing', 'resolved'], { default: 'firing' }),
});
/** Which request awaiting approval an operator step settles: the only one, or the one with these fields. */
const awaiting = {
  server_id: Type.Optional(Type.String()),
  action: Type.Optional(Type.String()),
  reason: Type.Optional(Type.String()),
};
const principal = Type.String({ minLength: 1 });
const step = strictObject({
  at: duration,
  alert: Type.Optional(shortAlert),
  alerts: Type.Optional(Type.Array(shortAlert, { maxItems: 1000 })),
  payload: Type.Optional(webhookSchema),
  /** another operator approves the awaiting request (remediation-test-steps.ts) */
  approve: Type.Optional(strictObject({ by: principal, ...awaiting })),
  /** another operator denies it */
  deny: Type.Optional(strictObject({ by: principal, ...awaiting })),
  /** its requester withdraws it, or an operator (`by`, required for an alert's request) an alert's */
  withdraw: Type.Optional(strictObject({ by: Type.Optional(principal), ...awaiting })),
  /** time passes until every awaiting request is past remediation.approval_timeout */
  expire: Type.Optional(Type.Literal(true)),
  /** an operator closes the account's circuit breaker */
  close_breaker: Type.Optional(strictObject({ by: principal, reason: Type.Optional(Type.String()) })),
  /**
   * The alerts Alertmanager holds from this step on (as promtool's `input_series` states the series), read by
   * the outage gate (`block_while_firing`) and the verifier; `[]` none. Before a step states it, the test has no
   * Alertmanager: the gate denies power actions as unknown.
   */
  alertmanager: Type.Optional(
    Type.Array(strictObject({ alertname: Type.String({ minLength: 1 }), labels: stringMap({ default: {} }) }), {
      maxItems: 1000,
    }),
  ),
  /** the operator step is refused with a message containing this */
  error: Type.Optional(Type.String({ minLength: 1 })),
  expect: Type.Array(row, { default: [] }),
  calls: Type.Optional(Type.Array(call)),
});

const server = strictObject({
  id: Type.String({ minLength: 1 }),
  ips: Type.Array(Type.String(), { default: [] }),
  attacks: Type.Array(strictObject({ ip: Type.String(), at: duration }), { default: [] }),
});
/** A test file of `remediation test`. */
export const testFileSchema = strictObject({
  remediation: Type.Optional(Type.Object({}, { additionalProperties: true })),
  config_file: Type.Optional(Type.String({ minLength: 1 })),
  schedules: Type.Optional(stringMap()),
  servers: Type.Array(server, { minItems: 1, maxItems: 100000 }),
  timeline: Type.Array(step, { minItems: 1, maxItems: 10000 }),
});
