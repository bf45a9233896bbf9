/**
 * The Alertmanager webhook payload (`version: "4"`, Alertmanager's documented webhook format), defined once:
 * the JSON Schema fastify validates the body with, and the types the route and the rules read, derived from
 * it. Fields Alertmanager adds in later versions are accepted and ignored (no `additionalProperties: false`).
 */
import { Type, type Static } from 'typebox';
import { MAX_WEBHOOK_ALERTS } from '../config/schema.js';
import { exactly, oneOf, stringMap } from '../json-schema.js';
import { labelsTooLong, MAX_LABELS_JSON } from '../store/rows.js';

const STATUS = ['firing', 'resolved'] as const;

/**
 * A label name as Prometheus allows it (its data model); a key beyond it is refused where the payload enters, so
 * no label can be named as a journal row's digest of the labels (store/rows.ts `labelsJson`) or anything else.
 */
export const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/** One alert of the payload. */
export const webhookAlertSchema = Type.Object({
  status: oneOf(STATUS),
  labels: Type.Unsafe<Record<string, string> & { alertname: string }>({
    type: 'object',
    additionalProperties: { type: 'string' },
    propertyNames: { pattern: LABEL_NAME.source },
    required: ['alertname'],
  }),
  annotations: Type.Optional(stringMap()),
  startsAt: Type.String({ minLength: 1 }),
  endsAt: Type.Optional(Type.String()),
  generatorURL: Type.Optional(Type.String()),
  fingerprint: Type.String({ minLength: 1 }),
});

/**
 * The whole payload; at most MAX_WEBHOOK_ALERTS alerts here, and at most `remediation.max_alerts` (default
 * 1000), which the route checks so that its refusal names the key. Alertmanager truncates larger groups
 * itself when its webhook_config sets `max_alerts` (and says so in `truncatedAlerts`).
 */
export const webhookSchema = Type.Object({
  version: exactly('4'),
  groupKey: Type.Optional(Type.String()),
  truncatedAlerts: Type.Optional(Type.Integer()),
  status: oneOf(STATUS),
  receiver: Type.Optional(Type.String()),
  groupLabels: Type.Optional(stringMap()),
  commonLabels: Type.Optional(stringMap()),
  commonAnnotations: Type.Optional(stringMap()),
  externalURL: Type.Optional(Type.String()),
  alerts: Type.Array(webhookAlertSchema, { maxItems: MAX_WEBHOOK_ALERTS }),
});

export type WebhookAlert = Static<typeof webhookAlertSchema>;
export type WebhookBody = Static<typeof webhookSchema>;

/** One validation error as Ajv reports it (fastify's FastifySchemaValidationError, with Ajv's `propertyName`). */
interface SchemaError {
  keyword: string;
  instancePath: string;
  message?: string;
  propertyName?: string;
}

/**
 * The webhook route's refusal of a payload the schema rejects, as fastify words it (`body/alerts/0 must have
 * required property 'fingerprint'`), except that a label name Prometheus would not allow is named:
 * `body/alerts/1/labels: "server-id" is not a label name (^[a-zA-Z_][a-zA-Z0-9_]*$)`.
 */
export function webhookSchemaError(errors: readonly SchemaError[], dataVar: string): Error {
  const text = errors
    // The wrapper of a label name's own error says only "property name must be valid".
    .filter((e) => e.keyword !== 'propertyNames')
    .map((e) =>
      e.propertyName === undefined
        ? `${dataVar}${e.instancePath} ${e.message ?? 'is not valid'}`
        : `${dataVar}${e.instancePath}: ${JSON.stringify(e.propertyName)} is not a label name (${LABEL_NAME.source})`,
    );
  return new Error(text.join(', '));
}

/** The longest alertname or fingerprint the long-labels warning repeats, characters (either may be the long one). */
export const MAX_LOGGED_LABEL = 200;

const logged = (text: string) =>
  text.length <= MAX_LOGGED_LABEL ? text : `${text.slice(0, MAX_LOGGED_LABEL)}… (${text.length} characters)`;

/**
 * The warning for a delivered alert whose labels are longer than a journal row keeps (store/rows.ts
 * `labelsJson`): its fields (alertname and fingerprint cut to MAX_LOGGED_LABEL characters, marked with their
 * length) and message; undefined for any other. The route logs it once per alert delivered, whatever the number
 * of rules that match it.
 */
export function labelsTooLongWarning(
  alert: Pick<WebhookAlert, 'labels' | 'fingerprint'>,
): { fields: Record<string, string | number>; message: string } | undefined {
  if (!labelsTooLong(alert.labels)) return undefined;
  return {
    fields: {
      fingerprint: logged(alert.fingerprint),
      alertname: logged(alert.labels.alertname),
      max_labels_json: MAX_LABELS_JSON,
    },
    message: `alert labels longer than ${MAX_LABELS_JSON} characters as JSON: the journal keeps their SHA-256 (its episode is matched on it), no silence is made while it is handled, and remediation replay cannot decide it again`,
  };
}
