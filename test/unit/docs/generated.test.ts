import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadSources, renderDocs } from '../../../scripts/docs.ts';

// The pages rendered in memory from src/ (not dist/), compared with the committed files.
const sources = await loadSources((module) => import(`../../../src/${module}`));
const pages = renderDocs(sources);

describe('generated reference pages', () => {
  it.each(Object.keys(pages).map((path) => [path] as const))('%s is up to date (else: run npm run docs)', (path) => {
    const committed = readFileSync(new URL(`../../../${path}`, import.meta.url), 'utf8');
    expect(committed === pages[path], `${path} differs from its source: run npm run docs`).toBe(true);
  });

  it('lists every metric with every label, account included, on docs/metrics.md', () => {
    const page = pages['docs/metrics.md']!;
    expect(sources.metrics.length).toBeGreaterThan(30);
    for (const metric of sources.metrics) {
      expect(page).toContain(`### ${metric.name}`);
      for (const label of metric.labels) expect(page, metric.name).toContain(`\`${label}\``);
    }
    expect(sources.metrics.filter((m) => m.labels.includes('account')).length).toBeGreaterThan(20);
  });

  it('defines the upstream block once and points accounts[] to it', () => {
    const page = pages['docs/configuration.md']!;
    expect(page).not.toMatch(/`accounts\[\]\.(base_url|api_key|timeout)`/);
    expect(page).not.toMatch(/`upstream\.(base_url|api_key|timeout)`/);
    for (const key of Object.keys(sources.upstreamProperties)) expect(page).toContain(`| \`${key}\` |`);
    expect(page).toContain('`accounts[]`');
  });

  it('says which keys a reload applies, as config/reload.ts does', () => {
    const page = pages['docs/configuration.md']!;
    const reload = (key: string) =>
      page.match(
        new RegExp(`\\| \`${key.replaceAll('[', '\\[').replaceAll(']', '\\]')}\` \\|[^|]*\\|[^|]*\\| (\\w+) \\|`),
      )?.[1];
    for (const key of [
      'schedules.servers',
      'remediation.dry_run',
      'remediation.budget_per_hour',
      'services.colocation_ids',
      'accounts[].services.transit_ids',
      'remediation.rules[].hold',
    ])
      expect(reload(key), key).toBe('applied');
    for (const key of ['state_dir', 'log_level', 'web.listen_address', 'graphs.types', 'remediation.journal_retention'])
      expect(reload(key), key).toBe('restart');
  });

  it('documents every api command on docs/cli.md', () => {
    for (const leaf of sources.leaves) expect(pages['docs/cli.md']).toContain(`### api ${leaf.path.join(' ')}`);
  });
});
