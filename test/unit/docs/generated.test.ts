import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { loadSources, renderDocs } from '../../../scripts/docs.ts';
import { buildConfig } from '../../../src/config/load.js';
import { restartKeys } from '../../../src/config/reload.js';

// The pages rendered in memory from src/ (not dist/), compared with the committed files.
const sources = await loadSources((module) => import(`../../../src/${module}`));
const pages = renderDocs(sources);
const base = {
  upstream: { base_url: 'https://api.provider.test', api_key: 'secret-key-0123456789' },
  state_dir: '/tmp/state',
  services: { colocation_ids: ['colo-1'], transit_ids: [] },
};

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

  // The page's reload column (from the schema's `reloadable` annotation) against what a reload really does
  // (config/reload.ts): one changed key at a time, `applied` exactly when restartKeys names nothing.
  it.each([
    ['schedules.servers', { schedules: { servers: '*/7 * * * * *' } }],
    ['schedules.firewall', { schedules: { firewall: '*/20 * * * * *' } }],
    ['schedules.graphs', { schedules: { graphs: '0 */9 * * * *' } }],
    ['schedules.catalog', { schedules: { catalog: '0 0 * * * *' } }],
    ['services.colocation_ids', { services: { colocation_ids: ['colo-9'] } }],
    ['services.transit_ids', { services: { transit_ids: ['transit-9'] } }],
    ['remediation.dry_run', { remediation: { dry_run: false } }],
    ['remediation.budget_per_hour', { remediation: { budget_per_hour: 3 } }],
    ['remediation.rules', { remediation: { rules: [{ alertname: 'X', action: 'poweron' }] } }],
    ['remediation.journal_retention', { remediation: { journal_retention: '1d' } }],
    ['log_level', { log_level: 'debug' }],
    ['state_dir', { state_dir: '/tmp/other' }],
    ['web.listen_address', { web: { listen_address: '127.0.0.1:9999' } }],
    ['web.auth_limits.in_flight_per_address', { web: { auth_limits: { in_flight_per_address: 3 } } }],
    ['web.auth_limits.wrong_password_burst', { web: { auth_limits: { wrong_password_burst: 3 } } }],
    ['web.auth_limits.wrong_password_refill', { web: { auth_limits: { wrong_password_refill: '5s' } } }],
    ['graphs.max_width', { graphs: { max_width: 100 } }],
    ['graphs.types', { graphs: { types: ['port_errors'] } }],
    ['firewall.ip_retention', { firewall: { ip_retention: '1h' } }],
    ['firewall.max_ips_per_service', { firewall: { max_ips_per_service: 5 } }],
    ['timeout', { upstream: { ...base.upstream, timeout: '5s' } }],
    ['concurrency', { upstream: { ...base.upstream, concurrency: 4 } }],
    ['max_response_bytes', { upstream: { ...base.upstream, max_response_bytes: 4096 } }],
  ] as const)('%s: the reload column says what a reload does', (key, change) => {
    const escaped = key.replaceAll('.', '\\.').replaceAll('[', '\\[').replaceAll(']', '\\]');
    const column = pages['docs/configuration.md']!.match(
      new RegExp(`^\\| \`${escaped}\` \\|[^|]*\\|[^|]*\\| (\\w+) \\|`, 'm'),
    )?.[1];
    const restart = restartKeys(buildConfig(base, {}), buildConfig({ ...base, ...change }, {}));
    expect(column).toBe(restart.length === 0 ? 'applied' : 'restart');
  });

  it('documents every api command on docs/cli.md', () => {
    for (const leaf of sources.leaves) expect(pages['docs/cli.md']).toContain(`### api ${leaf.path.join(' ')}`);
  });
});
