/**
 * Alertmanager alerts → action requests. An alert matches a rule when its `alertname` and every
 * matcher label are equal; the rule names the labels carrying `server_id` and `ip`. Power and
 * sensitivity actions fire on `firing` only; firewall-state rules set `firing_state` on firing and
 * `resolved_state` (after `hold`) on resolved.
 */
import type { RemediationRule } from '../config/schema.js';
import { BadRequestError } from '../errors.js';
import type { ActionRequest } from './types.js';
import type { WebhookAlert } from './webhook.js';

export function matches(rule: RemediationRule, alert: WebhookAlert): boolean {
  return (
    alert.labels.alertname === rule.alertname && Object.entries(rule.matchers).every(([k, v]) => alert.labels[k] === v)
  );
}

/**
 * The requests one alert gives under `rules`; `index` names the alert in errors. Throws BadRequestError
 * when a matching rule needs a label the alert lacks.
 */
export function requestsFor(alert: WebhookAlert, index: number, rules: RemediationRule[]): ActionRequest[] {
  const requests: ActionRequest[] = [];
  for (const rule of rules.filter((r) => matches(r, alert))) {
    const label = (name: string) => {
      const value = alert.labels[name];
      if (!value)
        throw new BadRequestError(
          `alerts[${index}].labels.${name}: required by the ${rule.action} rule for ${rule.alertname}`,
        );
      return value;
    };
    const serverId = label(rule.serverIdLabel);
    const base = {
      source: 'alert' as const,
      action: rule.action,
      serverId,
      cooldownMs: rule.cooldownMs,
      requireOwnedIp: rule.requireOwnedIp,
      alert: { alertname: rule.alertname, fingerprint: alert.fingerprint, startsAt: alert.startsAt },
      // The alert's identity is its fingerprint plus startsAt (one firing episode); status and action keep
      // the firing and the resolved delivery, and two rules on one alert, apart.
      idempotencyKey: `alert:${alert.fingerprint}:${alert.startsAt}:${alert.status}:${rule.action}`,
    };
    if (rule.action === 'firewall_state') {
      const firing = alert.status === 'firing';
      requests.push({
        ...base,
        ip: label(rule.ipLabel),
        value: firing ? rule.firingState : rule.resolvedState,
        holdMs: firing ? 0 : rule.holdMs,
      });
    } else if (alert.status === 'firing') {
      if (rule.action === 'firewall_sensitivity')
        requests.push({ ...base, ip: label(rule.ipLabel), value: rule.sensitivity! });
      else requests.push(base);
    }
  }
  return requests;
}
