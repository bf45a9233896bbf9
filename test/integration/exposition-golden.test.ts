/**
 * The golden exposition: the daemon's /metrics after one run of every poll against a seeded simulator with
 * a fixed clock, compared byte for byte with test/fixtures/exposition/daemon.txt (the way json_exporter's
 * test/response/*.txt are), and the raw exposition checked with `promtool check metrics`.
 *
 * What is not deterministic is taken out of the comparison, and only that:
 * - the `process_*` and `nodejs_*` families (the Node runtime's own figures);
 * - the `version`, `nodejs` and `goversion` labels of `baremetal_exporter_build_info`;
 * - the `_bucket` (finite `le`) and `_sum` values of `baremetal_api_request_duration_seconds`: wall-clock
 *   request durations (their `_count` and `+Inf` bucket stay).
 * Poll durations and every timestamp come from the injected clock, so they are exact. The polls run one
 * after the other with `upstream.concurrency: 1`, so series appear in one order.
 *
 * After an intended change: BAREMETAL_UPDATE_GOLDEN=1 npx vitest run test/integration/exposition-golden.test.ts
 */
import { spawnSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Daemon } from '../../src/daemon/start.js';
import { requireBinary } from '../helpers/binaries.js';
import { accountOf, startHarness, type Harness } from '../helpers/daemon.js';

const KEY = 'golden-key-3b9e61c2';
const NOW = Date.UTC(2026, 10, 21, 12, 0, 0);
const FIXTURE = new URL('../fixtures/exposition/daemon.txt', import.meta.url);
const promtool = requireBinary('/usr/bin/promtool', 'prometheus');

/** The exposition with the non-deterministic parts replaced (see the header). */
function normalize(exposition: string): string {
  return exposition
    .split('\n\n')
    .filter((family) => !/^# HELP (process_|nodejs_)/.test(family))
    .join('\n\n')
    .split('\n')
    .map((line) =>
      line
        .replace(
          /^(baremetal_exporter_build_info\{version=")[^"]*(".*,nodejs=")[^"]*(",goversion=")[^"]*"/,
          '$1VERSION$2NODE_VERSION$3NODE_VERSION"',
        )
        .replace(
          /^(baremetal_api_request_duration_seconds_(bucket|sum)\{(?![^}]*le="\+Inf")[^}]*\}) .*$/,
          '$1 <duration>',
        ),
    )
    .join('\n');
}

let harness: Harness;
let daemon: Daemon;
let raw: string;
let openMetrics: string;

beforeAll(async () => {
  harness = await startHarness({
    key: KEY,
    simulator: { servers: 4, colocations: 1, transits: 1, attackRate: 0.3, seed: 7, now: () => NOW },
    config: {
      upstream: { concurrency: 1 },
      graphs: { types: ['port_bits'], scales: ['day'] },
      services: { colocation_ids: ['colo-1'], transit_ids: ['transit-1'] },
    },
    daemon: { now: () => NOW, initialPolls: false },
  });
  daemon = harness.daemon;
  // A scheduled cancellation (issue 32), so that baremetal_server_cancellation_scheduled is in the fixture.
  harness.sim.state.servers.get('100002')!.cancellation = 'end';
  for (const job of ['servers', 'firewall', 'graphs', 'catalog'] as const)
    expect(await accountOf(daemon, 'default').polls.run(job)).toBe('success');
  await daemon.exposition.render();
  raw = (await daemon.app.inject('/metrics')).body;
  openMetrics = (
    await daemon.app.inject({ url: '/metrics', headers: { accept: 'application/openmetrics-text; version=1.0.0' } })
  ).body;
});

afterAll(() => harness?.stop());

describe('golden exposition', () => {
  it('is byte for byte test/fixtures/exposition/daemon.txt', () => {
    const actual = normalize(raw);
    if (process.env.BAREMETAL_UPDATE_GOLDEN === '1') writeFileSync(FIXTURE, actual);
    expect(actual).toBe(readFileSync(FIXTURE, 'utf8'));
  });

  // promtool 2.42 (Debian's) lints with the 0.0.4 text parser: an OpenMetrics counter family `x` with samples
  // `x_total` reads to it as a family without samples plus an untyped `x_total` "with no help text". Those
  // lines, exactly one per counter family with samples, and the event counter's `_created` samples read the same way,
  // are its only findings allowed; Prometheus's own OpenMetrics parser is exercised by the e2e scrapes
  // (test/e2e/web-config.test.ts, test/e2e/counters.test.ts).
  const counters = () =>
    [...raw.matchAll(/^# TYPE (\S+) counter$/gm)]
      .map((m) => m[1]!)
      .filter((name) => new RegExp(`^${name}[{ ]`, 'm').test(raw))
      .map((name) => `${name} no help text`)
      .concat('baremetal_firewall_attack_events_created no help text')
      .sort();
  it.skipIf(promtool.skip).each([
    { format: 'text 0.0.4', body: () => raw, expected: () => [] },
    { format: 'OpenMetrics 1.0.0', body: () => openMetrics, expected: counters },
  ])('$format passes promtool check metrics', ({ body, expected }) => {
    const result = spawnSync(promtool.skip ? '' : promtool.path, ['check', 'metrics'], {
      input: body(),
      encoding: 'utf8',
      timeout: 30_000,
    });
    const findings = (result.stderr + result.stdout).split('\n').filter(Boolean).sort();
    expect(findings).toEqual(expected());
    expect(result.status).toBe(expected().length > 0 ? 3 : 0);
  });

  it('OpenMetrics holds the same samples, counter families named without _total, ending in # EOF', () => {
    const samples = (text: string) =>
      text
        .split('\n')
        .filter((line) => line !== '' && !line.startsWith('#'))
        .sort();
    const created = samples(openMetrics).filter((line) => line.startsWith('baremetal_firewall_attack_events_created{'));
    expect(samples(openMetrics).filter((line) => !created.includes(line))).toEqual(samples(raw));
    // One `_created` per event counter series, at the time of the rendering that first showed it (now, here).
    const totals = samples(raw).filter((line) => line.startsWith('baremetal_firewall_attack_events_total{'));
    expect(created.map((line) => line.replace(/ \S+$/, ''))).toEqual(
      totals.map((line) => line.replace('_total{', '_created{').replace(/ \S+$/, '')),
    );
    expect(new Set(created.map((line) => line.split(' ')[1]))).toEqual(new Set([String(NOW / 1000)]));
    expect(totals.length).toBeGreaterThan(0);
    expect(openMetrics).toContain('# TYPE baremetal_firewall_attack_events counter\n');
    expect(openMetrics).toContain('# TYPE baremetal_firewall_attack_events_last_hour gauge\n');
    expect(openMetrics.endsWith('\n# EOF\n')).toBe(true);
    expect(openMetrics).not.toContain('\n\n');
  });
});
