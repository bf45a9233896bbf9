import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'yaml';
import { describe, expect, it } from 'vitest';
import { defaultConfig, resolveConfig } from '../../mixin/config.ts';
import { renderCommitted, renderFor, renderRules } from '../../mixin/render.ts';
import { requireBinary } from '../helpers/binaries.js';
import { tempDir } from '../helpers/tmp.js';

interface RuleFile {
  groups: Array<{
    name: string;
    rules: Array<{
      alert?: string;
      record?: string;
      expr: string;
      labels?: Record<string, string>;
      annotations?: Record<string, string>;
    }>;
  }>;
}
/** The rules that describe the fleet or drive remediation: same labels whichever replica leads (High availability). */
const FLEET = new Set([
  'baremetal:ips_under_attack',
  'BaremetalPollStale',
  'BaremetalPollNeverSucceeded',
  'BaremetalGraphsStale',
  'BaremetalFirewallCoverageStale',
  'BaremetalIpUnderAttack',
  'BaremetalServiceUnderAttack',
  'BaremetalServerGone',
  'BaremetalRemediationBudgetExhausted',
  'BaremetalRemediationPendingStuck',
  'BaremetalRemediationFailed',
  'BaremetalRemediationCircuitOpen',
  'BaremetalRemediationEscalated',
  'BaremetalRemediationIneffective',
  'BaremetalNoLeader',
  'BaremetalSplitBrain',
]);
const rules = (text: string) => (parse(text) as RuleFile).groups.flatMap((g) => g.rules);
const promtool = requireBinary('/usr/bin/promtool', 'prometheus');

