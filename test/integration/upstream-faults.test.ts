/**
 * The fault matrix, upstream side: the daemon against the simulator with one misbehaviour each — a huge
 * reply, a throttling API, an API that echoes the key — and what must (not) happen. Rows of the other
 * sides (polls, HTTP, remediation) live in the neighbouring *-faults test files.
 */
import { describe, expect, it } from 'vitest';
import type { Daemon } from '../../src/daemon/start.js';
import { ECHO_SPELLINGS, type EchoSpelling, type Faults } from '../../src/simulator/faults.js';
import { secretForms } from '../../src/scrub.js';
import { accountOf, startHarness } from '../helpers/daemon.js';
import { seriesValue } from '../helpers/metrics.js';

/** A key with "/" and "+": its JSON-escaped (PHP `\/`) and URL-encoded spellings differ from the plain one. */
const KEY = 'integration/key+5f1c2d9e/0a';
const TOKEN = 'upstream-faults-token-0123456789';
const HISTORY = '/api/v1/dedicated/firewall';

async function setup(faults: Faults = {}) {
  const h = await startHarness({
    key: KEY,
    token: TOKEN,
    remediationAuth: true,
    simulator: { servers: 4, colocations: 0, transits: 0, attackRate: 0.25, seed: 5, faults },
    config: { upstream: { concurrency: 2, retries: 2, timeout: '5s' }, remediation: { dry_run: false } },
    daemon: { initialPolls: false },
  });
  return { daemon: h.daemon, sim: h.sim, log: h.log };
}

/**
 * Whether `text` holds the key in any spelling: the plain ones (secretForms), and the key found again after
 * undoing JSON `\u` escapes, percent-encoding, line breaks and case.
 */
function holdsKey(text: string): boolean {
  if (secretForms(KEY).some((form) => text.includes(form))) return true;
  const undone = text
    .replace(/\\u([0-9a-f]{4})/gi, (_m, code: string) => String.fromCharCode(Number.parseInt(code, 16)))
    .replace(/%([0-9a-f]{2})/gi, (_m, code: string) => String.fromCharCode(Number.parseInt(code, 16)))
    .replace(/\\[nr]|[\r\n]/g, '')
    .replaceAll('\\/', '/')
    .toLowerCase();
  return undone.includes(KEY.toLowerCase());
}

/** An `echo_key` fault on `path`, the key spelled `spelling`. */
const echo = (what: string, path: string, spelling: EchoSpelling) => ({
  name: `${what} echoing the key (${spelling})`,
  faults: { mode: 'echo_key', echoSpelling: spelling, paths: [path] } satisfies Faults,
});

const requests = (d: Daemon, operation: string, outcome: string) =>
  seriesValue(d.registry, 'baremetal_api_requests_total', { operation, outcome });

describe('upstream faults', () => {
  it('refuses a 400 MB server list at the size cap: the poll fails with too_large, memory stays bounded, /metrics answers', async () => {
    const { daemon } = await setup({ mode: 'huge', hugeBytes: 400 * 1024 * 1024, paths: ['/api/v1/dedicated'] });
    globalThis.gc?.();
    const before = process.memoryUsage().rss;
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, process.memoryUsage().rss)), 5);
    expect(await accountOf(daemon, 'default').polls.run('servers')).toBe('failure');
    clearInterval(sampler);
    expect(await requests(daemon, 'list_servers', 'too_large')).toBe(1);
    // Not retried: a reply that is too large will be too large again.
    expect(await requests(daemon, 'list_servers', 'success')).toBe(0);
    // Buffered whole, the reply alone would add 400 MB (and twice that as a string).
    expect((peak - before) / 2 ** 20).toBeLessThan(256);
    const res = await daemon.app.inject({ method: 'GET', url: '/metrics' });
    expect(res.statusCode).toBe(200);
  });

  it.each([
    {
      name: '429 with Retry-After in seconds',
      faults: { mode: 'rate_limited', retryAfter: '1', rateLimitStatus: 429 } satisfies Faults,
    },
    {
      name: '503 with Retry-After as an HTTP date',
      faults: {
        mode: 'rate_limited',
        retryAfter: new Date(Date.now() + 1000).toUTCString(),
        rateLimitStatus: 503,
      } satisfies Faults,
    },
  ])('pauses every request after $name instead of hammering the API', async ({ faults }) => {
    const { daemon, sim } = await setup();
    expect(await accountOf(daemon, 'default').polls.run('servers')).toBe('success');
    sim.setFaults({ ...faults, modeCount: 1, paths: [HISTORY] });
    expect(await accountOf(daemon, 'default').polls.run('firewall')).toBe('success');
    const calls = sim.callsTo(HISTORY);
    const limited = calls[0]!;
    // Every later request of the run — the retry of the throttled one included — waited out the pause; only
    // the one the second worker had already sent (concurrency 2) may have arrived meanwhile.
    const during = calls.slice(1).filter((c) => c.at < limited.at + 1000 - 5);
    expect(during.length).toBeLessThanOrEqual(1);
    expect(calls.length).toBe(4 + 1);
    expect(await requests(daemon, 'firewall_history_dedicated', 'rate_limited')).toBe(1);
  });

  it.each([
    ...(Object.keys(ECHO_SPELLINGS) as EchoSpelling[]).map((spelling) =>
      echo('a firewall history error', HISTORY, spelling),
    ),
    ...(['php', 'unicode'] as const).map((spelling) =>
      echo('a firewall-state action error', '/api/v1/dedicated/firewall/state', spelling),
    ),
  ])(
    'keeps the key out of logs, metrics, the journal, the actions API, /readyz and the status page after $name',
    async ({ faults }) => {
      const { daemon, sim, log } = await setup();
      expect(await accountOf(daemon, 'default').polls.run('servers')).toBe('success');
      sim.setFaults(faults);
      await accountOf(daemon, 'default').polls.run('firewall');
      const [server] = sim.state.servers.values();
      const action = await daemon.app.inject({
        method: 'POST',
        url: '/api/v1/actions/firewall-state',
        headers: { authorization: `Bearer ${TOKEN}` },
        payload: { server_id: server!.serverId, ip: server!.ips[0], state: '1' },
      });
      expect(action.statusCode).toBe(200);
      await daemon.exposition.render();
      const texts = [
        log.lines.join('\n'),
        action.body,
        (await daemon.app.inject({ method: 'GET', url: '/metrics' })).body,
        (
          await daemon.app.inject({
            method: 'GET',
            url: '/api/v1/actions',
            headers: { authorization: `Bearer ${TOKEN}` },
          })
        ).body,
        (await daemon.app.inject({ method: 'GET', url: '/' })).body,
        (await daemon.app.inject({ method: 'GET', url: '/readyz' })).body,
        JSON.stringify(daemon.store.list({ limit: 100 })),
      ].join('\n');
      expect(texts).toContain('[REDACTED]');
      expect(holdsKey(texts)).toBe(false);
    },
  );
});
