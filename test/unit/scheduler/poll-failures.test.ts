/**
 * A poll run that fails or is cut at its deadline says why (issue 38): its log line counts what its requests
 * failed with, read from the upstream client's failures per run signal (a MockAgent upstream).
 */
import { MockAgent } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { PollJob, formatFailures } from '../../../src/scheduler/poll-job.js';
import { UpstreamClient } from '../../../src/upstream/client.js';
import { listServers } from '../../../src/upstream/dedicated.js';
import { captureLogger } from '../../helpers/logger.js';
import { freshMetrics, seriesValue } from '../../helpers/metrics.js';

const BASE = 'https://api.provider.test';
let agent: MockAgent | undefined;
afterEach(async () => {
  await agent?.close();
});

describe('formatFailures', () => {
  it.each([
    { name: 'none', failures: new Map<string, number>(), text: '' },
    { name: 'one code', failures: new Map([['UND_ERR_INVALID_ARG', 16]]), text: 'UND_ERR_INVALID_ARG ×16' },
    {
      name: 'the most frequent first, then by name',
      failures: new Map([
        ['BM_ERR_TIMEOUT', 2],
        ['ECONNREFUSED', 5],
        ['BM_ERR_API', 2],
      ]),
      text: 'ECONNREFUSED ×5, BM_ERR_API ×2, BM_ERR_TIMEOUT ×2',
    },
  ])('$name', ({ failures, text }) => {
    expect(formatFailures(failures)).toBe(text);
  });
});

describe('a poll run that cannot reach the provider', () => {
  it('logs and counts what its requests failed with, when it fails and when it is cut at its deadline', async () => {
    agent = new MockAgent();
    agent.disableNetConnect();
    const refused = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    agent.get(BASE).intercept({ path: '/api/v1/dedicated', method: 'POST' }).replyWithError(refused).persist();
    const { registry, metrics } = freshMetrics();
    const outcomes: string[] = [];
    const client = new UpstreamClient({
      baseUrl: BASE,
      apiKey: 'sk-test-0123456789abcdef',
      timeoutMs: 1000,
      concurrency: 2,
      retries: 1,
      retryMinDelayMs: 1,
      dispatcher: agent,
      onRequest: (e) => outcomes.push(e.outcome),
    });
    const { logger, lines } = captureLogger();
    const job = (work: (signal: AbortSignal) => Promise<{ items: number; failed: number }>, deadlineMs?: number) =>
      new PollJob({
        name: 'servers',
        account: 'default',
        metrics,
        logger,
        work,
        ...(deadlineMs ? { deadlineMs } : {}),
        failuresOf: (signal) => client.failuresOf(signal),
      });
    // One item that fails: two attempts (one retry), both refused.
    const failing = job(async (signal) => {
      await listServers(client, signal);
      return { items: 1, failed: 0 };
    });
    expect(await failing.run()).toBe('failure');
    expect(JSON.parse(lines.find((l) => l.includes('poll failed'))!)).toMatchObject({ poll: 'servers' });
    expect(JSON.parse(lines.findLast((l) => l.includes('"poll":"servers"') && l.includes('"outcome"'))!)).toMatchObject(
      {
        outcome: 'failure',
        failures: 'ECONNREFUSED ×2',
      },
    );
    // Items that keep failing until the deadline cuts the run.
    const cut = job(async (signal) => {
      let failed = 0;
      while (!signal.aborted) await listServers(client, signal).catch(() => failed++);
      return { items: failed + 1, failed, cancelled: 1 };
    }, 100);
    expect(await cut.run()).toBe('failure');
    const line = lines.find((l) => l.includes('poll run cancelled'))!;
    expect(line).toMatch(/its requests failed with ECONNREFUSED ×\d+/);
    expect(outcomes.every((o) => o === 'connection_error' || o === 'cancelled')).toBe(true);
    expect(await seriesValue(registry, 'baremetal_poll_runs_total', { poll: 'servers', outcome: 'failure' })).toBe(2);
    await client.close();
  });
});
