import { readFileSync } from 'node:fs';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../../src/metrics/definitions.js';

describe('metric definitions', () => {
  const registry = new Registry();
  createMetrics(registry);
  const metrics = registry.getMetricsAsArray();
  const page = readFileSync(new URL('../../../docs/metrics.md', import.meta.url), 'utf8');

  it.each(metrics.map((m) => [m.name, m] as const))(
    '%s has help text, a baremetal_ name and a row in docs/metrics.md',
    (name, metric) => {
      expect(name).toMatch(/^baremetal_[a-z_]+$/);
      expect((metric as unknown as { help: string }).help.length).toBeGreaterThan(20);
      expect(page).toContain(`\`${name}\``);
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
