import { readFileSync } from 'node:fs';
import type { Dashboard as GrafanaDashboard } from '@grafana/schema';
import { Registry } from 'prom-client';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { defaultConfig } from '../../mixin/config.ts';
import { dashboards as sources } from '../../mixin/dashboards/index.ts';
import { createMetrics } from '../../src/metrics/definitions.js';
import { dashboards } from '../helpers/dashboards.js';

/** Every series name the exporter can expose, plus the recording rules. */
function knownNames(): Set<string> {
  const registry = new Registry();
  createMetrics(registry);
  const names = new Set<string>();
  for (const metric of registry.getMetricsAsArray()) {
    names.add(metric.name);
    for (const suffix of ['_bucket', '_sum', '_count']) names.add(metric.name + suffix);
  }
  const rules = parse(readFileSync(new URL('../../alerts/baremetal.rules.yml', import.meta.url), 'utf8')) as {
    groups: Array<{ rules: Array<{ record?: string }> }>;
  };
  for (const group of rules.groups) for (const rule of group.rules) if (rule.record) names.add(rule.record);
  return names;
}

/** Panels whose value has a meaning an operator reads at a glance: each needs thresholds or value mappings. */
const MEANINGFUL = [
  'API up',
  'IPs under attack now',
  'Pending actions',
  'Remediation budget left',
  'Budget left',
  'Oldest poll',
  'Journal',
  'Graph age',
  'Leader',
  'Cancellation',
];

// Grafana's own schema: the sources are typed as @grafana/schema's Dashboard (tsc checks mixin/ through this
// import), and test/integration/mixin.test.ts proves each committed JSON is exactly their rendering.
const typed: GrafanaDashboard[] = sources(defaultConfig).map((d) => d.dashboard);

