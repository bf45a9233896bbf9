import { readFileSync } from 'node:fs';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { ACCOUNT_METRICS, createMetrics, exposeAccountFromZero } from '../../../src/metrics/definitions.js';

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

describe('account metrics', () => {
  it('every metric of ACCOUNT_METRICS has the label account', () => {
    const metrics = createMetrics(new Registry());
    for (const key of ACCOUNT_METRICS)
      expect((metrics[key] as unknown as { labelNames: string[] }).labelNames, key).toContain('account');
  });

  it('a call that leaves a label of an account metric out does not compile: prom-client would expose it without account', async () => {
    const registry = new Registry();
    const metrics = createMetrics(registry);
    // Each line below is a compile error (tsc -p tsconfig.check.json fails if one compiles: @ts-expect-error).
    // @ts-expect-error no label set: no account
    metrics.servers.set(3);
    // @ts-expect-error account left out
    metrics.pollRuns.inc({ poll: 'servers', outcome: 'success' });
    // @ts-expect-error account left out
    metrics.apiRequestDuration.observe({ operation: 'graphs' }, 0.5);
    // @ts-expect-error account left out of a child
    metrics.apiRequests.labels({ operation: 'graphs', outcome: 'success' }).inc();
    // What prom-client's own types let through: series without account in the families of accounts.
    const text = await registry.metrics();
    expect(text).toContain('\nbaremetal_servers 3\n');
    expect(text).toContain('\nbaremetal_poll_runs_total{poll="servers",outcome="success"} 1\n');
    expect(text).toContain('\nbaremetal_api_request_duration_seconds_count{operation="graphs"} 1\n');
    expect(text).toContain('\nbaremetal_api_requests_total{operation="graphs",outcome="success"} 1\n');
  });

  it('exposeAccountFromZero exposes the zero-first series of one account, each naming it', async () => {
    const registry = new Registry();
    const metrics = createMetrics(registry);
    exposeAccountFromZero(metrics, 'eu');
    const lines = (await registry.metrics())
      .split('\n')
      .filter((line) => /^baremetal_(api_up|servers|server_records_skipped|[a-z_]+_total)[{ ]/.test(line));
    const accounts = new Set(lines.map((line) => /account="([^"]*)"/.exec(line)?.[1]));
    expect(accounts).toEqual(new Set(['eu', undefined]));
    // The one without is the process-wide refusals counter (no account label).
    expect(lines.filter((line) => !line.includes('account=')).every((l) => l.startsWith('baremetal_http_auth_'))).toBe(
      true,
    );
    expect(lines).toContain('baremetal_api_up{account="eu"} 0');
    expect(lines).toContain('baremetal_poll_runs_total{account="eu",poll="servers",outcome="skipped"} 0');
    expect(lines).toContain('baremetal_firewall_events_dropped_total{account="eu",reason="ip_limit"} 0');
  });
});
