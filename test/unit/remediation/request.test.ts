/**
 * The request maker (remediation/request.ts): what a request's row records is what its approval runs, whatever
 * the rules say by then; a rule's digest follows its content, not its key order.
 */
import { describe, expect, it } from 'vitest';
import { makeRequest, requestRow, ruleChange, ruleDigest } from '../../../src/remediation/request.js';
import type { ActionRequest } from '../../../src/remediation/types.js';
import type { WebhookAlert } from '../../../src/remediation/webhook.js';
import type { JournalEntry } from '../../../src/store/rows.js';
import { rule } from '../../helpers/remediation.js';

const NOW = Date.UTC(2026, 10, 21, 12);

/** The row `req` is journaled as (request.ts `requestRow`), awaiting approval. */
function rowOf(req: ActionRequest): JournalEntry {
  const entry = requestRow(req, NOW);
  return {
    id: 7,
    completedAt: null,
    upstreamOutcome: null,
    message: null,
    reason: null,
    approver: null,
    approverReason: null,
    approvedAt: null,
    labels: null,
    alertStatus: null,
    forced: false,
    ruleIndex: null,
    ruleDigest: null,
    cooldownMs: null,
    holdMs: null,
    requireOwnedIp: null,
    verifyWithinMs: null,
    ladderStep: null,
    verification: null,
    verifiedAt: null,
    verificationEvidence: null,
    gate: null,
    ...entry,
    decision: 'awaiting_approval',
  };
}

const alert = (status: 'firing' | 'resolved', labels: Record<string, string>): WebhookAlert => ({
  status,
  labels: { alertname: 'Attack', server_id: '100001', ip: '198.18.0.1', ...labels },
  startsAt: '2026-11-21T11:00:00Z',
  fingerprint: 'fp',
});

describe('makeRequest', () => {
  const held = rule({
    alertname: 'Attack',
    matchers: { team: 'b' },
    action: 'firewall_state',
    holdMs: 600_000,
    cooldownMs: 300_000,
    requireOwnedIp: false,
    requireApproval: true,
  });
  const fromRule = (a: WebhookAlert) =>
    makeRequest({
      kind: 'rule',
      rule: held,
      index: 3,
      alert: a,
      account: 'default',
      principal: 'alertmanager',
      label: (name) => a.labels[name]!,
    });

  it.each([
    { name: 'a resolved firewall-state alert, held', req: () => fromRule(alert('resolved', { team: 'b' }))! },
    {
      name: "an operator's forced power call",
      req: () =>
        makeRequest({
          kind: 'operator',
          principal: { name: 'alice', requireApproval: true },
          account: 'default',
          action: 'powercycle',
          serverId: '100001',
          reason: 'hung',
          force: true,
        }),
    },
  ])('approves $name exactly as it was made', ({ req }) => {
    const made = req();
    const approved = makeRequest({ kind: 'approval', row: rowOf(made), approver: 'bob', at: NOW + 1 });
    const { requireApproval, idempotencyKey, ...asked } = made;
    expect(requireApproval).toBe(true);
    expect(approved).toEqual({
      ...asked,
      // The alert's labels come back from the row's JSON, sorted.
      ...(asked.alert ? { alert: { ...asked.alert, labels: { ...asked.alert.labels } } } : {}),
      idempotencyKey: 'approval:7',
      approval: { of: 7, by: 'bob', at: NOW + 1 },
    });
  });

  it('gives a power rule no request for a resolved alert, and a firewall-state rule its hold only then', () => {
    const power = rule({ alertname: 'Attack', action: 'powercycle' });
    const a = alert('resolved', {});
    expect(
      makeRequest({ kind: 'rule', rule: power, index: 0, alert: a, account: 'd', principal: 'p', label: () => '1' }),
    ).toBeUndefined();
    expect(fromRule(alert('firing', { team: 'b' }))).toMatchObject({ holdMs: 0, value: '1' });
    expect(fromRule(alert('resolved', { team: 'b' }))).toMatchObject({
      holdMs: 600_000,
      value: '0',
      rule: { index: 3, digest: ruleDigest(held) },
    });
  });

  it('refuses to approve a row that recorded nothing (written by an older version)', () => {
    const row = { ...rowOf(fromRule(alert('firing', { team: 'b' }))!), cooldownMs: null, requireOwnedIp: null };
    expect(() => makeRequest({ kind: 'approval', row, approver: 'bob', at: NOW })).toThrow(
      /journal entry 7 was written before requests were recorded whole/,
    );
  });
});

describe('ruleDigest and ruleChange', () => {
  const a = rule({ alertname: 'Unreach', matchers: { severity: 'ticket', team: 'a' }, action: 'powercycle' });
  const reordered = { ...a, matchers: { team: 'a', severity: 'ticket' } };

  it('follows the content, not the order of the keys', () => {
    expect(ruleDigest(reordered)).toBe(ruleDigest(a));
    expect(ruleDigest({ ...a, cooldownMs: a.cooldownMs + 1 })).not.toBe(ruleDigest(a));
    expect(ruleDigest({ ...a, matchers: { severity: 'page', team: 'a' } })).not.toBe(ruleDigest(a));
  });

  it('says a rule changed only when no rule has its content any more', () => {
    const row = { ...rowOf(powerOf(a)), alertname: 'Unreach' };
    expect(ruleChange(row, [a])).toBeUndefined();
    expect(ruleChange(row, [rule({ alertname: 'X', action: 'poweron' }), reordered])).toBeUndefined();
    expect(ruleChange(row, [{ ...a, requireOwnedIp: false }])).toContain('remediation.rules[0], Unreach → powercycle');
    expect(ruleChange(row, [])).toContain('was changed or removed since');
    expect(ruleChange({ ...row, ruleIndex: null, ruleDigest: null }, [])).toBeUndefined();
  });
});

function powerOf(r: ReturnType<typeof rule>): ActionRequest {
  const a: WebhookAlert = {
    status: 'firing',
    labels: { alertname: r.alertname, server_id: '100001', ...r.matchers },
    startsAt: '2026-11-21T11:00:00Z',
    fingerprint: 'fp',
  };
  return makeRequest({
    kind: 'rule',
    rule: r,
    index: 0,
    alert: a,
    account: 'default',
    principal: 'alertmanager',
    label: (n) => a.labels[n]!,
  })!;
}