describe.each(dashboards())('dashboard $file', ({ file, dashboard }) => {
  it("is the rendering of a mixin source typed as Grafana's Dashboard", () => {
    expect(typed.map((d) => d.uid)).toContain(dashboard.uid);
    expect(sources(defaultConfig).find((s) => s.file === file)?.dashboard).toEqual(dashboard);
  });

  it('has unique panel ids', () => {
    const ids = dashboard.panels.map((p) => p.id);
    expect(new Set(ids).size).toBe(ids.length);
  });

  it('provisions from a file: a datasource variable, used by every panel, query and variable; no ${DS_PROMETHEUS}', () => {
    expect(JSON.stringify(dashboard)).not.toContain('DS_PROMETHEUS');
    expect(dashboard.templating.list.find((v) => v.name === 'datasource')).toMatchObject({
      type: 'datasource',
      query: 'prometheus',
    });
    for (const variable of dashboard.templating.list.filter((v) => v.type === 'query'))
      expect(variable.datasource?.uid, variable.name).toBe('${datasource}');
    for (const panel of dashboard.panels.filter((p) => p.type !== 'text')) {
      expect(panel.datasource, panel.title).toEqual({ type: 'prometheus', uid: '${datasource}' });
      for (const target of panel.targets ?? [])
        expect(target.datasource, `${panel.title} ${target.refId}`).toEqual(panel.datasource);
    }
  });

  it('filters every series selector by the job and instance variables', () => {
    expect(dashboard.templating.list.map((v) => v.name)).toEqual(expect.arrayContaining(['job', 'instance']));
    for (const panel of dashboard.panels) {
      for (const target of panel.targets ?? []) {
        const metrics = [...target.expr.matchAll(/\b(baremetal[_:][a-z0-9_:]+)(\{[^}]*\})?/g)];
        expect(metrics.length, `${panel.title}: ${target.expr}`).toBeGreaterThan(0);
        for (const [whole, , matchers = ''] of metrics) {
          expect(matchers, `${panel.title}: ${whole}`).toContain('job=~"$job"');
          expect(matchers, `${panel.title}: ${whole}`).toContain('instance=~"$instance"');
        }
      }
    }
  });

  it('gives every timeseries and stat panel a unit, and meaningful values thresholds or mappings', () => {
    for (const panel of dashboard.panels.filter((p) => p.type === 'timeseries' || p.type === 'stat')) {
      expect(panel.fieldConfig?.defaults.unit, panel.title).toMatch(/^\w+$/);
    }
    for (const panel of dashboard.panels.filter((p) => MEANINGFUL.includes(p.title))) {
      const { thresholds, mappings } = panel.fieldConfig!.defaults;
      expect((thresholds?.steps.length ?? 0) > 1 || (mappings?.length ?? 0) > 0, panel.title).toBe(true);
    }
  });

  it('uses only variables it defines (or Grafana built-ins)', () => {
    const defined = new Set([
      ...dashboard.templating.list.map((v) => v.name),
      '__rate_interval',
      '__interval',
      '__range',
      '__all',
    ]);
    const text = JSON.stringify([dashboard.panels, dashboard.templating, dashboard.annotations]);
    for (const [, name] of text.matchAll(/\$\{?(\w+)/g)) expect(defined.has(name!), `$${name}`).toBe(true);
  });

  it('marks attack starts (and, on the fleet dashboards, remediation decisions) with annotations from its series', () => {
    const annotations = dashboard.annotations.list;
    const names = knownNames();
    expect(annotations.map((a) => a.name)).toEqual(
      expect.arrayContaining(
        file === 'baremetal-server.json' ? ['Attack starts'] : ['Attack starts', 'Remediation decisions'],
      ),
    );
    for (const annotation of annotations) {
      expect(annotation.datasource, annotation.name).toEqual({ type: 'prometheus', uid: '${datasource}' });
      expect(annotation.enable, annotation.name).toBe(true);
      expect(annotation.step, annotation.name).toMatch(/^\d+[smh]$/);
      const metrics = [...annotation.expr.matchAll(/\b(baremetal[_:][a-z0-9_:]+)(\{[^}]*\})?/g)];
      expect(metrics.length, annotation.name).toBeGreaterThan(0);
      for (const [whole, name, matchers = ''] of metrics) {
        expect(names.has(name!), `${annotation.name}: ${name}`).toBe(true);
        expect(matchers, `${annotation.name}: ${whole}`).toContain('job=~"$job"');
        expect(matchers, `${annotation.name}: ${whole}`).toContain('instance=~"$instance"');
      }
      // Every label the title and tags name survives the query's aggregation.
      const kept = /^sum by \(([^)]*)\)/.exec(annotation.expr)?.[1]?.split(/,\s*/);
      for (const label of [...annotation.titleFormat.matchAll(/\{\{(\w+)\}\}/g)]
        .map((m) => m[1]!)
        .concat(annotation.tagKeys.split(',')))
        if (kept) expect(kept, `${annotation.name}: ${label}`).toContain(label);
    }
  });

  it('queries only metrics the exporter exposes or the rules record', () => {
    const names = knownNames();
    for (const panel of dashboard.panels) {
      for (const target of panel.targets ?? []) {
        for (const [name] of target.expr.matchAll(/baremetal[_:][a-z0-9_:]+/g))
          expect(names.has(name), `${panel.title}: ${name}`).toBe(true);
      }
    }
  });
});

it('gives every dashboard its own uid', () => {
  const uids = dashboards().map((d) => d.dashboard.uid);
  expect(new Set(uids).size).toBe(uids.length);
  expect(uids).toHaveLength(3);
});

it('marks every panel the MEANINGFUL list names (the list is not stale)', () => {
  const titles = new Set(dashboards().flatMap((d) => d.dashboard.panels.map((p) => p.title)));
  for (const title of MEANINGFUL) expect(titles.has(title), title).toBe(true);
});

it('ships a Grafana provisioning example: a file provider and a Prometheus data source', () => {
  const read = (file: string) =>
    parse(readFileSync(new URL(`../../examples/grafana/${file}`, import.meta.url), 'utf8'));
  const provider = read('dashboards.yml') as {
    apiVersion: number;
    providers: Array<{ type: string; options: { path: string } }>;
  };
  expect(provider.apiVersion).toBe(1);
  expect(provider.providers).toEqual([
    expect.objectContaining({ type: 'file', options: expect.objectContaining({ path: expect.stringMatching(/^\//) }) }),
  ]);
  const sources = (read('datasources.yml') as { datasources: Array<{ type: string; isDefault?: boolean }> })
    .datasources;
  // The dashboards' datasource variable lists data sources of this type and starts on the default one.
  expect(sources.filter((d) => d.type === 'prometheus' && d.isDefault)).toHaveLength(1);
});
