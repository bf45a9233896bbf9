/**
 * Alertmanager alerts → action requests. An alert matches a rule when its `alertname` and every
 * matcher label are equal; the rule names the labels carrying `server_id` and `ip`. Power and
 * sensitivity actions fire on `firing` only; firewall-state rules set `firing_state` on firing and
 * `resolved_state` (after `hold`) on resolved. The rule's `account_label` names the account: an alert
 * without it is accepted only when exactly one account is configured (server ids are per account). Each
 * request is made by request.ts `makeRequest`, which records the rule's position and digest with it.
 */
import type { RemediationRule } from '../config/types.js';
import { BadRequestError } from '../errors.js';
import type { EpisodeAlert } from './episode.js';
import { makeRequest, ruleDigest } from './request.js';
import type { ActionRequest } from './types.js';
import type { WebhookAlert } from './webhook.js';

export function matches(rule: RemediationRule, alert: WebhookAlert): boolean {
  return (
    alert.labels.alertname === rule.alertname && Object.entries(rule.matchers).every(([k, v]) => alert.labels[k] === v)
  );
}

/**
 * The requests one alert gives under `rules`; `index` names the alert in errors; `accounts` are the
 * configured account names; `principal` the webhook principal that delivered it. Throws BadRequestError when a matching rule needs a label the alert lacks
 * (the account label with several accounts) or names an account that is not configured.
 */
export function requestsFor(
  alert: WebhookAlert,
  index: number,
  rules: RemediationRule[],
  accounts: readonly string[],
  principal: string,
): ActionRequest[] {
  const requests: ActionRequest[] = [];
  rules.forEach((rule, ruleIndex) => {
    if (!matches(rule, alert)) return;
    const label = (name: string) => {
      const value = alert.labels[name];
      if (!value)
        throw new BadRequestError(
          `alerts[${index}].labels.${name}: required by the ${rule.action} rule for ${rule.alertname}`,
        );
      return value;
    };
    const account = accountOf(alert, index, rule, accounts);
    const req = makeRequest({ kind: 'rule', rule, index: ruleIndex, alert, account, principal, label });
    if (req) requests.push(req);
  });
  return requests;
}

/**
 * The episodes a resolved `alert` ends, one per account its matching rules name (episode.ts): an account the
 * alert does not name (with several configured) or that is not configured gives none — a resolution with no
 * account of its own settles nothing.
 */
export function resolvedEpisodes(
  alert: WebhookAlert,
  rules: readonly RemediationRule[],
  accounts: readonly string[],
): EpisodeAlert[] {
  const named = new Map<string, EpisodeAlert['target']>();
  rules.forEach((rule, ruleIndex) => {
    if (!matches(rule, alert)) return;
    const value = alert.labels[rule.accountLabel];
    const account = value ? value : accounts.length === 1 ? accounts[0]! : undefined;
    if (account === undefined || !accounts.includes(account) || named.get(account) !== undefined) return;
    const serverId = alert.labels[rule.serverIdLabel];
    const target = serverId
      ? { serverId, action: rule.action, alertname: rule.alertname, ruleIndex, ruleDigest: ruleDigest(rule) }
      : undefined;
    named.set(account, target);
  });
  const { fingerprint, startsAt, labels } = alert;
  return [...named].map(([account, target]) => ({
    account,
    fingerprint,
    startsAt,
    labels,
    ...(target ? { target } : {}),
  }));
}

/** The account an alert names under `rule`, or the only one configured when it names none. */
function accountOf(alert: WebhookAlert, index: number, rule: RemediationRule, accounts: readonly string[]): string {
  const field = `alerts[${index}].labels.${rule.accountLabel}`;
  const value = alert.labels[rule.accountLabel];
  if (!value) {
    if (accounts.length === 1) return accounts[0]!;
    throw new BadRequestError(
      `${field}: required by the ${rule.action} rule for ${rule.alertname} with several accounts (configured: ${accounts.join(', ')})`,
    );
  }
  if (!accounts.includes(value))
    throw new BadRequestError(
      `${field}: unknown account ${JSON.stringify(value)} (configured: ${accounts.join(', ')})`,
    );
  return value;
}
