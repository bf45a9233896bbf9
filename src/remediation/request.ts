/**
 * The one maker of an `ActionRequest`, from each of its sources: an alert through the rule it matched
 * (rules.ts finds the rules and reads the labels), an operator's call (http/routes/actions.ts), and an approval.
 *
 * A request is a record of what was asked: the journal row keeps the rule it was made under (its position and
 * a digest of its content), the alert's labels and the resolved parameters (cooldown, hold, require_owned_ip,
 * force; decide.ts `pending`). An approval runs that recorded request, never a rule looked up again: the first
 * rule with the same alertname and action may have other matchers and another cooldown (issue 39). Whether the
 * rule changed since is only reported (`ruleChange`), so that the approver learns that what ran is what they saw,
 * not what the rules say today.
 */
import { createHash } from 'node:crypto';
import { DEFAULT_COOLDOWN_MS, type ActionName } from '../config/schema.js';
import type { LadderStep, RemediationRule } from '../config/types.js';
import { ConflictError } from '../errors.js';
import { type DesiredFirewall, type JournalEntry, journalRow, labelsJson, type NewEntry } from '../store/rows.js';
import { type ActionRequest, POWER_ACTIONS } from './types.js';
import type { WebhookAlert } from './webhook.js';
import { byCodeUnits } from '../order.js';

/** An alert that matched `rules[index]`, for `account`, delivered by `principal`. */
export interface RuleSource {
  kind: 'rule';
  rule: RemediationRule;
  /** the rule's position in `remediation.rules` (0-based) */
  index: number;
  alert: WebhookAlert;
  account: string;
  principal: string;
  /** the alert's label `name`; throws BadRequestError when the alert lacks it */
  label: (name: string) => string;
}

/** An operator's call of an action endpoint. */
export interface OperatorSource {
  kind: 'operator';
  principal: { name: string; requireApproval?: boolean };
  account: string;
  action: ActionName;
  serverId: string;
  ip?: string;
  value?: string;
  reason?: string;
  force?: boolean;
  /** the `Idempotency-Key` header */
  idempotencyKey?: string;
}

/** The approval of journal row `row` (awaiting approval) by `approver` at `at` (ms), with the approver's reason. */
export interface ApprovalSource {
  kind: 'approval';
  row: JournalEntry;
  approver: string;
  at: number;
  reason?: string;
}

/**
 * A desired firewall change that came due (listed by desired-firewall.ts `listDue`, decided by the engine's
 * tick): the state the latest request set, under its principal and the window it recorded. Its target was checked when it was asked for.
 */
export interface DueSource {
  kind: 'due';
  desired: DesiredFirewall;
}

/** The next step of the escalation ladder after journal row `row` (a step that was ineffective). */
export interface LadderSource {
  kind: 'ladder';
  row: JournalEntry;
  /** the rule's steps (the rule `row` was made under, unchanged since) */
  steps: readonly LadderStep[];
  /**
   * the climb `row`'s verification owes (ladder.ts `nextStep`): the request takes `row`'s mark
   * (ActionRequest `climbOf`); absent for a step asked again after it expired (episode.ts `expiredStep`)
   */
  climb?: true;
}

export type RequestSource = RuleSource | OperatorSource | ApprovalSource | DueSource | LadderSource;

/**
 * The request `source` makes. A rule's gives none for a status its action does not act on (a power or
 * sensitivity rule's resolved alert). Throws BadRequestError (an alert without a label its rule needs),
 * ConflictError (an approval of a row written before requests were recorded: it cannot be run as it was made).
 */
export function makeRequest(source: RuleSource): ActionRequest | undefined;
export function makeRequest(source: OperatorSource | ApprovalSource | DueSource | LadderSource): ActionRequest;
export function makeRequest(source: RequestSource): ActionRequest | undefined {
  switch (source.kind) {
    case 'rule':
      return fromRule(source);
    case 'operator':
      return fromOperator(source);
    case 'approval':
      return fromApproval(source);
    case 'due':
      return fromDue(source.desired);
    case 'ladder':
      return fromLadder(source);
  }
}

function fromDue(d: DesiredFirewall): ActionRequest {
  return {
    source: 'pending',
    // A change set before principals were journaled has none: '' here, null in its row.
    principal: d.principal ?? '',
    account: d.account,
    action: 'firewall_state',
    serverId: d.serverId,
    ip: d.ip,
    value: d.desiredState,
    cooldownMs: d.cooldownMs,
    // Checked when the change was asked for; a due change is not judged on its target again.
    requireOwnedIp: false,
  };
}

/**
 * The journal row of `req` decided at `now` (ms), decision `executing` until its guards answer: the one place a
 * request's row is assembled (decide.ts, and the daemon's own rows for pending firewall changes). It keeps what
 * the request was made with — the rule's position and digest, the resolved cooldown, hold and
 * `require_owned_ip` — so that an approval runs this, never a rule looked up again.
 */
