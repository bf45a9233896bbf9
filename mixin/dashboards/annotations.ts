/**
 * Grafana annotations of the dashboards, from the exporter's own series (no Grafana-side store): a mark where
 * an attack on an IP starts, and one where remediation decided something. Grafana's Prometheus data source
 * turns each run of steps where the query returns a series into one annotation, titled and tagged from its
 * labels (`titleFormat`, `textFormat`, `tagKeys`; `step` is the query's resolution).
 */
import type { AnnotationQuery } from '@grafana/schema';
import type { MixinConfig } from '../config.ts';
import { acrossReplicas, DATASOURCE, sel } from './common.ts';

/** An annotation query of Grafana's Prometheus data source (the fields it reads besides the common ones). */
export type PrometheusAnnotation = AnnotationQuery & {
  expr: string;
  step: string;
  titleFormat: string;
  textFormat: string;
  tagKeys: string;
  useValueForTime: boolean;
};

/** How long after its start an attack's mark lasts, and the step of both queries. */
const START_WINDOW = '5m';
const STEP = '1m';

/**
 * "Attack started": an IP whose events of the last hour went from none to some within the last 5 minutes
 * (`baremetal_firewall_attack_events_last_hour`, the series BaremetalIpUnderAttack reads). Taken across
 * replicas, so a failover (another `instance`) is no new attack. `extra` narrows it, e.g. to one server.
 */
export function attackStarts(config: MixinConfig, extra?: string): PrometheusAnnotation {
  const events = sel('baremetal_firewall_attack_events_last_hour', extra);
  return {
    name: 'Attack starts',
    datasource: DATASOURCE,
    enable: true,
    hide: false,
    iconColor: 'red',
    expr: `${acrossReplicas(config, events)} > 0
unless
${acrossReplicas(config, `${events} offset ${START_WINDOW}`)} > 0`,
    step: STEP,
    titleFormat: 'Attack on {{ip}}',
    textFormat: '{{service_type}} {{service_id}}, account {{account}}: events in the last hour',
    tagKeys: 'account,service_type,service_id,ip',
    useValueForTime: false,
  };
}

/**
 * "Remediation decision": remediation requests decided in the step, by account, action and decision
 * (`baremetal_action_requests_total`: executed, dry_run, denied_*, deferred, failed, …). Every replica rebuilds
 * these counters from the shared journal, so they are taken across replicas before summing.
 */
export function remediationDecisions(config: MixinConfig): PrometheusAnnotation {
  return {
    name: 'Remediation decisions',
    datasource: DATASOURCE,
    enable: true,
    hide: false,
    iconColor: 'purple',
    expr: `sum by (account, action, decision) (${acrossReplicas(config, `increase(${sel('baremetal_action_requests_total')}[2m])`)}) > 0`,
    step: STEP,
    titleFormat: '{{action}}: {{decision}}',
    textFormat: 'account {{account}}',
    tagKeys: 'account,action,decision',
    useValueForTime: false,
  };
}
