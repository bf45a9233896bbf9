/**
 * With the accounts shared among replicas, a replica's exposition carries the leader-only series of the accounts
 * it leads only (exposition-cache.ts `accountSeries`): prom-client metrics and families rendered from state alike, series
 * without an account always, and a change of the accounts led shows at the next rendering though no metric
 * changed (the cached bytes are keyed by the accounts too).
 */
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { createMetrics, leaderOnlyNames } from '../../../src/metrics/definitions.js';
import { ExpositionCache } from '../../../src/metrics/exposition-cache.js';
import { exposeMetrics } from '../../../src/daemon/parts.js';
import type { StateStore } from '../../../src/store/store.js';
import { gunzipSync } from 'node:zlib';
import { bindStateFamilies } from '../../../src/collectors/families.js';
import { collectFirewallHistory } from '../../../src/collectors/firewall.js';
import { stateAccount } from '../../helpers/metrics.js';

const DEDICATED = { serviceType: 'dedicated' as const, serviceId: '1' };
const LIMITS = { maxIpsPerService: 1024, ipRetentionMs: 24 * 3600_000 };

describe('exposition per account', () => {
  it.each([
    { name: 'every account (one leader)', led: undefined, accounts: ['a', 'b'] },
    { name: 'account a only', led: ['a'], accounts: ['a'] },
    { name: 'account b only', led: ['b'], accounts: ['b'] },
    { name: 'no account', led: [], accounts: [] },
  ])('$name', async ({ led, accounts }) => {
    const { text } = await render(() => (led ? new Set(led) : undefined));
    expect(accountsOf(text, 'baremetal_servers')).toEqual(accounts);
    expect(accountsOf(text, 'baremetal_firewall_attack_events_last_hour')).toEqual(accounts);
    expect(accountsOf(text, 'baremetal_poll_duration_seconds')).toEqual(accounts);
    expect(accountsOf(text, 'baremetal_api_request_duration_seconds_bucket')).toEqual(accounts);
    // not leader-only: every account's series, whoever leads
    expect(accountsOf(text, 'baremetal_journal_up')).toEqual([]);
    expect(text).toMatch(/^baremetal_journal_up \d$/m);
  });

  it('renders again when the accounts led change, though no metric changed', async () => {
    let led = new Set(['a']);
    const { cache } = await render(() => led);
    led = new Set(['b']);
    const text = (await cache.render()).bytes('text').toString();
    expect(accountsOf(text, 'baremetal_servers')).toEqual(['b']);
    expect(accountsOf(text, 'baremetal_firewall_attack_events_last_hour')).toEqual(['b']);
  });
});

describe('a replica whose leases ran out while it was frozen', () => {
  it('answers a scrape with what it leads now, not the rendering cached before (plain and gzipped)', async () => {
    let led = new Set(['a', 'b']);
    const { cache } = await render(() => led);
    expect(accountsOf((await cache.get()).bytes('text').toString(), 'baremetal_servers')).toEqual(['a', 'b']);
    await cache.gzipped('text');
    // No timer ran (the process was frozen): the leases' trust ran out, read synchronously at the scrape.
    led = new Set(['b']);
    expect(accountsOf((await cache.get()).bytes('text').toString(), 'baremetal_servers')).toEqual(['b']);
    led = new Set();
    const zipped = gunzipSync(await cache.gzipped('text')).toString();
    expect(accountsOf(zipped, 'baremetal_servers')).toEqual([]);
  });

  it('a scrape during a rendering started after the wake waits for it, not the rendering before the freeze', async () => {
    let led = new Set(['a', 'b']);
    const { cache } = await render(() => led);
    led = new Set(['b']);
    // The wake's re-render is in progress (started, not completed) when the scrape arrives.
    const inFlight = cache.render();
    const scraped = cache.get();
    const zipped = cache.gzipped('text');
    expect(accountsOf((await scraped).bytes('text').toString(), 'baremetal_servers')).toEqual(['b']);
    expect(accountsOf(gunzipSync(await zipped).toString(), 'baremetal_servers')).toEqual(['b']);
    expect(await scraped).toBe(await inFlight);
  });

  it('a scrape during a rendering started before the accounts changed gets one rendered after', async () => {
    let led = new Set(['a', 'b']);
    const { cache } = await render(() => led);
    await cache.gzipped('text');
    const inFlight = cache.render();
    led = new Set(['a']);
    const scraped = cache.get();
    const zipped = cache.gzipped('text');
    expect(accountsOf((await inFlight).bytes('text').toString(), 'baremetal_servers')).toEqual(['a', 'b']);
    expect(accountsOf((await scraped).bytes('text').toString(), 'baremetal_servers')).toEqual(['a']);
    expect(accountsOf(gunzipSync(await zipped).toString(), 'baremetal_servers')).toEqual(['a']);
  });

  it('baremetal_leader{account} follows the same reading at each rendering (exposeMetrics)', async () => {
    const registry = new Registry();
    const metrics = createMetrics(registry, { defaultMetrics: false, version: '9.9.9' });
    let led = new Set(['a']);
    const store = { healthy: () => true } as unknown as StateStore;
    const cache = exposeMetrics(registry, metrics, {
      now: () => 1_700_000_000_000,
      leading: () => led.size > 0,
      led: () => led,
      store,
      accounts: ['a', 'b'],
    });
    const leaders = async () =>
      [
        ...(await cache.get())
          .bytes('text')
          .toString()
          .matchAll(/^baremetal_leader\{account="(\w+)"\} 1$/gm),
      ].map((m) => m[1]);
    expect(await leaders()).toEqual(['a']);
    // the gauge was last set to 1 by the role (a transition that has not run yet after a freeze)
    metrics.leader.set({ account: 'a' }, 1);
    led = new Set(['b']);
    expect(await leaders()).toEqual(['b']);
  });
});

async function render(led: () => ReadonlySet<string> | undefined) {
  const registry = new Registry();
  const metrics = createMetrics(registry, { defaultMetrics: false, version: '9.9.9' });
  const states = ['a', 'b'].map((account) => stateAccount(account, ['1']));
  bindStateFamilies(metrics, () => states);
  for (const { name: account, state } of states) {
    metrics.servers.set({ account }, 3);
    const event = { id: 'e1', ip: '192.0.2.1', raw: '', fields: {} };
    collectFirewallHistory(state.firewallState, { account, metrics }, DEDICATED, [event], { limits: LIMITS, now: 0 });
    metrics.pollDuration.set({ account, poll: 'servers' }, 0.2);
    metrics.apiRequestDuration.observe({ account, operation: 'list_servers' }, 0.2);
  }
  const cache = new ExpositionCache({
    registry,
    now: () => 1_700_000_000_000,
    // a histogram too (none is leader-only): its buckets carry the account in their shared labels
    accountSeries: { names: new Set([...leaderOnlyNames(metrics), 'baremetal_api_request_duration_seconds']), led },
  });
  return { cache, text: (await cache.render()).bytes('text').toString() };
}

/** The accounts of the samples of `name`, distinct, in order. */
function accountsOf(text: string, name: string): string[] {
  const found = [...text.matchAll(new RegExp(`^${name}\\{[^}]*account="([^"]*)"`, 'gm'))].map((m) => m[1]!);
  return [...new Set(found)];
}
