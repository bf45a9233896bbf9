import { readdirSync, readFileSync } from 'node:fs';

/** The parts of a rendered panel the tests read (the full shape is Grafana's `Panel`, checked in mixin/). */
export interface Panel {
  id: number;
  type: string;
  title: string;
  datasource?: { type?: string; uid?: string };
  targets?: Array<{ refId: string; expr: string; datasource?: { type?: string; uid?: string } }>;
  fieldConfig?: {
    defaults: { unit?: string; thresholds?: { steps: unknown[] }; mappings?: unknown[] };
    overrides: unknown[];
  };
  options?: { content?: string };
}
export interface Dashboard {
  uid: string;
  title: string;
  panels: Panel[];
  templating: { list: Array<{ name: string; type: string; query?: unknown; datasource?: { uid?: string } }> };
  /** Grafana Prometheus annotation queries (mixin/dashboards/annotations.ts) */
  annotations: {
    list: Array<{
      name: string;
      enable: boolean;
      expr: string;
      step: string;
      titleFormat: string;
      tagKeys: string;
      datasource?: { type?: string; uid?: string };
    }>;
  };
}

const DIR = new URL('../../dashboards/', import.meta.url);

/** Every dashboard JSON shipped in dashboards/, by file name. */
export function dashboards(): Array<{ file: string; dashboard: Dashboard }> {
  return readdirSync(DIR)
    .filter((f) => f.endsWith('.json'))
    .map((file) => ({ file, dashboard: JSON.parse(readFileSync(new URL(file, DIR), 'utf8')) as Dashboard }));
}

/**
 * A panel query with Grafana's variables replaced by real values, ready for Prometheus: `job` is the scrape
 * job of examples/prometheus.yml and `instance` and `account` their variables' "All" value, unless `variables` says otherwise.
 */
export function substitute(expr: string, variables: Record<string, string>): string {
  const values: Record<string, string> = {
    __rate_interval: '1m',
    __interval: '15s',
    __range: '1h',
    job: 'baremetal',
    instance: '.+',
    account: '.+',
    ...variables,
  };
  return expr.replace(/\$\{?(\w+)\}?/g, (whole, name: string) => values[name] ?? whole);
}
