/**
 * The mixin's configuration, the monitoring-mixins way: one source (mixin/rules.ts, mixin/dashboards/) rendered
 * with a config into alerts/baremetal.rules.yml, dashboards/*.json and deploy/kubernetes/prometheusrule.yaml.
 * `npm run mixin -- --config my.json --out dir` renders them for another selector (README, "The mixin").
 */

/** Label values of the `severity` label, by how urgent an alert is. */
export interface Severities {
  critical: string;
  warning: string;
  info: string;
}

export interface MixinConfig {
  /** PromQL matchers selecting the exporter's series in every rule, e.g. `job="baremetal"` or `namespace="monitoring",job="baremetal-exporter"` */
  selector: string;
  /** labels that tell one exporter (and one account of it) from another: every aggregation and `on (…)` keeps them (must hold `job` and `instance`, which the dashboards filter on; `account` keeps one account's problem from hiding in another's) */
  groupBy: string[];
  /**
   * labels that tell replicas of one deployment apart (High availability): the alerts that describe the fleet or
   * drive remediation aggregate them away (`max without (…)`), so such an alert keeps its labels — and its
   * Alertmanager fingerprint — when another replica becomes the leader; per-replica health alerts keep them
   */
  replicaLabels: string[];
  /** window of the rate() recording rules, a Prometheus duration; it is also in their names (`…:rate5m`) */
  rateWindow: string;
  /** the `severity` label each alert gets, by level */
  severities: Severities;
  /** matchers selecting blackbox_exporter's `probe_success` for each server's main IP (ICMP module, `instance` = the IP); null leaves `BaremetalServerUnreachable` out */
  blackboxSelector: string | null;
  /** where `runbook_url` points; the alert name, lower-cased, is appended as the anchor */
  runbookBaseUrl: string;
  /** metadata of the PrometheusRule object */
  prometheusRule: { name: string; labels: Record<string, string> };
}

/** The rendering committed as alerts/baremetal.rules.yml: Prometheus scrapes the exporter in the job `baremetal` (examples/prometheus.yml). */
export const defaultConfig: MixinConfig = {
  selector: 'job="baremetal"',
  groupBy: ['job', 'instance', 'account'],
  replicaLabels: ['instance', 'pod'],
  rateWindow: '5m',
  severities: { critical: 'critical', warning: 'warning', info: 'info' },
  blackboxSelector: 'job="blackbox-icmp"',
  runbookBaseUrl: 'https://github.com/baremetal-exporter/baremetal-exporter/blob/main/docs/runbook.md',
  prometheusRule: { name: 'baremetal-exporter', labels: { 'app.kubernetes.io/name': 'baremetal-exporter' } },
};

/**
 * The rendering committed as deploy/kubernetes/prometheusrule.yaml: the prometheus-operator names the job after
 * the Service (`baremetal-exporter`) and adds `namespace`, so aggregations keep it too.
 */
export const kubernetesConfig: MixinConfig = {
  ...defaultConfig,
  selector: 'job="baremetal-exporter"',
  groupBy: ['namespace', 'job', 'instance', 'account'],
};

const DURATION = /^(\d+(ms|s|m|h|d|w|y))+$/;
const LABEL = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const MATCHERS =
  /^\s*[a-zA-Z_][a-zA-Z0-9_]*\s*(=|!=|=~|!~)\s*"(?:[^"\\]|\\.)*"\s*(,\s*[a-zA-Z_][a-zA-Z0-9_]*\s*(=|!=|=~|!~)\s*"(?:[^"\\]|\\.)*"\s*)*$/;

/**
 * `overrides` (parsed JSON from `--config`) on top of `base`, checked: unknown keys, a selector that is not a
 * list of PromQL matchers, a bad duration or label name are errors naming the key.
 */
export function resolveConfig(overrides: unknown, base: MixinConfig = defaultConfig): MixinConfig {
  if (typeof overrides !== 'object' || overrides === null || Array.isArray(overrides))
    throw new Error('mixin config: must be a JSON object');
  const problems: string[] = [];
  for (const key of Object.keys(overrides)) if (!(key in base)) problems.push(`${key}: unknown key`);
  const config = { ...base, ...(overrides as Partial<MixinConfig>) };
  config.severities = { ...base.severities, ...(overrides as Partial<MixinConfig>).severities };
  if (typeof config.selector !== 'string' || !MATCHERS.test(config.selector))
    problems.push('selector: must be PromQL matchers, e.g. job="baremetal"');
  if (
    config.blackboxSelector !== null &&
    (typeof config.blackboxSelector !== 'string' || !MATCHERS.test(config.blackboxSelector))
  ) {
    problems.push('blackboxSelector: must be PromQL matchers or null');
  }
  if (!Array.isArray(config.groupBy) || !config.groupBy.every((l) => typeof l === 'string' && LABEL.test(l)))
    problems.push('groupBy: must be a list of label names');
  else
    for (const label of ['job', 'instance'])
      if (!config.groupBy.includes(label))
        problems.push(`groupBy: must include ${label} (the dashboards filter on it)`);
  if (
    !Array.isArray(config.replicaLabels) ||
    !config.replicaLabels.every((l) => typeof l === 'string' && LABEL.test(l))
  )
    problems.push('replicaLabels: must be a list of label names');
  else if (config.replicaLabels.includes('job'))
    problems.push('replicaLabels: must not include job (it tells one deployment from another)');
  if (typeof config.rateWindow !== 'string' || !DURATION.test(config.rateWindow))
    problems.push('rateWindow: must be a Prometheus duration, e.g. 5m');
  for (const level of ['critical', 'warning', 'info'] as const) {
    if (typeof config.severities[level] !== 'string' || config.severities[level] === '')
      problems.push(`severities.${level}: must be a non-empty string`);
  }
  if (typeof config.runbookBaseUrl !== 'string' || !/^https?:\/\//.test(config.runbookBaseUrl))
    problems.push('runbookBaseUrl: must be an http(s) URL');
  if (problems.length) throw new Error(`mixin config: ${problems.join('; ')}`);
  return config;
}
