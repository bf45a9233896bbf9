import { describe, expect, it } from 'vitest';
import type { JobName } from '../../../src/config/schema.js';
import { createApiObserver } from '../../../src/metrics/api-observer.js';
import { ExpositionCache } from '../../../src/metrics/exposition-cache.js';
import type { RunOutcome } from '../../../src/metrics/definitions.js';
import { freshMetrics, seriesValue } from '../../helpers/metrics.js';

/** A request with its outcome, or the end of a poll run. */
type Step = { request: string; outcome: string } | { poll: JobName; outcome: RunOutcome };
const ok = (request: string): Step => ({ request, outcome: 'success' });
const bad = (request: string, outcome = 'connection_error'): Step => ({ request, outcome });
const polled = (poll: JobName, outcome: RunOutcome): Step => ({ poll, outcome });

describe('baremetal_api_up', () => {
  it.each([
    { name: 'nothing polled yet → 0', steps: [], up: 0 },
    { name: 'server list ok → 1', steps: [ok('list_servers'), polled('servers', 'success')], up: 1 },
    {
      name: 'server list failed, retry failed → 0',
      steps: [bad('list_servers'), bad('list_servers', 'http_error'), polled('servers', 'failure')],
      up: 0,
    },
    {
      name: 'server list failed once, retry ok → 1',
      steps: [bad('list_servers'), ok('list_servers'), polled('servers', 'success')],
      up: 1,
    },
    {
      name: 'server list failing while every other call succeeds → 0',
      steps: [
        bad('list_servers'),
        polled('servers', 'failure'),
        ok('graphs'),
        ok('graphs'),
        polled('graphs', 'success'),
        ok('firewall_history_dedicated'),
        polled('firewall', 'success'),
      ],
      up: 0,
    },
    {
      name: 'one failing server among many → 1',
      steps: [
        ok('list_servers'),
        polled('servers', 'success'),
        bad('firewall_history_dedicated', 'invalid_reply'),
        ok('firewall_history_dedicated'),
        ok('firewall_history_colocation'),
        polled('firewall', 'partial'),
      ],
      up: 1,
    },
    {
      name: 'every request since the server list failed → 0 when the run ends',
      steps: [
        ok('list_servers'),
        polled('servers', 'success'),
        bad('firewall_history_dedicated'),
        bad('firewall_history_colocation', 'timeout'),
        polled('firewall', 'failure'),
      ],
      up: 0,
    },
    {
      name: 'no verdict before a run ends: failing requests alone leave the last value',
      steps: [ok('list_servers'), polled('servers', 'success'), bad('firewall_history_dedicated')],
      up: 1,
    },
    {
      name: 'a new successful server list starts a new cycle → 1',
      steps: [
        ok('list_servers'),
        polled('servers', 'success'),
        bad('graphs'),
        polled('graphs', 'failure'),
        ok('list_servers'),
        polled('servers', 'success'),
      ],
      up: 1,
    },
    {
      name: 'cancelled requests (deadline, shutdown) do not count',
      steps: [
        ok('list_servers'),
        polled('servers', 'success'),
        bad('graphs', 'cancelled'),
        ok('graphs'),
        bad('graphs', 'cancelled'),
        polled('graphs', 'partial'),
      ],
      up: 1,
    },
    {
      name: 'a run with only cancelled requests says nothing → stays 1',
      steps: [
        ok('list_servers'),
        polled('servers', 'success'),
        bad('graphs', 'cancelled'),
        polled('graphs', 'failure'),
      ],
      up: 1,
    },
    {
      name: 'a skipped tick changes nothing',
      steps: [bad('list_servers'), polled('servers', 'failure'), polled('servers', 'skipped')],
      up: 0,
    },
  ])('$name', async ({ steps, up }) => {
    const { registry, metrics } = freshMetrics();
    let changes = 0;
    const observer = createApiObserver(metrics, () => changes++);
    for (const step of steps) {
      if ('request' in step)
        observer.onRequest({ operation: step.request, outcome: step.outcome, durationSeconds: 0.01 });
      else observer.onPollFinished(step.poll, step.outcome);
    }
    expect(await seriesValue(registry, 'baremetal_api_up')).toBe(up);
    expect(changes).toBeGreaterThanOrEqual(steps.length > 0 ? 1 : 0);
  });

  it('counts every request by operation and outcome', async () => {
    const { registry, metrics } = freshMetrics();
    const observer = createApiObserver(metrics, () => undefined);
    for (const outcome of ['success', 'success', 'timeout'])
      observer.onRequest({ operation: 'graphs', outcome, durationSeconds: 0.2 });
    expect(
      await seriesValue(registry, 'baremetal_api_requests_total', { operation: 'graphs', outcome: 'success' }),
    ).toBe(2);
    expect(
      await seriesValue(registry, 'baremetal_api_requests_total', { operation: 'graphs', outcome: 'timeout' }),
    ).toBe(1);
  });
});

describe('baremetal_api_requests_total and _duration_seconds, held in place', () => {
  const events = [
    { operation: 'graphs', outcome: 'success', durationSeconds: 0.004 },
    { operation: 'graphs', outcome: 'success', durationSeconds: 0.2 },
    { operation: 'graphs', outcome: 'timeout', durationSeconds: 31 },
    { operation: 'list_servers', outcome: 'success', durationSeconds: 0.025 },
    { operation: 'graphs', outcome: 'success', durationSeconds: 2.5 },
  ];
  /** The two families' exposition of `registry`. */
  const families = async (registry: import('prom-client').Registry) =>
    (await registry.metrics()).split('\n').filter((line) => line.includes('baremetal_api_request'));

  it.each([
    { name: 'events only', resetAfter: undefined, successes: 3 },
    { name: 'registry reset after the third event', resetAfter: 3, successes: 1 },
  ])('writes what prom-client’s own calls write: $name', async ({ resetAfter, successes }) => {
    const held = freshMetrics();
    const plain = freshMetrics();
    const observer = createApiObserver(held.metrics, () => undefined);
    for (const [i, event] of events.entries()) {
      if (i === resetAfter) for (const m of [held, plain]) m.registry.resetMetrics();
      observer.onRequest(event);
      plain.metrics.apiRequests.inc({ operation: event.operation, outcome: event.outcome });
      plain.metrics.apiRequestDuration.observe({ operation: event.operation }, event.durationSeconds);
    }
    expect(await families(held.registry)).toEqual(await families(plain.registry));
    expect((await families(held.registry)).join('\n')).toContain(
      `baremetal_api_requests_total{account="default",operation="graphs",outcome="success"} ${successes}`,
    );
  });

  it('each request shows in the next rendering of the cached exposition', async () => {
    const { registry, metrics } = freshMetrics();
    const cache = new ExpositionCache({ registry });
    const observer = createApiObserver(metrics, () => undefined);
    const line = 'baremetal_api_requests_total{account="default",operation="graphs",outcome="success"}';
    for (const expected of [1, 2, 3]) {
      observer.onRequest({ operation: 'graphs', outcome: 'success', durationSeconds: 0.1 });
      expect((await cache.render()).bytes('text').toString()).toContain(`${line} ${expected}\n`);
    }
  });
});
