import { readFileSync } from 'node:fs';
import { Ajv } from 'ajv';
import { Registry } from 'prom-client';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { createMetrics } from '../../src/metrics/definitions.js';
import { dashboards } from '../helpers/dashboards.js';

const schema = JSON.parse(readFileSync(new URL('../../dashboards/dashboard.schema.json', import.meta.url), 'utf8'));
const validate = new Ajv({ allErrors: true, strict: false }).compile(schema);

/** Every series name the exporter can expose, plus the recording rules. */
function knownNames(): Set<string> {
  const registry = new Registry();
  createMetrics(registry);
  const names = new Set<string>();
  for (const metric of registry.getMetricsAsArray()) {
    names.add(metric.name);
    for (const suffix of ['_bucket', '_sum', '_count']) names.add(metric.name + suffix);
  }
  const rules = parse(readFileSync(new URL('../../alerts/baremetal.rules.yml', import.meta.url), 'utf8')) as { groups: Array<{ rules: Array<{ record?: string }> }> };
  for (const group of rules.groups) for (const rule of group.rules) if (rule.record) names.add(rule.record);
  return names;
}

describe.each(dashboards())('dashboard $file', ({ dashboard }) => {
  it('matches the dashboard schema (importable with a ${DS_PROMETHEUS} input)', () => {
    expect(validate(dashboard), JSON.stringify(validate.errors, null, 1)).toBe(true);
  });

  it('has unique panel ids', () => {
    const ids = dashboard.panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('uses only variables it defines (or Grafana built-ins)', () => {
    const defined = new Set([...dashboard.templating.list.map((v) => v.name), '__rate_interval', '__interval', '__range', 'DS_PROMETHEUS']);
    for (const panel of dashboard.panels) {
      const text = JSON.stringify([panel.targets ?? [], panel.options?.content ?? '']);
      for (const [, name] of text.matchAll(/\$\{?(\w+)/g)) expect(defined.has(name!), `${panel.title}: $${name}`).toBe(true);
    }
  });

  it('queries only metrics the exporter exposes or the rules record', () => {
    const names = knownNames();
    for (const panel of dashboard.panels) {
      for (const target of panel.targets ?? []) {
        for (const [name] of target.expr.matchAll(/baremetal[_:][a-z0-9_:]+/g)) expect(names.has(name), `${panel.title}: ${name}`).toBe(true);
      }
    }
  });
});

it('gives every dashboard its own uid', () => {
  const uids = dashboards().map((d) => d.dashboard.uid);
  expect(new Set(uids).size).toBe(uids.length);
});
