/**
 * Rendering a command's result: a readable table by default, or one JSON (or YAML) document whose shape
 * is documented in the README. Pure functions: text in, text out.
 */
import { stringify as toYaml } from 'yaml';

export const OUTPUT_FORMATS = ['table', 'json', 'yaml'] as const;
export type OutputFormat = (typeof OUTPUT_FORMATS)[number];

/** What a command produced: `data` for json/yaml, `table` for people. */
export interface Rendered {
  data: unknown;
  table: string;
}

/** Renders `result` in `format`; always ends with a newline (empty table → nothing). */
export function render(format: OutputFormat, result: Rendered): string {
  if (format === 'json') return `${JSON.stringify(result.data, null, 2)}\n`;
  if (format === 'yaml') return toYaml(result.data);
  return result.table === '' || result.table.endsWith('\n') ? result.table : `${result.table}\n`;
}

/** Longest value shown in a table cell; longer ones are cut with "…". */
export const MAX_CELL = 60;

const cell = (value: string) => {
  const flat = value.replace(/\s+/g, ' ');
  return flat.length > MAX_CELL ? `${flat.slice(0, MAX_CELL - 1)}…` : flat;
};

/** Columns aligned with two spaces; `headers` in capitals by convention. `wide`: no cell cut (`-o extended`). */
export function table(headers: string[], rows: string[][], options: { wide?: boolean } = {}): string {
  const fit = options.wide ? (value: string) => value.replace(/\s+/g, ' ') : cell;
  const cells = [headers, ...rows.map((r) => r.map(fit))];
  const widths = headers.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  return `${cells.map((r) => r.map((c, i) => (i === r.length - 1 ? c : c.padEnd(widths[i]!))).join('  ')).join('\n')}\n`;
}

/** `key: value` lines, keys aligned. */
export function keyValues(pairs: Array<[string, string]>): string {
  const width = Math.max(0, ...pairs.map(([k]) => k.length));
  return `${pairs.map(([k, v]) => `${`${k}:`.padEnd(width + 1)} ${cell(v)}`).join('\n')}\n`;
}