export function requestRow(req: ActionRequest, now: number): NewEntry {
  const due = req.source === 'pending';
  return journalRow({
    account: req.account,
    createdAt: now,
    source: req.source,
    action: req.action,
    serverId: req.serverId,
    ip: req.ip ?? null,
    value: req.value ?? null,
    alertname: req.alert?.alertname ?? null,
    fingerprint: req.alert?.fingerprint ?? null,
    startsAt: req.alert?.startsAt ?? null,
    labels: labelsJson(req.alert?.labels),
    alertStatus: req.alert?.status ?? null,
    decision: 'executing',
    principal: due && req.principal === '' ? null : req.principal,
    reason: req.reason ?? null,
    approver: req.approval?.by ?? null,
    approverReason: req.approval?.reason ?? null,
    approvedAt: req.approval?.at ?? null,
    forced: req.force === true && POWER_ACTIONS.has(req.action),
    ruleIndex: req.rule?.index ?? null,
    ruleDigest: req.rule?.digest ?? null,
    cooldownMs: req.cooldownMs,
    holdMs: req.holdMs ?? null,
    requireOwnedIp: due ? null : req.requireOwnedIp,
    verifyWithinMs: req.verifyWithinMs ?? null,
    ladderStep: req.ladderStep ?? null,
  });
}

function fromRule({ rule, index, alert, account, principal, label }: RuleSource): ActionRequest | undefined {
  const firing = alert.status === 'firing';
  if (rule.action !== 'firewall_state' && !firing) return undefined;
  const base: ActionRequest = {
    source: 'alert',
    principal,
    account,
    action: rule.action,
    serverId: label(rule.serverIdLabel),
    cooldownMs: rule.cooldownMs,
    requireOwnedIp: rule.requireOwnedIp,
    ...(rule.requireApproval ? { requireApproval: true } : {}),
    // Verified is what was done on firing: the resolved alert's switch back (firewall state) is not.
    ...(rule.verifyWithinMs !== undefined && firing ? { verifyWithinMs: rule.verifyWithinMs } : {}),
    ...(rule.steps ? { ladderStep: 0 } : {}),
    rule: { index, digest: ruleDigest(rule) },
    alert: {
      alertname: rule.alertname,
      fingerprint: alert.fingerprint,
      startsAt: alert.startsAt,
      labels: alert.labels,
      status: alert.status,
    },
    // The alert's identity is its fingerprint plus startsAt (one firing episode); status and action keep
    // the firing and the resolved delivery, and two rules on one alert, apart.
    idempotencyKey: `alert:${alert.fingerprint}:${alert.startsAt}:${alert.status}:${rule.action}`,
  };
  if (rule.action === 'firewall_state')
    return {
      ...base,
      ip: label(rule.ipLabel),
      value: firing ? rule.firingState : rule.resolvedState,
      holdMs: firing ? 0 : rule.holdMs,
    };
  if (rule.action === 'firewall_sensitivity') return { ...base, ip: label(rule.ipLabel), value: rule.sensitivity! };
  return base;
}

function fromOperator(s: OperatorSource): ActionRequest {
  return {
    source: 'operator',
    principal: s.principal.name,
    ...(s.reason !== undefined ? { reason: s.reason } : {}),
    ...(s.principal.requireApproval ? { requireApproval: true } : {}),
    account: s.account,
    action: s.action,
    serverId: s.serverId,
    ...(s.ip !== undefined ? { ip: s.ip } : {}),
    ...(s.value !== undefined ? { value: s.value } : {}),
    cooldownMs: DEFAULT_COOLDOWN_MS[s.action],
    requireOwnedIp: true,
    ...(s.force === true ? { force: true } : {}),
    // The key identifies the request of this principal in this account; reused by them for another action,
    // target or value it is a 422.
    ...(s.idempotencyKey
      ? {
          idempotencyKey: operatorKey(s.account, s.principal.name, s.idempotencyKey),
          legacyIdempotencyKey: `operator:${s.idempotencyKey}`,
        }
      : {}),
  };
}

/**
 * The delivery key of an operator's `Idempotency-Key`: scoped to the account and the principal, as the IETF
 * draft "The Idempotency-Key HTTP Header Field" scopes a key to its client — another principal's key, even the
 * same string, is another request. `principal` is URI-encoded and an account name has no `:`
 * (config/schema-constants.ts ACCOUNT_NAME), so no two triples make one key; the prefix is not an earlier
 * version's (`operator:<key>`, ActionRequest `legacyIdempotencyKey`).
 */
export const operatorKey = (account: string, principal: string, key: string): string =>
  `principal:${account}:${encodeURIComponent(principal)}:${key}`;