describe('the committed renderings', () => {
  it.each(Object.entries(renderCommitted()).map(([path, text]) => ({ path, text })))(
    '$path is up to date (npm run mixin)',
    ({ path, text }) => {
      expect(readFileSync(path, 'utf8') === text, `${path} differs from a fresh rendering: run npm run mixin`).toBe(
        true,
      );
    },
  );

  it('names a runbook section that exists for every alert', () => {
    const runbook = readFileSync('docs/runbook.md', 'utf8');
    const anchors = new Set([...runbook.matchAll(/^## (\w+)/gm)].map((m) => m[1]!.toLowerCase()));
    for (const rule of rules(renderRules(defaultConfig)).filter((r) => r.alert)) {
      expect(anchors.has(rule.annotations!.runbook_url!.split('#')[1]!), rule.alert).toBe(true);
    }
  });
});

it('names only alerts that ship in examples/alertmanager.yml (routes and inhibit rules)', () => {
  const shipped = new Set(rules(renderRules(defaultConfig)).flatMap((r) => (r.alert ? [r.alert] : [])));
  const text = readFileSync('examples/alertmanager.yml', 'utf8');
  const named = [...text.matchAll(/alertname=~?"([^"]+)"/g)].flatMap(([, value]) => {
    const group = /^Baremetal\((.+)\)$/.exec(value!);
    return group ? group[1]!.split('|').map((n) => `Baremetal${n}`) : value!.split('|');
  });
  expect(named.length).toBeGreaterThan(10);
  for (const name of named) expect(shipped.has(name), name).toBe(true);
});

describe('rendering with another config', () => {
  const config = resolveConfig({
    selector: 'namespace="monitoring",job="baremetal-exporter"',
    groupBy: ['namespace', 'job', 'instance'],
    rateWindow: '10m',
    severities: { critical: 'page', warning: 'ticket' },
    blackboxSelector: null,
  });
  const rendered = renderFor(config);
  const all = rules(rendered['baremetal.rules.yml']!);

  it('puts the selector on every series selector and hard-codes no job', () => {
    for (const rule of all) {
      expect(rule.expr, rule.alert ?? rule.record).not.toContain('job="baremetal"');
      for (const [whole, matchers = ''] of rule.expr.matchAll(/\b(?:baremetal_[a-z_]+|up)\b(\{[^}]*\})?/g)) {
        expect(matchers, `${rule.alert ?? rule.record}: ${whole}`).toContain(
          'namespace="monitoring",job="baremetal-exporter"',
        );
      }
    }
  });

  it('keeps the groupBy labels in every aggregation and vector match, fleet rules without the replica labels', () => {
    for (const rule of all) {
      const name = rule.alert ?? rule.record!;
      const kept = FLEET.has(name) ? ['namespace', 'job'] : ['namespace', 'job', 'instance'];
      for (const [clause, labels] of rule.expr.matchAll(/\b(?:by|on) \(([^)]*)\)/g)) {
        if (clause.startsWith('on (instance)')) continue; // the blackbox join, left out here
        expect(labels!.split(', ').slice(0, kept.length), `${name}: ${clause}`).toEqual(kept);
        expect(labels!.split(', '), `${name}: ${clause}`).not.toContain(FLEET.has(name) ? 'instance' : 'pod');
      }
    }
  });

  it.each([...FLEET])(
    '%s takes one series per fleet: every selector inside max/sum without the replica labels',
    (name) => {
      const rule = all.find((r) => (r.alert ?? r.record) === name)!;
      const selectors = [...rule.expr.matchAll(/\b(?:baremetal_[a-z_]+)\{/g)].length;
      const aggregated = [...rule.expr.matchAll(/\b(?:max|sum) without \(instance, pod\) \(baremetal_[a-z_]+\{/g)]
        .length;
      const joined = [
        ...rule.expr.matchAll(/\b(?:by|unless on|and on) \((?:(?!instance)[^)])*\) \(?baremetal_[a-z_]+\{/g),
      ].length;
      expect(aggregated + joined, rule.expr).toBe(selectors);
    },
  );

  it.each(['BaremetalExporterDown', 'BaremetalApiDown', 'BaremetalApiErrorRatioHigh'])(
    '%s stays per replica (its own health)',
    (name) => {
      expect(all.find((r) => r.alert === name)!.expr).not.toContain('without');
    },
  );

  it.each([
    {
      name: 'the rate window in the recording rule names',
      check: () => expect(all.map((r) => r.record)).toContain('baremetal:api_error_ratio:rate10m'),
    },
    {
      name: 'the dashboards reading the renamed rule',
      check: () =>
        expect(rendered['dashboards/baremetal-overview.json']).toContain('baremetal:api_error_ratio:rate10m{'),
    },
    {
      name: 'the severity mapping',
      check: () =>
        expect(new Set(all.filter((r) => r.alert).map((r) => r.labels!.severity))).toEqual(
          new Set(['page', 'ticket', 'info']),
        ),
    },
    {
      name: 'no BaremetalServerUnreachable without a blackbox selector',
      check: () => expect(all.map((r) => r.alert)).not.toContain('BaremetalServerUnreachable'),
    },
    {
      name: 'other replica labels in every fleet aggregation',
      check: () =>
        expect(
          rules(renderFor(resolveConfig({ replicaLabels: ['instance', 'replica'] }))['baremetal.rules.yml']!).find(
            (r) => r.alert === 'BaremetalIpUnderAttack',
          )!.expr,
        ).toContain('max without (instance, replica) (baremetal_firewall_attack_events_last_hour{'),
    },
    {
      name: 'the same groups in the PrometheusRule',
      check: () =>
        expect(
          (parse(rendered['prometheusrule.yaml']!) as { spec: RuleFile }).spec.groups.flatMap((g) => g.rules),
        ).toEqual(all),
    },
  ])('renders $name', ({ check }) => check());

  it.skipIf(promtool.skip)('passes promtool check rules', () => {
    const dir = tempDir('bmx-mixin-');
    writeFileSync(join(dir, 'rules.yml'), rendered['baremetal.rules.yml']!);
    expect(
      execFileSync(promtool.skip ? '' : promtool.path, ['check', 'rules', join(dir, 'rules.yml')], {
        encoding: 'utf8',
      }),
    ).toMatch(/SUCCESS: 31 rules found/);
  });
});

describe('the mixin config', () => {
  it.each([
    { name: 'an unknown key', overrides: { jobName: 'x' }, error: 'jobName: unknown key' },
    {
      name: 'a selector that is not matchers',
      overrides: { selector: 'baremetal' },
      error: 'selector: must be PromQL matchers',
    },
    { name: 'an unterminated matcher', overrides: { selector: 'job="a' }, error: 'selector: must be PromQL matchers' },
    { name: 'groupBy without instance', overrides: { groupBy: ['job'] }, error: 'groupBy: must include instance' },
    {
      name: 'a bad label name',
      overrides: { groupBy: ['job', 'instance', 'a-b'] },
      error: 'groupBy: must be a list of label names',
    },
    {
      name: 'a rate window without a unit',
      overrides: { rateWindow: '5' },
      error: 'rateWindow: must be a Prometheus duration',
    },
    {
      name: 'an empty severity',
      overrides: { severities: { critical: '' } },
      error: 'severities.critical: must be a non-empty string',
    },
    {
      name: 'a bad blackbox selector',
      overrides: { blackboxSelector: 'probe' },
      error: 'blackboxSelector: must be PromQL matchers or null',
    },
    { name: 'not an object', overrides: ['job'], error: 'must be a JSON object' },
    {
      name: 'a bad replica label',
      overrides: { replicaLabels: ['instance', 'pod name'] },
      error: 'replicaLabels: must be a list of label names',
    },
    {
      name: 'job as a replica label',
      overrides: { replicaLabels: ['job'] },
      error: 'replicaLabels: must not include job',
    },
  ])('rejects $name', ({ overrides, error }) => {
    expect(() => resolveConfig(overrides)).toThrow(error);
  });

  it('keeps the defaults it is not given', () => {
    expect(resolveConfig({ selector: 'job="bm"' })).toEqual({ ...defaultConfig, selector: 'job="bm"' });
  });
});
