/**
 * The Alertmanager webhook payload (`version: "4"`, Alertmanager's documented webhook format), defined once:
 * the JSON Schema fastify validates the body with, and the types the route and the rules read, derived from
 * it. Fields Alertmanager adds in later versions are accepted and ignored (no `additionalProperties: false`).
 */
import { Type, type Static } from 'typebox';
import { MAX_WEBHOOK_ALERTS } from '../config/schema.js';
import { exactly, oneOf, stringMap } from '../json-schema.js';

const STATUS = ['firing', 'resolved'] as const;

/** One alert of the payload. */
export const webhookAlertSchema = Type.Object({
  status: oneOf(STATUS),
  labels: Type.Unsafe<Record<string, string> & { alertname: string }>({
    type: 'object',
    additionalProperties: { type: 'string' },
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
