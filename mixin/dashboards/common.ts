/**
 * Building blocks of the dashboards, typed with Grafana's own schema (@grafana/schema): a `datasource` variable
 * every panel and query uses (so provisioning from files needs no `__inputs`), `job` and `instance` variables
 * in every selector, and an `account` variable in the selector of every per-account series.
 */
import {
  DashboardCursorSync,
  MappingType,
  ThresholdsMode,
  VariableHide,
  VariableRefresh,
  VariableSort,
  type AnnotationQuery,
  type Dashboard,
  type DataSourceRef,
  type FieldConfigSource,
  type Panel,
  type VariableModel,
} from '@grafana/schema';
import type { MixinConfig } from '../config.ts';

/** Every panel and query reads the data source the `datasource` variable names. */
export const DATASOURCE: DataSourceRef = { type: 'prometheus', uid: '${datasource}' };

/** The matchers every dashboard query carries. */
export const SELECTOR = 'job=~"$job", instance=~"$instance"';

/**
 * Series of the daemon as a whole, without an `account` label (the journal, the webhook, the leader): an
 * account matcher would hide them as soon as one account is chosen.
 */
const DAEMON_SERIES = new Set(['baremetal_journal_up', 'baremetal_alerts_received_total', 'baremetal_leader']);

/**
 * One series per fleet (High availability): every replica may report the same shared state (pending changes),
 * and a demoted leader may keep its last values, so sums and counts first take the max over the replicas.
 */
export const acrossReplicas = (config: MixinConfig, expr: string): string =>
  `max without (${config.replicaLabels.join(', ')}) (${expr})`;

/** `metric{job=~"$job", instance=~"$instance", account=~"$account", …extra}` (no account matcher for DAEMON_SERIES). */
export const sel = (metric: string, extra?: string): string =>
  `${metric}{${[SELECTOR, DAEMON_SERIES.has(metric) ? '' : 'account=~"$account"', extra].filter(Boolean).join(', ')}}`;

/** A variable fed by a Prometheus label_values() query. */
function labelValues(name: string, label: string, query: string, options: Partial<VariableModel> = {}): VariableModel {
  return {
    name,
    label,
    type: 'query',
    datasource: DATASOURCE,
    query: { query, refId: 'PrometheusVariableQueryEditor-VariableQuery' },
    refresh: VariableRefresh.onTimeRangeChanged,
    sort: VariableSort.alphabeticalAsc,
    hide: VariableHide.dontHide,
    options: [],
    ...options,
  };
}

/** datasource, job, instance and account: the variables every dashboard starts with. */
export function commonVariables(): VariableModel[] {
  const all = { multi: true, includeAll: true, allValue: '.+', current: { text: 'All', value: '$__all' } };
  return [
    {
      name: 'datasource',
      label: 'Data source',
      type: 'datasource',
      query: 'prometheus',
      options: [],
      hide: VariableHide.dontHide,
      description: 'The Prometheus that scrapes baremetal-exporter',
    },
    labelValues('job', 'Job', 'label_values(baremetal_exporter_build_info, job)', all),
    labelValues('instance', 'Instance', 'label_values(baremetal_exporter_build_info{job=~"$job"}, instance)', all),
    labelValues('account', 'Account', `label_values(baremetal_api_up{${SELECTOR}}, account)`, all),
  ];
}

/** A server_id variable limited to the chosen exporters. */
export const serverVariable = (): VariableModel =>
  labelValues('server_id', 'Server', `label_values(${sel('baremetal_server_info')}, server_id)`, {
    sort: VariableSort.numericalAsc,
  });

/** One query of a panel. `table`: an instant query in table format. */
export interface Query {
  expr: string;
  legend?: string;
  table?: boolean;
}

/** Threshold steps: the base colour, then [from value, colour] pairs. */
export const steps = (base: string, ...above: Array<[number, string]>) => ({
  mode: ThresholdsMode.Absolute,
  steps: [{ color: base, value: null }, ...above.map(([value, color]) => ({ color, value }))],
});

