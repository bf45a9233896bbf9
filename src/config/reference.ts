/**
 * The configuration reference, derived from the schema: one row per key with its default and description.
 * The README's configuration table is this table (test/unit/config/reference.test.ts fails when they differ).
 */
import { configFileSchema } from './schema.js';

/** One documented key: dotted path (`remediation.rules[].hold`), its default (undefined: none) and meaning. */
export interface ConfigKey {
  key: string;
  default: unknown;
  description: string;
}

interface Node {
  type?: string;
  default?: unknown;
  description?: string;
  properties?: Record<string, Node>;
  items?: Node;
}

/** Every key of the file, depth first in schema order; an object key is listed through its keys. */
export function configKeys(schema: Node = configFileSchema as Node, prefix = ''): ConfigKey[] {
  const keys: ConfigKey[] = [];
  for (const [name, node] of Object.entries(schema.properties ?? {})) {
    const key = `${prefix}${name}`;
    if (node.properties) keys.push(...configKeys(node, `${key}.`));
    else {
      keys.push({ key, default: node.default, description: node.description ?? '' });
      if (node.items?.properties) keys.push(...configKeys(node.items, `${key}[].`));
    }
  }
  return keys;
}

/** A default as the README shows it. */
function show(value: unknown): string {
  if (value === undefined) return '—';
  if (Array.isArray(value)) return `\`[${value.join(', ')}]\``;
  if (typeof value === 'object') return `\`${JSON.stringify(value)}\``;
  return `\`${String(value)}\``;
}

/** The README's configuration table (Markdown). */
export function configTable(keys: ConfigKey[] = configKeys()): string {
  const rows = keys.map((k) => `| \`${k.key}\` | ${show(k.default)} | ${k.description.replaceAll('|', '\\|')} |`);
  return ['| key | default | meaning |', '|---|---|---|', ...rows].join('\n');
}
