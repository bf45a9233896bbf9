/**
 * Every recording rule and alert, written once against a MixinConfig: the selector goes into every series
 * selector, `groupBy` into every aggregation and vector match, the severity through the mapping.
 */
import type { MixinConfig } from './config.ts';

/** One rule as Prometheus loads it, plus an optional comment rendered above it (the why, not the what). */
export interface Rule {
  record?: string;
  alert?: string;
  expr: string;
  for?: string;
  labels?: Record<string, string>;
  annotations?: Record<string, string>;
  comment?: string;
}
export interface RuleGroup {
  name: string;
  rules: Rule[];
}

/** Names of the recording rules the dashboards read, for a config (the rate window is part of two names). */
export function recordNames(config: MixinConfig) {
  return {
    apiRequests: `baremetal:api_requests:rate${config.rateWindow}`,
    apiErrorRatio: `baremetal:api_error_ratio:rate${config.rateWindow}`,
    pollAge: 'baremetal:poll_age_seconds',
    ipsUnderAttack: 'baremetal:ips_under_attack',
    actionRequests: 'baremetal:action_requests:increase1h',
  };
}

/** The rule groups for `config`. */
export function ruleGroups(config: MixinConfig): RuleGroup[] {
  const s = (metric: string, extra?: string) => `${metric}{${[config.selector, extra].filter(Boolean).join(',')}}`;
  const by = (...labels: string[]) => `(${[...config.groupBy, ...labels].join(', ')})`;
  const w = config.rateWindow;
  const names = recordNames(config);
  const sev = config.severities;
  const runbook = (alert: string) => `${config.runbookBaseUrl}#${alert.toLowerCase()}`;
  const alert = (
    rule: Omit<Rule, 'record'> & { alert: string },
    severity: keyof typeof sev,
    anchor = rule.alert,
  ): Rule => ({
    ...rule,
    labels: { severity: sev[severity] },
    annotations: { ...rule.annotations, runbook_url: runbook(anchor) },
  });

  const recording: Rule[] = [
    {
      record: names.apiRequests,
      expr: `sum by ${by('operation', 'outcome')} (rate(${s('baremetal_api_requests_total')}[${w}]))`,
    },
    {
      record: names.apiErrorRatio,
      comment:
        '"or … * 0": with no failing request at all the numerator has no series; the ratio is then 0, not absent.',
      expr: `(
  sum by ${by()} (rate(${s('baremetal_api_requests_total', 'outcome!="success"')}[${w}]))
    or
  sum by ${by()} (rate(${s('baremetal_api_requests_total')}[${w}])) * 0
)
  /
sum by ${by()} (rate(${s('baremetal_api_requests_total')}[${w}]))
`,
    },
    { record: names.pollAge, expr: `time() - ${s('baremetal_poll_last_success_timestamp_seconds')}` },
    {
      record: names.ipsUnderAttack,
      expr: `count by ${by('service_type')} (${s('baremetal_firewall_attack_events_last_hour')} > 0)`,
    },
    {
      record: names.actionRequests,
      expr: `sum by ${by('action', 'decision')} (increase(${s('baremetal_action_requests_total')}[1h]))`,
    },
  ];

  const alerts: Rule[] = [
    alert(
      {
        alert: 'BaremetalExporterDown',
        expr: `${s('up')} == 0`,
        for: '5m',
        annotations: {
          summary: 'baremetal-exporter {{ $labels.instance }} is down',
          description:
            'Prometheus has not been able to scrape {{ $labels.instance }} for 5 minutes: attacks and dead servers go unnoticed.',
        },
      },
      'critical',
    ),
    alert(
      {
        alert: 'BaremetalExporterAbsent',
        expr: `absent(${s('up')})`,
        for: '10m',
        annotations: {
          summary: 'No baremetal-exporter target is scraped',
          description: `No scraped target matches {${config.selector}}: the scrape config or service discovery lost the exporter.`,
        },
      },
      'critical',
    ),
    alert(
      {
        alert: 'BaremetalApiDown',
        expr: `${s('baremetal_api_up')} == 0`,
        for: '5m',
        annotations: {
          summary: 'The hosting API has been failing for 5 minutes',
          description:
            'The last request from {{ $labels.instance }} to the hosting API failed and none has succeeded for 5 minutes; values on /metrics are growing old.',
        },
      },
      'critical',
    ),
    alert(
      {
        alert: 'BaremetalApiErrorRatioHigh',
        expr: `${names.apiErrorRatio} > 0.1`,
        for: '15m',
        annotations: {
          summary: '{{ $value | humanizePercentage }} of hosting API requests fail',
          description:
            'More than 10% of the requests from {{ $labels.instance }} to the hosting API have failed for 15 minutes (see baremetal_api_requests_total by outcome).',
        },
      },
      'warning',
    ),
    alert(
      {
        alert: 'BaremetalPollStale',
        comment:
          'Computed here rather than from baremetal:poll_age_seconds: a rule of another group may lag one evaluation.',
        expr: `(time() - ${s('baremetal_poll_last_success_timestamp_seconds')}) > 3 * ${s('baremetal_poll_interval_seconds')}`,
        for: '1m',
        annotations: {
          summary: 'The {{ $labels.poll }} poll has not succeeded for 3 of its periods',
          description:
            'The {{ $labels.poll }} poll on {{ $labels.instance }} last succeeded {{ $value | humanizeDuration }} ago, more than 3 schedule periods.',
        },
      },
      'warning',
    ),
    alert(
      {
        alert: 'BaremetalPollNeverSucceeded',
        expr: `${s('baremetal_poll_interval_seconds')} unless on ${by('poll')} ${s('baremetal_poll_last_success_timestamp_seconds')}`,
        for: '15m',
        annotations: {
          summary: 'The {{ $labels.poll }} poll has never succeeded',
          description:
            '{{ $labels.instance }} has been running its {{ $labels.poll }} poll for 15 minutes without one success.',
        },
      },
      'warning',
      'BaremetalPollStale',
    ),
    alert(
      {
        alert: 'BaremetalGraphsStale',
        expr: `(time() - ${s('baremetal_graph_last_success_timestamp_seconds')}) > on ${by()} group_left 3 * ${s('baremetal_poll_interval_seconds', 'poll="graphs"')}`,
        for: '5m',
        annotations: {
          summary: 'Graph {{ $labels.graph }}/{{ $labels.scale }} of server {{ $labels.server_id }} is stale',
          description:
            'The image has not been refreshed for more than 3 graph-poll periods; /graphs serves an old picture.',
        },
      },
      'info',
    ),
    alert(
      {
        alert: 'BaremetalIpUnderAttack',
        comment:
          'The label server_id is what the remediation rule reads; the hour-scale history is already a\nsustained signal, so no "for".',
        expr: `label_replace(${s('baremetal_firewall_attack_events_last_hour', 'service_type="dedicated"')} > 0, "server_id", "$1", "service_id", "(.+)")`,
        annotations: {
          summary: 'IP {{ $labels.ip }} of server {{ $labels.server_id }} is under attack',
          description: '{{ $value }} firewall (DDoS) events for {{ $labels.ip }} in the last hour.',
        },
      },
      'critical',
    ),
    alert(
      {
        alert: 'BaremetalServiceUnderAttack',
        expr: `${s('baremetal_firewall_attack_events_last_hour', 'service_type=~"colocation|transit"')} > 0`,
        annotations: {
          summary: 'IP {{ $labels.ip }} of {{ $labels.service_type }} service {{ $labels.service_id }} is under attack',
          description:
            '{{ $value }} firewall (DDoS) events in the last hour. Colocation and transit IPs have no automatic remediation: page.',
        },
      },
      'critical',
    ),
    alert(
      {
        alert: 'BaremetalServerGone',
        expr: `(max by ${by('server_id', 'hostname')} (${s('baremetal_server_info')} offset 15m)
  unless on ${by('server_id')} ${s('baremetal_server_info')})
and on ${by()} (${s('baremetal_servers')} > 0)
`,
        annotations: {
          summary: 'Server {{ $labels.server_id }} ({{ $labels.hostname }}) left the inventory',
          description:
            'The server was in the server list 15 minutes ago and is not now: cancelled, moved or a provider problem.',
        },
      },
      'warning',
    ),
  ];

  if (config.blackboxSelector !== null) {
    alerts.push(
      alert(
        {
          alert: 'BaremetalServerUnreachable',
          comment:
            "Needs blackbox_exporter probing each server's main IP (ICMP, instance = the IP; examples/prometheus.yml).\nThe inventory gives the probe its account and server_id, which the powercycle remediation rule reads.",
          expr: `(probe_success{${config.blackboxSelector}} == 0)
  * on (instance) group_left (account, server_id, hostname)
max by (instance, account, server_id, hostname) (label_replace(${s('baremetal_server_info')}, "instance", "$1", "ip", "(.+)"))
`,
          for: '5m',
          annotations: {
            summary: 'Server {{ $labels.server_id }} ({{ $labels.hostname }}) does not answer probes',
            description:
              'blackbox_exporter has not reached {{ $labels.instance }}, the main IP of server {{ $labels.server_id }}, for 5 minutes.',
          },
        },
        'critical',
      ),
    );
  }

  alerts.push(
    alert(
      {
        alert: 'BaremetalRemediationBudgetExhausted',
        expr: `${s('baremetal_action_budget_remaining')} == 0`,
        for: '1m',
        annotations: {
          summary: 'The remediation budget is used up',
          description:
            '{{ $labels.instance }} denies further actions this hour (decision denied_budget): many alerts need a person.',
        },
      },
      'warning',
    ),
    alert(
      {
        alert: 'BaremetalRemediationPendingStuck',
        expr: `${s('baremetal_action_pending')} > 0`,
        for: '10m',
        annotations: {
          summary: '{{ $value }} {{ $labels.action }} changes pending for over 10 minutes',
          description:
            "Firewall changes should apply within their hold and the API's 2-minute window; see GET /api/v1/actions for why they wait.",
        },
      },
      'warning',
    ),
    alert(
      {
        alert: 'BaremetalRemediationFailed',
        comment:
          'A timestamp rather than increase() of the counter: a call whose outcome became unknown in a crash is\ncounted at the next start, where a new series shows no increase.',
        expr: `time() - ${s('baremetal_action_last_failure_timestamp_seconds')} < 900`,
        annotations: {
          summary:
            'A {{ $labels.action }} remediation {{ if eq $labels.decision "unknown" }}has an unknown outcome{{ else }}failed{{ end }}',
          description:
            "In the last 15 minutes a remediation call failed, or its outcome is unknown (timeout, connection lost or crash mid-call: the API may have acted; it is never re-sent for power actions); the journal (GET /api/v1/actions) has the API's message.",
        },
      },
      'warning',
    ),
  );

  return [
    { name: 'baremetal.recording', rules: recording },
    { name: 'baremetal.alerts', rules: alerts },
  ];
}
