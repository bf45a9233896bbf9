/** Bare metal — overview: API health, poll freshness, inventory, attacks and remediation at a glance. */
import type { Dashboard } from '@grafana/schema';
import type { MixinConfig } from '../config.ts';
import { recordNames } from '../rules.ts';
import { attackStarts, remediationDecisions } from './annotations.ts';
import {
  acrossReplicas,
  budgetPanel,
  commonVariables,
  dashboard,
  panel,
  pendingPanel,
  sel,
  steps,
  STAT_OPTIONS,
  valueMap,
} from './common.ts';

export function overview(config: MixinConfig): Dashboard {
  const names = recordNames(config);
  return dashboard({
    uid: 'baremetal-overview',
    title: 'Bare metal — overview',
    description: 'API health, poll freshness, inventory, attacks and remediation at a glance (baremetal-exporter).',
    variables: commonVariables(),
    annotations: [attackStarts(config), remediationDecisions(config)],
    panels: [
      panel({
        id: 1,
        type: 'stat',
        title: 'API up',
        grid: [0, 0, 3, 4],
        description: '1 when the last request to the hosting API succeeded, on every chosen exporter.',
        queries: [{ expr: `min(${sel('baremetal_api_up')})` }],
        fieldConfig: {
          defaults: {
            unit: 'none',
            mappings: valueMap({ 0: ['Down', 'red'], 1: ['Up', 'green'] }),
            thresholds: steps('red', [1, 'green']),
          },
          overrides: [],
        },
      }),
      panel({
        id: 2,
        type: 'stat',
        title: 'Servers',
        grid: [3, 0, 3, 4],
        description: 'Dedicated servers in the latest server list.',
        queries: [{ expr: `sum(${acrossReplicas(config, sel('baremetal_servers'))})` }],
        fieldConfig: { defaults: { unit: 'short', thresholds: steps('blue') }, overrides: [] },
      }),
      panel({
        id: 3,
        type: 'stat',
        title: 'IPs under attack now',
        grid: [6, 0, 4, 4],
        description: 'IPs with firewall events in the latest hour-scale history, all services.',
        queries: [
          {
            expr: `count(${acrossReplicas(config, sel('baremetal_firewall_attack_events_last_hour'))} > 0) or vector(0)`,
          },
        ],
        fieldConfig: { defaults: { unit: 'short', thresholds: steps('green', [1, 'red']) }, overrides: [] },
      }),
      pendingPanel(config, 4, [10, 0, 3, 4], false),
      budgetPanel(5, 'Remediation budget left', [13, 0, 4, 4]),
      panel({
        id: 6,
        type: 'stat',
        title: 'Oldest poll',
        grid: [17, 0, 3, 4],
        description:
          'Seconds since the least recently successful poll job finished (on any replica): amber past 10 minutes, red past 30 (the default servers and graphs schedules are 5 minutes; BaremetalPollStale fires past 3 periods).',
        queries: [{ expr: `max(min without (${config.replicaLabels.join(', ')}) (${sel(names.pollAge)}))` }],
        fieldConfig: {
          defaults: { unit: 's', thresholds: steps('green', [600, 'yellow'], [1800, 'red']) },
          overrides: [],
        },
        options: STAT_OPTIONS,
      }),
      panel({
        id: 14,
        type: 'stat',
        title: 'Leader',
        grid: [20, 0, 4, 4],
        description:
          'Each chosen replica: Leader (it polls the API and applies deferred firewall changes) or Follower. One Leader per job; none for 2 minutes fires BaremetalNoLeader, two BaremetalSplitBrain. With SQLite the one exporter is always Leader.',
        queries: [{ expr: sel('baremetal_leader'), legend: '{{instance}}' }],
        fieldConfig: {
          defaults: {
            unit: 'none',
            mappings: valueMap({ 0: ['Follower', 'blue'], 1: ['Leader', 'green'] }),
            thresholds: steps('blue', [1, 'green']),
          },
          overrides: [],
        },
        options: { ...STAT_OPTIONS, textMode: 'value_and_name' },
      }),
      panel({
        id: 7,
        type: 'timeseries',
        title: 'API requests by operation and outcome',
        grid: [0, 4, 12, 8],
        description: 'Requests per second to the hosting API, retries included.',
        queries: [
          {
            expr: `sum by (operation, outcome) (rate(${sel('baremetal_api_requests_total')}[$__rate_interval]))`,
            legend: '{{operation}} {{outcome}}',
          },
        ],
        fieldConfig: { defaults: { unit: 'reqps' }, overrides: [] },
      }),
      panel({
        id: 8,
        type: 'timeseries',
        title: 'API error ratio',
        grid: [12, 4, 6, 8],
        description: `Share of API requests that failed over ${config.rateWindow} (recording rule); BaremetalApiErrorRatioHigh fires above 10 % for 15 minutes.`,
        queries: [{ expr: sel(names.apiErrorRatio), legend: '{{instance}} {{account}}' }],
        fieldConfig: {
          defaults: {
            unit: 'percentunit',
            min: 0,
            thresholds: steps('green', [0.1, 'red']),
            custom: { thresholdsStyle: { mode: 'line' } },
          },
          overrides: [],
        },
      }),
      panel({
        id: 9,
        type: 'timeseries',
        title: 'API latency',
        grid: [18, 4, 6, 8],
        description: "Quantiles of one API request's duration, by operation.",
        queries: [0.5, 0.99].map((q) => ({
          expr: `histogram_quantile(${q}, sum by (le, operation) (rate(${sel('baremetal_api_request_duration_seconds_bucket')}[$__rate_interval])))`,
          legend: `p${q * 100} {{operation}}`,
        })),
        fieldConfig: { defaults: { unit: 's' }, overrides: [] },
      }),
      panel({
        id: 10,
        type: 'timeseries',
        title: 'Poll freshness',
        grid: [0, 12, 12, 8],
        description:
          'Seconds since each poll job last succeeded; the alert BaremetalPollStale fires past 3 schedule periods.',
        queries: [{ expr: sel(names.pollAge), legend: '{{instance}} {{account}} {{poll}}' }],
        fieldConfig: { defaults: { unit: 's', min: 0 }, overrides: [] },
      }),
      panel({
        id: 11,
        type: 'timeseries',
        title: 'Attack events by service type',
        grid: [12, 12, 12, 8],
        description: 'New firewall (DDoS) events seen, deduplicated by event id.',
        queries: [
          {
            expr: `sum by (service_type) (increase(${sel('baremetal_firewall_attack_events_total')}[$__rate_interval]))`,
            legend: '{{service_type}}',
          },
        ],
        fieldConfig: { defaults: { unit: 'short', min: 0 }, overrides: [] },
      }),
      panel({
        id: 12,
        type: 'table',
        title: 'IPs under attack',
        grid: [0, 20, 12, 8],
        description: 'Service, service id, IP and events in the last hour, for every IP with events now.',
        queries: [
          {
            expr: `sum by (service_type, service_id, ip) (${sel('baremetal_firewall_attack_events_last_hour')} > 0)`,
            table: true,
          },
        ],
        fieldConfig: { defaults: { unit: 'short' }, overrides: [] },
      }),
      panel({
        id: 13,
        type: 'timeseries',
        title: 'Remediation decisions',
        grid: [12, 20, 12, 8],
        description:
          'Remediation requests by action and decision (executed, dry_run, denied_* — under_attack, circuit_open, … —, escalated, cooldown, duplicate, deferred, failed).',
        queries: [
          {
            expr: `sum by (action, decision) (increase(${sel('baremetal_action_requests_total')}[$__rate_interval]))`,
            legend: '{{action}} {{decision}}',
          },
        ],
        fieldConfig: { defaults: { unit: 'short', min: 0 }, overrides: [] },
      }),
    ],
  });
}
