/**
 * The Alertmanager webhook payload's schema (remediation/webhook.ts reads it), declared with TypeBox. Build time
 * only: `npm run schemas` writes it as plain JSON Schema into remediation/generated/webhook.ts; nothing at run
 * time imports this module (issue 53).
 */
import { Type } from 'typebox';
import { MAX_WEBHOOK_ALERTS } from '../config/schema.js';
import { exactly, oneOf, stringMap } from '../json-schema.js';
import { LABEL_NAME } from '../store/rows.js';

const STATUS = ['firing', 'resolved'] as const;

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
