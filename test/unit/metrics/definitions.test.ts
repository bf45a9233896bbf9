import { readdirSync, readFileSync } from 'node:fs';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../../src/metrics/definitions.js';

describe('metric definitions', () => {
  const registry = new Registry();
  createMetrics(registry);
  const metrics = registry.getMetricsAsArray();
  // The README's metrics table, and the docs/ pages it is being split into (a row may live in either).
  const docs = new URL('../../../docs/', import.meta.url);
  const readme = [
    readFileSync(new URL('../../../README.md', import.meta.url), 'utf8'),
    ...readdirSync(docs)
      .filter((name) => name.endsWith('.md'))
      .map((name) => readFileSync(new URL(name, docs), 'utf8')),
  ].join('\n');

  it.each(metrics.map((m) => [m.name, m] as const))(
    '%s has help text, a baremetal_ name and a row in a metrics table of the README or docs/',
    (name, metric) => {
      expect(name).toMatch(/^baremetal_[a-z_]+$/);
      expect((metric as unknown as { help: string }).help.length).toBeGreaterThan(20);
      expect(readme).toContain(`\`${name}\``);
    },
  );

  it('never uses a label Prometheus or common target labels would clash with', () => {
    for (const metric of metrics) {
      const labels = (metric as unknown as { labelNames: string[] }).labelNames;
      for (const reserved of ['job', 'instance', 'service', 'type'])
        expect(labels, metric.name).not.toContain(reserved);
    }
  });
});
