/**
 * mixin.libsonnet, as a jsonnet-bundler user gets it: evaluated by Debian's `jsonnet` (no Node involved), it
 * yields the same rules as the committed alerts/baremetal.rules.yml and the committed dashboards/*.json, and
 * its `_config.baremetalSelector` gives what the TypeScript renderer gives for that selector.
 */
import { execFileSync } from 'node:child_process';
import { readdirSync, readFileSync } from 'node:fs';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { resolveConfig } from '../../mixin/config.ts';
import { renderRules } from '../../mixin/render.ts';
import { requireBinary } from '../helpers/binaries.js';

const jsonnet = requireBinary('/usr/bin/jsonnet', 'jsonnet');

interface Groups {
  groups: Array<{ name: string; rules: Array<Record<string, unknown>> }>;
}
interface Mixin {
  prometheusRules: Groups;
  prometheusAlerts: Groups;
  grafanaDashboards: Record<string, unknown>;
}

/** The mixin's three fields, evaluated by jsonnet from the repository root, with `overrides` mixed in. */
function evaluate(overrides = '{}'): Mixin {
  const snippet = `local mixin = (import 'mixin.libsonnet') + ${overrides};
{ prometheusRules: mixin.prometheusRules, prometheusAlerts: mixin.prometheusAlerts, grafanaDashboards: mixin.grafanaDashboards }`;
  return JSON.parse(
    execFileSync(jsonnet.skip ? '' : jsonnet.path, ['-J', '.', '-e', snippet], {
      encoding: 'utf8',
      maxBuffer: 64 * 1024 * 1024,
    }),
  ) as Mixin;
}

describe.skipIf(jsonnet.skip)('mixin.libsonnet evaluated by jsonnet', () => {
  it('gives the committed rules: recording groups in prometheusRules, alert groups in prometheusAlerts', () => {
    const mixin = evaluate();
    const committed = parse(readFileSync('alerts/baremetal.rules.yml', 'utf8')) as Groups;
    expect([...mixin.prometheusRules.groups, ...mixin.prometheusAlerts.groups]).toEqual(committed.groups);
    for (const rule of mixin.prometheusRules.groups.flatMap((g) => g.rules)) expect(rule).toHaveProperty('record');
    for (const rule of mixin.prometheusAlerts.groups.flatMap((g) => g.rules)) expect(rule).toHaveProperty('alert');
    expect(mixin.prometheusAlerts.groups.flatMap((g) => g.rules).length).toBeGreaterThan(10);
  });

  it('gives every committed dashboard, by file name', () => {
    const { grafanaDashboards } = evaluate();
    const files = readdirSync('dashboards').filter((f) => f.endsWith('.json'));
    expect(Object.keys(grafanaDashboards).sort()).toEqual(files.sort());
    for (const file of files)
      expect(grafanaDashboards[file], file).toEqual(JSON.parse(readFileSync(`dashboards/${file}`, 'utf8')));
  });

  it('applies _config.baremetalSelector as the TypeScript renderer applies selector', () => {
    const selector = 'namespace="monitoring",job="baremetal-exporter"';
    const mixin = evaluate(`{ _config+:: { baremetalSelector: ${JSON.stringify(selector)} } }`);
    const rendered = parse(renderRules(resolveConfig({ selector }))) as Groups;
    expect([...mixin.prometheusRules.groups, ...mixin.prometheusAlerts.groups]).toEqual(rendered.groups);
    expect(JSON.stringify(mixin.prometheusAlerts)).not.toContain('job=\\"baremetal\\"');
  });
});