/** The request as it was journaled, approved: every recorded parameter as it was, the approver named. */
function fromApproval({ row, approver, at, reason }: ApprovalSource): ActionRequest {
  const { cooldownMs, requireOwnedIp } = row;
  if (cooldownMs === null || requireOwnedIp === null)
    throw new ConflictError(
      `journal entry ${row.id} was written before requests were recorded whole (an older version): it cannot be approved as it was made; deny it, or let it expire and ask again`,
    );
  return {
    source: row.source === 'alert' ? 'alert' : 'operator',
    principal: row.principal ?? approver,
    account: row.account,
    action: row.action as ActionName,
    serverId: row.serverId,
    ...(row.ip !== null ? { ip: row.ip } : {}),
    ...(row.value !== null ? { value: row.value } : {}),
    ...(row.reason !== null ? { reason: row.reason } : {}),
    // The approver approves the request as it was made: forced past the attack guard when it was.
    ...(row.forced ? { force: true } : {}),
    cooldownMs,
    ...(row.holdMs !== null ? { holdMs: row.holdMs } : {}),
    requireOwnedIp,
    ...(row.verifyWithinMs !== null ? { verifyWithinMs: row.verifyWithinMs } : {}),
    ...(row.ladderStep !== null ? { ladderStep: row.ladderStep } : {}),
    ...(row.ruleIndex !== null && row.ruleDigest !== null
      ? { rule: { index: row.ruleIndex, digest: row.ruleDigest } }
      : {}),
    idempotencyKey: `approval:${row.id}`,
    ...(row.alertname !== null && row.fingerprint !== null && row.startsAt !== null
      ? {
          alert: {
            alertname: row.alertname,
            fingerprint: row.fingerprint,
            startsAt: row.startsAt,
            // Kept for `remediation replay` on the approved row too.
            ...(row.labels !== null ? { labels: JSON.parse(row.labels) as Record<string, string> } : {}),
            ...(row.alertStatus !== null ? { status: row.alertStatus } : {}),
          },
        }
      : {}),
    approval: { of: row.id, by: approver, at, ...(reason !== undefined ? { reason } : {}) },
  };
}

/**
 * The step after `row`'s as a new request of the same alert episode: its own action, verify_within, approval
 * and cooldown, every guard walked again; keyed by the row, so a retried climb is a duplicate.
 */
function fromLadder({ row, steps, climb }: LadderSource): ActionRequest {
  const at = row.ladderStep! + 1;
  const step = steps[at]!;
  return {
    source: 'alert',
    principal: row.principal ?? 'ladder',
    account: row.account,
    action: step.action,
    serverId: row.serverId,
    reason: `step ${at + 1} of ${steps.length}: step ${at} (${row.action}, journal entry ${row.id}) was ineffective`,
    cooldownMs: step.cooldownMs,
    requireOwnedIp: row.requireOwnedIp ?? true,
    ...(step.requireApproval ? { requireApproval: true } : {}),
    verifyWithinMs: step.verifyWithinMs,
    ladderStep: at,
    rule: { index: row.ruleIndex!, digest: row.ruleDigest! },
    idempotencyKey: `ladder:${row.id}:${at}`,
    ...(climb ? { climbOf: row.id } : {}),
    alert: {
      alertname: row.alertname!,
      fingerprint: row.fingerprint!,
      startsAt: row.startsAt!,
      ...(row.labels !== null ? { labels: JSON.parse(row.labels) as Record<string, string> } : {}),
      status: 'firing',
    },
  };
}

/** A digest of a rule's content (16 hex digits of SHA-256 over its JSON, keys sorted): equal rules, equal digests. */
export function ruleDigest(rule: RemediationRule): string {
  return createHash('sha256').update(canonicalJson(rule)).digest('hex').slice(0, 16);
}

/** JSON with the keys of every object sorted, so that a digest does not depend on the order keys were set in. */
function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object')
    return `{${Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .sort(([a], [b]) => byCodeUnits(a, b))
      .map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`)
      .join(',')}}`;
  return JSON.stringify(value);
}

/**
 * When no rule of `rules` (today's) has the content of the rule `row` was made under: a sentence saying so, for
 * the approval's reply and row; undefined when it is unchanged (wherever it moved) or the row has no rule.
 */
export function ruleChange(row: JournalEntry, rules: readonly RemediationRule[]): string | undefined {
  if (row.ruleIndex === null || row.ruleDigest === null) return undefined;
  if (rules.some((rule) => ruleDigest(rule) === row.ruleDigest)) return undefined;
  const what = `the rule the request was made under (remediation.rules[${row.ruleIndex}], ${row.alertname ?? '?'} → ${row.action})`;
  return `${what} was changed or removed since; the approval ran the request as it was made`;
}