/** Value-to-text mappings, e.g. `{ 0: ['Down', 'red'], 1: ['Up', 'green'] }`. */
export const valueMap = (map: Record<number, [string, string]>) => [
  {
    type: MappingType.ValueToText as const,
    options: Object.fromEntries(
      Object.entries(map).map(([value, [text, color]], index) => [value, { text, color, index }]),
    ),
  },
];

export interface PanelSpec {
  id: number;
  type: 'stat' | 'timeseries' | 'table' | 'text';
  title: string;
  description: string;
  /** x, y, w, h on Grafana's 24-column grid */
  grid: [number, number, number, number];
  queries?: Query[];
  fieldConfig?: FieldConfigSource;
  options?: Record<string, unknown>;
}

/** A stat's options: the last value, coloured by its thresholds or mappings. */
export const STAT_OPTIONS = {
  reduceOptions: { calcs: ['lastNotNull'], fields: '', values: false },
  colorMode: 'background',
  graphMode: 'none',
  justifyMode: 'auto',
  textMode: 'auto',
};

export function panel(spec: PanelSpec): Panel {
  const [x, y, w, h] = spec.grid;
  const base: Panel = {
    id: spec.id,
    type: spec.type,
    title: spec.title,
    description: spec.description,
    gridPos: { x, y, w, h },
  };
  if (spec.type === 'text') return { ...base, options: spec.options ?? {} };
  return {
    ...base,
    datasource: DATASOURCE,
    targets: (spec.queries ?? []).map((q, i) => ({
      datasource: DATASOURCE,
      refId: String.fromCharCode(65 + i),
      expr: q.expr,
      legendFormat: q.legend ?? '',
      ...(q.table ? { instant: true, format: 'table' } : { range: true }),
    })),
    fieldConfig: spec.fieldConfig ?? { defaults: {}, overrides: [] },
    options: spec.options ?? (spec.type === 'stat' ? STAT_OPTIONS : {}),
  };
}

/** A whole dashboard with the shared settings. */
export function dashboard(spec: {
  uid: string;
  title: string;
  description: string;
  variables: VariableModel[];
  panels: Panel[];
  /** annotation queries (annotations.ts), shown as marks on every time series panel */
  annotations?: AnnotationQuery[];
}): Dashboard {
  return {
    uid: spec.uid,
    title: spec.title,
    description: spec.description,
    tags: ['baremetal', 'baremetal-exporter'],
    editable: true,
    graphTooltip: DashboardCursorSync.Crosshair,
    links: [],
    annotations: { list: spec.annotations ?? [] },
    refresh: '30s',
    schemaVersion: 39,
    time: { from: 'now-6h', to: 'now' },
    timepicker: {},
    timezone: '',
    templating: { list: spec.variables },
    panels: spec.panels,
    version: 1,
  };
}

/** Stat: firewall changes pending, amber from 1 (both the overview and the remediation dashboard show it). */
export const pendingPanel = (config: MixinConfig, id: number, grid: PanelSpec['grid'], byAction: boolean): Panel =>
  panel({
    id,
    type: 'stat',
    title: 'Pending actions',
    grid,
    description:
      "Firewall changes waiting for their hold or the API's 2-minute window; BaremetalRemediationPendingStuck fires after 10 minutes.",
    queries: [
      byAction
        ? { expr: `sum by (action) (${acrossReplicas(config, sel('baremetal_action_pending'))})`, legend: '{{action}}' }
        : { expr: `sum(${acrossReplicas(config, sel('baremetal_action_pending'))})` },
    ],
    fieldConfig: { defaults: { unit: 'short', thresholds: steps('green', [1, 'yellow']) }, overrides: [] },
  });

/** Stat: remediation calls left in the rolling hour, red at 0. */
export const budgetPanel = (id: number, title: string, grid: PanelSpec['grid']): Panel =>
  panel({
    id,
    type: 'stat',
    title,
    grid,
    description: 'Upstream remediation calls still allowed in the rolling hour; at 0 every further action is denied.',
    queries: [{ expr: `min(${sel('baremetal_action_budget_remaining')})` }],
    fieldConfig: { defaults: { unit: 'short', thresholds: steps('red', [1, 'yellow'], [3, 'green']) }, overrides: [] },
  });
