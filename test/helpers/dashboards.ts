import { readdirSync, readFileSync } from 'node:fs';

export interface Panel {
  id: number;
  type: string;
  title: string;
  targets?: Array<{ refId: string; expr: string }>;
  options?: { content?: string };
}
export interface Dashboard {
  uid: string;
  title: string;
  panels: Panel[];
  templating: { list: Array<{ name: string }> };
}

const DIR = new URL('../../dashboards/', import.meta.url);

/** Every dashboard JSON shipped in dashboards/, by file name. */
export function dashboards(): Array<{ file: string; dashboard: Dashboard }> {
  return readdirSync(DIR)
    .filter((f) => f.endsWith('.json') && !f.endsWith('.schema.json'))
    .map((file) => ({ file, dashboard: JSON.parse(readFileSync(new URL(file, DIR), 'utf8')) as Dashboard }));
}

/** A panel query with Grafana's variables replaced by real values, ready for Prometheus. */
export function substitute(expr: string, variables: Record<string, string>): string {
  const values: Record<string, string> = { __rate_interval: '1m', __interval: '15s', __range: '1h', ...variables };
  return expr.replace(/\$\{?(\w+)\}?/g, (whole, name: string) => values[name] ?? whole);
}
