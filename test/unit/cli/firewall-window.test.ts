/**
 * The 2-minute rule against the simulator with an injected clock: the refusal says when the next change is
 * possible; --wait sleeps (injected: it advances the clock) exactly until then and retries once.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { CliExit } from '../../../src/cli/api/exit.js';
import { withFirewallWindow } from '../../../src/cli/api/firewall-window.js';
import { startSimulator, type Simulator } from '../../../src/simulator/server.js';
import { UpstreamClient } from '../../../src/upstream/client.js';
import { setFirewallState } from '../../../src/upstream/firewall.js';

const T0 = Date.parse('2026-03-01T10:00:00Z');
let clock = T0;
let sim: Simulator;
let client: UpstreamClient;
beforeAll(async () => {
  sim = await startSimulator({ apiKey: 'k', servers: 1, now: () => clock });
  client = new UpstreamClient({ baseUrl: sim.url, apiKey: 'k', timeoutMs: 5000, concurrency: 1, retries: 0 });
});
afterAll(async () => {
  await client.close();
  await sim.close();
});
beforeEach(() => {
  clock += 10 * 60_000;
  sim.calls.length = 0;
});

const send = (state: '0' | '1') => () => setFirewallState(client, { serverId: '100001', ip: '198.18.0.1', state });

describe('withFirewallWindow', () => {
  it.each([
    { name: 'last change unknown: an upper bound', lastChangeAgo: undefined, waitMs: 120_000, when: 'at the latest' },
    { name: 'last change from the journal: exact', lastChangeAgo: 30_000, waitMs: 90_000, when: '' },
  ])('without --wait, $name', async ({ lastChangeAgo, waitMs, when }) => {
    await send('1')();
    clock += lastChangeAgo ?? 30_000;
    const error = await withFirewallWindow(send('0'), {
      wait: false,
      now: () => clock,
      sleep: async () => expect.fail('no sleep'),
      lastChange: lastChangeAgo === undefined ? undefined : clock - lastChangeAgo,
      notify: () => undefined,
    }).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(CliExit);
    expect((error as CliExit).exitCode).toBe(1);
    expect((error as CliExit).message).toContain(
      `the next change is possible at ${new Date(clock + waitMs).toISOString()}${when ? ` ${when}` : ''} (in ${waitMs / 1000}s); --wait waits and retries once`,
    );
    expect(sim.calls).toHaveLength(2);
  });

  it('with --wait: sleeps until the window has passed, retries once, and succeeds', async () => {
    await send('1')();
    const changedAt = clock;
    clock += 45_000;
    const slept: number[] = [];
    const notes: string[] = [];
    const result = await withFirewallWindow(send('0'), {
      wait: true,
      now: () => clock,
      sleep: async (ms) => {
        slept.push(ms);
        clock += ms;
      },
      lastChange: changedAt,
      notify: (l) => notes.push(l),
    });
    expect(slept).toEqual([75_000]);
    expect(notes[0]).toContain(`waiting until ${new Date(changedAt + 120_000).toISOString()}, then retrying once`);
    expect(result.message).toContain('has been updated');
    expect(sim.state.firewall.get('198.18.0.1')?.state).toBe('0');
    expect(sim.calls.map((c) => c.params.state)).toEqual(['1', '0', '0']);
  });

  it('with --wait: a second refusal is final (one retry only)', async () => {
    await send('1')();
    const error = await withFirewallWindow(send('0'), {
      wait: true,
      now: () => clock,
      sleep: async () => undefined,
      notify: () => undefined,
    }).catch((e: unknown) => e);
    expect((error as Error).message).toMatch(/already updated in the last 2 minutes\.$/);
    expect(sim.calls).toHaveLength(3);
  });

  it('other errors pass through untouched', async () => {
    const error = await withFirewallWindow(
      () => setFirewallState(client, { serverId: '999', ip: '198.18.0.1', state: '1' }),
      { wait: true, now: () => clock, sleep: async () => expect.fail('no sleep'), notify: () => undefined },
    ).catch((e: unknown) => e);
    expect((error as Error).message).toContain('404 API error: Server not found.');
  });
});
