/** Bare metal — remediation: alert-driven actions, decisions, denials and deferrals, desired firewall state. */
import type { Dashboard } from '@grafana/schema';
import type { MixinConfig } from '../config.ts';
import { attackStarts, remediationDecisions } from './annotations.ts';
import { budgetPanel, commonVariables, dashboard, panel, pendingPanel, sel, steps, valueMap } from './common.ts';

/** 1 Always On, 0 Redirect On Attack, as the API names the firewall states. */
export const FIREWALL_STATES = valueMap({ 0: ['Redirect On Attack', 'blue'], 1: ['Always On', 'orange'] });

export function remediation(config: MixinConfig): Dashboard {
  return dashboard({
    uid: 'baremetal-remediation',
    title: 'Bare metal — remediation',
    description: 'Alert-driven actions: decisions, denials and deferrals, desired firewall state (baremetal-exporter).',
    variables: commonVariables(),
    annotations: [remediationDecisions(config), attackStarts(config)],
    panels: [
      pendingPanel(config, 1, [0, 0, 5, 4], true),
      budgetPanel(2, 'Budget left', [5, 0, 5, 4]),
      panel({
        id: 7,
        type: 'stat',
        title: 'Journal',
        grid: [10, 0, 4, 4],
        description:
          'The remediation journal on every chosen exporter: while it is unavailable the action endpoints answer 503 and /readyz names the reason.',
        queries: [{ expr: `min(${sel('baremetal_journal_up')})` }],
        fieldConfig: {
          defaults: {
            unit: 'none',
            mappings: valueMap({ 0: ['Unavailable', 'red'], 1: ['OK', 'green'] }),
            thresholds: steps('red', [1, 'green']),
          },
          overrides: [],
        },
      }),
      panel({
        id: 3,
        type: 'table',
        title: 'Alerts received (1h)',
        grid: [14, 0, 10, 4],
        description: 'Webhook alerts in the last hour by status and whether a rule matched.',
        queries: [
          { expr: `sum by (status, matched) (increase(${sel('baremetal_alerts_received_total')}[1h]))`, table: true },
        ],
        fieldConfig: { defaults: { unit: 'short', decimals: 0 }, overrides: [] },
      }),
      panel({
        id: 4,
        type: 'timeseries',
        title: 'Decisions by action',
        grid: [0, 4, 12, 8],
        description: 'Every remediation request by action and decision.',
        queries: [
          {
            expr: `sum by (action, decision) (increase(${sel('baremetal_action_requests_total')}[$__rate_interval]))`,
            legend: '{{action}} {{decision}}',
          },
        ],
        fieldConfig: { defaults: { unit: 'short', min: 0 }, overrides: [] },
      }),
      panel({
        id: 5,
        type: 'timeseries',
        title: 'Denied and deferred',
        grid: [12, 4, 12, 8],
        description:
          'Requests the guards stopped or postponed (denied_under_attack, denied_circuit_open, escalated, …), and failures.',
        queries: [
          {
            expr: `sum by (action, decision) (increase(${sel('baremetal_action_requests_total', 'decision=~"denied_.*|escalated|deferred|cooldown|failed"')}[$__rate_interval]))`,
            legend: '{{action}} {{decision}}',
          },
        ],
        fieldConfig: { defaults: { unit: 'short', min: 0 }, overrides: [] },
      }),
      panel({
        id: 8,
        type: 'table',
        title: 'Verified ratio per rule',
        grid: [0, 20, 8, 8],
        description:
          'Per rule (its alertname) and action, the share of verified actions (the alert resolved within verify_within) over the time range.',
        queries: [
          {
            expr: `sum by (rule, action) (increase(${sel('baremetal_remediation_verifications_total', 'outcome="verified"')}[$__range])) / sum by (rule, action) (increase(${sel('baremetal_remediation_verifications_total')}[$__range]))`,
            table: true,
          },
        ],
        fieldConfig: { defaults: { unit: 'percentunit', min: 0, max: 1 }, overrides: [] },
      }),
      panel({
        id: 9,
        type: 'timeseries',
        title: 'Recovery time',
        grid: [8, 20, 8, 8],
        description: "From a verified action's call to its alert's resolution: median and 90th percentile over a day.",
        queries: [0.5, 0.9].map((q) => ({
          expr: `histogram_quantile(${q}, sum by (le, action) (increase(${sel('baremetal_remediation_recovery_seconds_bucket')}[1d])))`,
          legend: `{{action}} p${q * 100}`,
        })),
        fieldConfig: { defaults: { unit: 's', min: 0 }, overrides: [] },
      }),
      panel({
        id: 10,
        type: 'timeseries',
        title: 'Ineffective and escalated',
        grid: [16, 20, 8, 8],
        description:
          'Actions that did not help (ineffective: a ladder takes its next step) and episodes handed to a person (escalated: the last step of a ladder, or the cap per server).',
        queries: [
          {
            expr: `sum by (action) (increase(${sel('baremetal_remediation_verifications_total', 'outcome="ineffective"')}[$__rate_interval]))`,
            legend: '{{action}} ineffective',
          },
          {
            expr: `sum by (action) (increase(${sel('baremetal_action_requests_total', 'decision="escalated"')}[$__rate_interval]))`,
            legend: '{{action}} escalated',
          },
        ],
        fieldConfig: { defaults: { unit: 'short', min: 0 }, overrides: [] },
      }),
      panel({
        id: 6,
        type: 'table',
        title: 'Desired firewall state per IP',
        grid: [0, 12, 24, 8],
        description: '1 Always On, 0 Redirect On Attack, per IP the daemon has acted on.',
        queries: [{ expr: sel('baremetal_firewall_desired_state'), table: true }],
        fieldConfig: {
          defaults: { unit: 'none' },
          overrides: [
            { matcher: { id: 'byName', options: 'Value' }, properties: [{ id: 'mappings', value: FIREWALL_STATES }] },
          ],
        },
      }),
    ],
  });
}
