/**
 * Every recording rule and alert, written once against a MixinConfig: the selector goes into every series
 * selector, `groupBy` into every aggregation and vector match, the severity through the mapping.
 *
 * Two kinds of rule, for High availability (several replicas, one leader polling): per-replica health (the
 * target is down, its own API requests fail) keeps `instance`; everything that describes the fleet or drives
 * remediation (polls, inventory, attacks, budget, pending and failed actions) first takes the max over the
 * replicas (`max without (instance, pod)`, the config's `replicaLabels`), so the alert has the same labels —
 * the same Alertmanager fingerprint — whichever replica leads, and a follower without API series fires nothing.
 */
import type { MixinConfig } from './config.ts';

/**
 * `keep_firing_for` of the alerts that drive remediation (BaremetalServerUnreachable, BaremetalIpUnderAttack):
 * they join or read the exporter's own series, which go stale the moment a scrape fails; a restart of the
 * exporter (a gap of a minute or so) must not resolve them and fire them again as a new alert episode, with
 * a new `startsAt` (docs/remediation.md "The alert episode"). A real resolution is seen this much later.
 */
export const REMEDIATION_KEEP_FIRING_FOR = '2m';

/** One rule as Prometheus loads it, plus an optional comment rendered above it (the why, not the what). */
export interface Rule {
  record?: string;
  alert?: string;
  expr: string;
  for?: string;
  /** how long an alert keeps firing once its expression is empty (Prometheus 2.42 and later) */
  keep_firing_for?: string;
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
    verifications: 'baremetal:remediation_verifications:increase7d',
  };
}

