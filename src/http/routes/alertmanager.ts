/**
 * `POST /api/v1/alertmanager`: the Alertmanager webhook receiver (payload `version: "4"`). Each alert of
 * the group is matched against the rules separately. 200 for every accepted payload whatever the
 * decisions (Alertmanager must not retry a denied action); 400 naming the field for a malformed one, and
 * for one of more than `remediation.max_alerts` alerts;
 * 503 when the journal cannot be written or no server list is known yet (Alertmanager retries).
 * Each request goes to the engine of the account its alert names (remediation/rules.ts: `account_label`).
 */
import type { FastifyInstance } from 'fastify';
import type { RemediationRule } from '../../config/types.js';
import { BadRequestError } from '../../errors.js';
import type { RemediationEngine } from '../../remediation/engine.js';
import { matches, requestsFor, resolvedEpisodes } from '../../remediation/rules.js';
import {
  labelsTooLongWarning,
  webhookSchema,
  webhookSchemaError,
  type WebhookBody,
} from '../../remediation/webhook.js';
import type { Metrics } from '../../metrics/definitions.js';
import { callerOf, routeRole } from '../principals.js';

export function alertmanagerRoutes(
  app: FastifyInstance,
  deps: {
    engines: ReadonlyMap<string, RemediationEngine>;
    rules: () => RemediationRule[];
    metrics: Metrics;
    /** alerts one delivery may carry (`remediation.max_alerts`) */
    maxAlerts: number;
  },
): void {
  app.post<{ Body: WebhookBody }>(
    '/api/v1/alertmanager',
    { ...routeRole('webhook'), schema: { body: webhookSchema }, schemaErrorFormatter: webhookSchemaError },
    async (request) => {
      const { alerts } = request.body;
      if (alerts.length > deps.maxAlerts)
        throw new BadRequestError(
          `${alerts.length} alerts in one delivery, above remediation.max_alerts (${deps.maxAlerts}); nothing was done: set max_alerts on Alertmanager's webhook_config at or below it`,
        );
      // Read per request: a config reload may replace the rules.
      const rules = deps.rules();
      // Validate every alert against the rules before acting on any, so a bad payload changes nothing.
      const accounts = [...deps.engines.keys()];
      const principal = callerOf(request).name;
      const perAlert = alerts.map((alert, i) => ({
        alert,
        requests: requestsFor(alert, i, rules, accounts, principal),
      }));
      const results = [];
      for (const { alert, requests } of perAlert) {
        const matched = rules.some((rule) => matches(rule, alert));
        deps.metrics.alertsReceived.inc({ status: alert.status, matched: String(matched) });
        // Once per alert delivered (not per matching rule): its rows keep the digest of its labels.
        const tooLong = matched ? labelsTooLongWarning(alert) : undefined;
        if (tooLong) {
          deps.metrics.alertsLabelsTooLong.inc({ status: alert.status });
          request.log.warn(tooLong.fields, tooLong.message);
        }
        // The episode resolved: the actions taken on that very episode (account, fingerprint, start, labels)
        // that are verifying helped (remediation/episode.ts, remediation/verify.ts).
        if (alert.status === 'resolved')
          for (const episode of resolvedEpisodes(alert, rules, accounts))
            await deps.engines.get(episode.account)!.alertResolved(episode, principal);
        for (const req of requests) {
          // requestsFor only names configured accounts.
          const result = await deps.engines.get(req.account)!.request(req);
          results.push({
            fingerprint: alert.fingerprint,
            alertname: alert.labels.alertname,
            status: alert.status,
            action: req.action,
            account: req.account,
            server_id: req.serverId,
            ip: req.ip ?? null,
            ...result,
          });
        }
      }
      request.log.info(
        {
          receiver: request.body.receiver,
          principal,
          alerts: alerts.length,
          results: results.map((r) => `${r.action}:${r.decision}`),
        },
        'webhook processed',
      );
      return { status: 'accepted', alerts: alerts.length, results };
    },
  );
}
