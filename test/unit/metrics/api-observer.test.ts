import { describe, expect, it } from 'vitest';
import type { JobName } from '../../../src/config/schema.js';
import { createApiObserver } from '../../../src/metrics/api-observer.js';
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
    const observer = createApiObserver({ account: 'default', metrics }, () => changes++);
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
    const observer = createApiObserver({ account: 'default', metrics }, () => undefined);
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
