/**
 * The Alertmanager webhook payload (`version: "4"`, Alertmanager's documented webhook format), defined once:
 * the JSON Schema fastify validates the body with (declared with TypeBox in webhook.schema.ts, generated as
 * plain JSON Schema into generated/webhook.ts by `npm run schemas`: TypeBox is not loaded at run time), and the
 * types the route and the rules read, derived from it. Fields Alertmanager adds in later versions are accepted and ignored (no `additionalProperties: false`).
 */
import type { Static } from 'typebox';
import { webhookAlertSchema, webhookSchema } from './generated/webhook.js';
import { LABEL_NAME, labelsTooLong, MAX_LABELS_JSON } from '../store/rows.js';

/** The payload's JSON Schema (remediation/webhook.schema.ts; fastify validates the body with it). */
export { webhookAlertSchema, webhookSchema };

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
