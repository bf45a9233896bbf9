import { describe, expect, it } from 'vitest';
import { configFileSchema, upstreamProperties } from '../../../src/config/schema.js';

interface Node {
  unit?: string;
  duration?: unknown;
  cron?: unknown;
  properties?: Record<string, Node>;
  items?: Node;
  additionalProperties?: Node | boolean;
}

/** Every schema node with its dotted key, depth first. */
function* nodes(node: Node, key = ''): Generator<[string, Node]> {
  yield [key, node];
  for (const [name, child] of Object.entries(node.properties ?? {})) yield* nodes(child, key ? `${key}.${name}` : name);
  if (node.items) yield* nodes(node.items, `${key}[]`);
  if (typeof node.additionalProperties === 'object') yield* nodes(node.additionalProperties, `${key}.*`);
}

describe('config formats', () => {
  it('every key the docs call a duration or a cron is checked as one by the schema', () => {
    const tagged = [...nodes(configFileSchema as Node), ...nodes({ properties: upstreamProperties } as Node)].filter(
      ([, node]) => node.unit === 'duration' || node.unit === 'cron',
    );
    expect(tagged.length).toBeGreaterThan(10);
    const unchecked = tagged.filter(([, node]) => node[node.unit as 'duration' | 'cron'] === undefined);
    expect(unchecked.map(([key]) => key)).toEqual([]);
  });
});
