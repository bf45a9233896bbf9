/**
 * A reload switching a collector off while a run of its poll is in progress: the run is cancelled and waited
 * for before what the collector read is dropped, so that its replies never write into the cleared state
 * (a MockAgent upstream whose firewall reply is held until released).
 */
import { MockAgent } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { AccountState } from '../../../src/collectors/account-state.js';
import { parseConfigText } from '../../../src/config/load.js';
import { GraphStore } from '../../../src/graphs/store.js';
import { PollJobs } from '../../../src/scheduler/jobs.js';
import { UpstreamClient } from '../../../src/upstream/client.js';
import { captureLogger } from '../../helpers/logger.js';
import { freshMetrics } from '../../helpers/metrics.js';
import { tempDir } from '../../helpers/tmp.js';

const BASE = 'https://api.provider.test';
let agent: MockAgent | undefined;
afterEach(async () => {
  await agent?.close();
});

describe('a collector switched off by a reload while its poll runs', () => {
  it('cancels the firewall run in progress: its held reply writes nothing into the cleared state', async () => {
    agent = new MockAgent();
    agent.disableNetConnect();
    let sent!: () => void;
    const requestSent = new Promise<void>((resolve) => {
      sent = resolve;
    });
    let release!: () => void;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const now = 1_800_000_000_000;
    agent
      .get(BASE)
      .intercept({ path: '/api/v1/colocation/firewall', method: 'POST' })
      .reply(async () => {
        sent();
        await released;
        return {
          statusCode: 200,
          data: { success: true, firewall: [{ id: 'e1', ip: '192.0.2.1', raw: '192.0.2.1 udp flood' }] },
        };
      })
      .persist();
    const parsed = parseConfigText(
      `upstream:\n  base_url: ${BASE}\nservices:\n  colocation_ids: [c1]\nstate_dir: ${tempDir()}\n`,
      { BAREMETAL_API_KEY: 'sk-test-0123456789abcdef' },
    );
    const account = parsed.accounts[0]!;
    const config = { ...parsed, services: account.services, scope: account.scope };
    const state = new AccountState(config, () => now);
    const { metrics } = freshMetrics();
    const { logger } = captureLogger();
    const client = new UpstreamClient({
      baseUrl: BASE,
      apiKey: 'sk-test-0123456789abcdef',
      timeoutMs: 60_000,
      concurrency: 2,
      retries: 0,
      dispatcher: agent,
    });
    const polls = new PollJobs({
      account: account.name,
      client,
      metrics,
      logger,
      graphStore: new GraphStore(parsed.stateDir, account.name),
      config,
      state,
      now: () => now,
    });
    const run = polls.run('firewall');
    await requestSent;
    // The reload path (daemon/reload.ts): the switch is assigned in place, then applied at once.
    Object.assign(config.collectors, { firewall: false });
    const dropped = polls.dropSwitchedOff();
    release();
    await dropped;
    await run;
    expect(state.firewallState.services.size).toBe(0);
    expect(state.attacks.services.size).toBe(0);
    expect(state.oldestReadAgeSeconds).toBeUndefined();
    // Switched on again: nothing read before the switch is there to be rendered.
    Object.assign(config.collectors, { firewall: true });
    expect(state.firewallState.services.size).toBe(0);
    expect(state.attacks.services.size).toBe(0);
    // c1 waits since now (not read since the switch), not since the run before it.
    expect(state.oldestRead()).toEqual({ ref: { serviceType: 'colocation', serviceId: 'c1' }, ageMs: 0, read: false });
  });
});