/** The rule groups for `config`. */
export function ruleGroups(config: MixinConfig): RuleGroup[] {
  const s = (metric: string, extra?: string) => `${metric}{${[config.selector, extra].filter(Boolean).join(',')}}`;
  const by = (...labels: string[]) => `(${[...config.groupBy, ...labels].join(', ')})`;
  /** `by`/`on` labels of a fleet rule: groupBy without the replica labels */
  const fleet = (...labels: string[]) =>
    `(${[...config.groupBy.filter((l) => !config.replicaLabels.includes(l)), ...labels].join(', ')})`;
  const replicas = `without (${config.replicaLabels.join(', ')})`;
  /** one series per fleet, whichever replica (the leader, or one just demoted) reports it */
  const one = (metric: string, extra?: string) => `max ${replicas} (${s(metric, extra)})`;
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
      expr: `count by ${fleet('service_type')} (${one('baremetal_firewall_attack_events_last_hour')} > 0)`,
    },
    {
      record: names.actionRequests,
      expr: `sum by ${by('action', 'decision')} (increase(${s('baremetal_action_requests_total')}[1h]))`,
    },
    {
      record: names.verifications,
      expr: `sum by ${by('action', 'rule', 'outcome')} (increase(${s('baremetal_remediation_verifications_total')}[7d]))`,
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
          'Computed here rather than from baremetal:poll_age_seconds: a rule of another group may lag one evaluation.\nThe newest success of any replica: the leader polls, a follower (or a demoted leader) is not stale.',
        expr: `(time() - ${one('baremetal_poll_last_success_timestamp_seconds')}) > 3 * ${one('baremetal_poll_interval_seconds')}`,
        for: '1m',
        annotations: {
          summary: 'The {{ $labels.poll }} poll has not succeeded for 3 of its periods',
          description:
            'The {{ $labels.poll }} poll of account {{ $labels.account }} last succeeded {{ $value | humanizeDuration }} ago on any replica, more than 3 schedule periods.',
        },
      },
      'warning',
    ),
    alert(
      {
        alert: 'BaremetalPollNeverSucceeded',
        expr: `${one('baremetal_poll_interval_seconds')} unless on ${fleet('poll')} ${s('baremetal_poll_last_success_timestamp_seconds')}`,
        for: '15m',
        annotations: {
          summary: 'The {{ $labels.poll }} poll has never succeeded',
          description:
            'The {{ $labels.poll }} poll of account {{ $labels.account }} has been scheduled for 15 minutes without one success on any replica.',
        },
      },
      'warning',
      'BaremetalPollStale',
    ),
    alert(
      {
        alert: 'BaremetalGraphsStale',
        expr: `(time() - ${one('baremetal_graph_last_success_timestamp_seconds')}) > on ${fleet()} group_left 3 * ${one('baremetal_poll_interval_seconds', 'poll="graphs"')}`,
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
        alert: 'BaremetalFirewallCoverageStale',
        comment:
          'Three periods: STALE_AFTER_FIREWALL_PERIODS (src/collectors/firewall.ts), past which the power-action\nguard also treats a history as unknown attack state; check-config warns about a budget that cannot meet it.',
        expr: `${one('baremetal_firewall_history_oldest_read_age_seconds')} > on ${fleet()} group_left 3 * ${one('baremetal_poll_interval_seconds', 'poll="firewall"')}`,
        for: '5m',
        annotations: {
          summary:
            'Firewall histories of account {{ $labels.account }} are read less often than every 3 firewall periods',
          description:
            'The least recently read firewall history of account {{ $labels.account }} is {{ $value | humanizeDuration }} old, more than 3 firewall-poll periods: attacks on it are seen late and power actions on its server are denied as stale.',
        },
      },
      'warning',
    ),
    alert(
      {
        alert: 'BaremetalIpUnderAttack',
        comment:
          'The label server_id is what the remediation rule reads; the hour-scale history is already a\nsustained signal, so no "for". Without the replica labels: the alert keeps its fingerprint on failover.\nkeep_firing_for: it drives remediation, and a short gap in the exporter\'s series (a restart) must not\nresolve it and fire it again as a new episode.',
        expr: `label_replace(${one('baremetal_firewall_attack_events_last_hour', 'service_type="dedicated"')} > 0, "server_id", "$1", "service_id", "(.+)")`,
        keep_firing_for: REMEDIATION_KEEP_FIRING_FOR,
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
        expr: `${one('baremetal_firewall_attack_events_last_hour', 'service_type=~"colocation|transit"')} > 0`,
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
        comment: 'Across replicas: a new leader reporting the same servers is no server gone.',
        expr: `(max by ${fleet('server_id', 'hostname')} (${s('baremetal_server_info')} offset 15m)
  unless on ${fleet('server_id')} ${s('baremetal_server_info')})
and on ${fleet()} (${s('baremetal_servers')} > 0)
`,
        annotations: {
          summary: 'Server {{ $labels.server_id }} ({{ $labels.hostname }}) left the inventory',
          description:
            'The server was in the server list 15 minutes ago and is not now: cancelled, moved or a provider problem.',
        },
      },
      'warning',
    ),
    alert(
      {
        alert: 'BaremetalServerCancellationScheduled',
        comment:
          'Info, at once: a cancellation nobody meant (an "api cancellation … immediate") is seen before the\nserver goes. Across replicas, as the inventory alerts are.',
        expr: `${one('baremetal_server_cancellation_scheduled')} > 0\n`,
        annotations: {
          summary: 'Server {{ $labels.server_id }} is scheduled for cancellation ({{ $labels.cancellation_type }})',
          description:
            'The server record says a cancellation is scheduled: {{ $labels.cancellation_type }} (immediate, or at the end of the billing cycle). Withdraw it with "baremetal-exporter api cancellation {{ $labels.server_id }} delete" if nobody meant it.',
        },
      },
      'info',
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
          keep_firing_for: REMEDIATION_KEEP_FIRING_FOR,
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
        expr: `${one('baremetal_action_budget_remaining')} == 0`,
        for: '1m',
        annotations: {
          summary: 'The remediation budget is used up',
          description:
            'Account {{ $labels.account }} denies further actions this hour (decision denied_budget): many alerts need a person.',
        },
      },
      'warning',
    ),
    alert(
      {
        alert: 'BaremetalRemediationPendingStuck',
        expr: `${one('baremetal_action_pending')} > 0`,
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
        expr: `time() - ${one('baremetal_action_last_failure_timestamp_seconds')} < 900`,
        annotations: {
          summary:
            'A {{ $labels.action }} remediation {{ if eq $labels.decision "unknown" }}has an unknown outcome{{ else }}failed{{ end }}',
          description:
            "In the last 15 minutes a remediation call failed, or its outcome is unknown (timeout, connection lost or crash mid-call: the API may have acted; it is never re-sent for power actions); the journal (GET /api/v1/actions) has the API's message.",
        },
      },
      'warning',
    ),
    alert(
      {
        alert: 'BaremetalRemediationCircuitOpen',
        comment:
          'The leader reads the breaker from the shared state store every 10s; a follower leaves the series out (it\nmay hold a breaker another replica closed).',
        expr: `${one('baremetal_remediation_circuit_open')} == 1`,
        annotations: {
          summary: 'The remediation circuit breaker of account {{ $labels.account }} is open',
          description:
            'Power actions were asked for more servers of account {{ $labels.account }} within remediation.safety.circuit_breaker.window than it allows: every power action is denied (denied_circuit_open) until a person closes it with POST /api/v1/remediation/circuit/close.',
        },
      },
      'critical',
    ),
    alert(
      {
        alert: 'BaremetalRemediationEscalated',
        comment:
          'From the recorded increase over 1h, per replica, then the max: the counter of the replica that decided.\nA request escalated just before a restart is counted at the next start, where a new series shows no\nincrease; the journal keeps it.',
        expr: `max ${replicas} (${s(names.actionRequests, 'decision="escalated"')}) > 0`,
        annotations: {
          summary: 'A {{ $labels.action }} request was escalated to a person',
          description:
            'In the last hour a {{ $labels.action }} request of account {{ $labels.account }} was escalated to a person, nothing sent: the server already had remediation.safety.max_power_actions_per_server power actions within cap_window, or an escalation ladder ran out of steps, its rule changed while it ran, or its next step was lost (the climb failed or the daemon stopped in between). The row says which (GET /api/v1/actions?action={{ $labels.action }}&decision=escalated).',
        },
      },
      'critical',
    ),
    alert(
      {
        alert: 'BaremetalRemediationIneffective',
        comment:
          'From the recorded increase over 7d, summed over the replicas: each counts the verifications it ended, once.\nAt least 3 in 7 days, so that one unlucky action does not page; below half verified, the rule does not help.',
        expr: `(
  sum by ${fleet('action', 'rule')} (${s(names.verifications, 'outcome="verified"')})
    /
  sum by ${fleet('action', 'rule')} (${s(names.verifications)})
) < 0.5
  and
sum by ${fleet('action', 'rule')} (${s(names.verifications)}) >= 3
`,
        for: '1h',
        annotations: {
          summary: 'The {{ $labels.action }} rule for {{ $labels.rule }} rarely helps',
          description:
            'Over the last 7 days only {{ $value | humanizePercentage }} of the {{ $labels.action }} actions of account {{ $labels.account }} for {{ $labels.rule }} were verified (the alert resolved within verify_within): the rule does not help; look at it (GET /api/v1/actions?action={{ $labels.action }}).',
        },
      },
      'warning',
    ),
    alert(
      {
        alert: 'BaremetalRemediationVerificationUnknown',
        comment:
          'Per replica: only the leader ends a verification, and counts it once. One ended unknown just before a\nrestart is counted at the next start, where a new series shows no increase; the journal keeps it.',
        expr: `increase(${s('baremetal_remediation_verifications_total', 'outcome="unknown"')}[1h]) > 0`,
        annotations: {
          summary: 'Whether a {{ $labels.action }} for {{ $labels.rule }} helped is unknown',
          description:
            'In the last hour a verification of account {{ $labels.account }} ended unknown: at its deadline Alertmanager gave no evidence either way (unreadable, or restarted less than remediation.alertmanager.resend_interval before). No ladder step was taken; a person must look at the server (GET /api/v1/actions?verification=unknown).',
        },
      },
      'critical',
    ),
    alert(
      {
        alert: 'BaremetalActionAwaitingApproval',
        expr: `${one('baremetal_action_awaiting_approval')} > 0`,
        for: '1m',
        annotations: {
          summary: 'A {{ $labels.action }} remediation awaits approval',
          description:
            '{{ $value }} {{ $labels.action }} request(s) of account {{ $labels.account }} wait for a second operator (require_approval): nothing is sent until one approves (POST /api/v1/actions/{id}/approve) or denies it; unapproved, they expire after remediation.approval_timeout.',
        },
      },
      'warning',
    ),
    alert(
      {
        alert: 'BaremetalActionApprovalExpired',
        comment:
          'From the recorded increase over 1h, per replica, then the max, as BaremetalRemediationEscalated. An expiry\nis no longer counted as waiting, so BaremetalActionAwaitingApproval stops while nothing was done.',
        expr: `max ${replicas} (${s(names.actionRequests, 'decision="expired"')}) > 0`,
        annotations: {
          summary: 'A {{ $labels.action }} remediation expired without approval',
          description:
            'In the last hour a {{ $labels.action }} request of account {{ $labels.account }} waited for a second operator longer than remediation.approval_timeout and expired: nothing was sent. The alert that asked is asked again when Alertmanager repeats it; an operator request must be made again (GET /api/v1/actions?action={{ $labels.action }}).',
        },
      },
      'warning',
    ),
    alert(
      {
        alert: 'BaremetalNoLeader',
        comment:
          'Replicas that are up all report 0. No absent(): with every replica down there is no series, and\nBaremetalExporterDown (each target) or BaremetalExporterAbsent (no target) pages instead. With\ndatabase.share_accounts the series carry the label account: the aggregation keeps it, so the alert is per account.',
        expr: `max ${replicas} (${s('baremetal_leader')}) == 0`,
        for: '2m',
        annotations: {
          summary: 'No baremetal-exporter replica is the leader{{ with $labels.account }} of account {{ . }}{{ end }}',
          description:
            'Every scraped replica of {{ $labels.job }} reports baremetal_leader 0{{ with $labels.account }} for account {{ . }}{{ end }} for 2 minutes: nothing polls the API and deferred firewall changes wait. Usually PostgreSQL is unreachable.',
        },
      },
      'critical',
    ),
    alert(
      {
        alert: 'BaremetalSplitBrain',
        comment:
          'Two leaders can only be two databases: replicas on different PostgreSQL databases, or on SQLite\n(always leader); with database.share_accounts (per account, the label kept) also two replicas with one\nreplica_name of a version that does not refuse it. Failover and handover never overlap for 2 minutes.',
        expr: `sum ${replicas} (${s('baremetal_leader')}) > 1`,
        for: '2m',
        annotations: {
          summary:
            '{{ $value }} baremetal-exporter replicas are the leader{{ with $labels.account }} of account {{ . }}{{ end }}',
          description:
            'More than one replica of {{ $labels.job }} reports baremetal_leader 1{{ with $labels.account }} for account {{ . }}{{ end }} for 2 minutes: they do not share one database (or, with database.share_accounts, two share one replica_name), so each polls and each may act on the same alert.',
        },
      },
      'critical',
    ),
    alert(
      {
        alert: 'BaremetalHaConfigMismatch',
        comment:
          'Per replica (instance kept): the replica that disagrees with the oldest live one (named in its log\nline). Usually the one to fix, but not when the misconfigured replica became the oldest (the\nreplicas older than it restarted): compare the rows of ha_replicas. A rolling change of\ndatabase.share_accounts or of the accounts passes through it while replicas of the old config\nremain; 10 minutes leaves room for a roll, not for a forgotten file.',
        expr: `max by ${by('reason')} (${s('baremetal_ha_config_mismatch')}) == 1`,
        for: '10m',
        annotations: {
          summary: 'baremetal-exporter {{ $labels.instance }} disagrees with the other replicas ({{ $labels.reason }})',
          description:
            "Replica {{ $labels.instance }} of {{ $labels.job }} has not shared the live replicas' terms for 10 minutes ({{ $labels.reason }}: mode is database.share_accounts, accounts the account names or base URLs, duplicate_name its database.replica_name held by another live process): it leads no account and its /readyz is not ready; its log says why once a minute.",
        },
      },
      'critical',
    ),
    alert(
      {
        alert: 'BaremetalHaAccountUnled',
        comment:
          'Every replica computes the same answer from the heartbeat rows: one series per account, whichever\nreplica reports it.',
        expr: `max ${replicas} (${s('baremetal_ha_account_unled')}) == 1`,
        for: '5m',
        annotations: {
          summary: 'No baremetal-exporter replica can lead account {{ $labels.account }}',
          description:
            "Account {{ $labels.account }} has been in the config of a live replica of {{ $labels.job }} for 5 minutes but in none of the replicas that agree on the membership's terms: nobody polls it nor applies its deferred firewall changes. Give every replica the same accounts.",
        },
      },
      'critical',
    ),
  );

  return [
    { name: 'baremetal.recording', rules: recording },
    { name: 'baremetal.alerts', rules: alerts },
  ];
}
