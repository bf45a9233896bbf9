/**
 * A poll's requests are fenced by the account's lease (`database.share_accounts`): before each attempt leaves,
 * the gate asks whether this replica still leads the account; once it does not, nothing more is sent (counted at
 * a real simulator on loopback), not even a request queued while it still led, and the runs are cancelled.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { each } from '../../../src/polls/poll.js';
import { NOT_LEADING, leaseGated } from '../../../src/scheduler/lease-gate.js';
import { PollJob } from '../../../src/scheduler/poll-job.js';
import { startSimulator, type Simulator } from '../../../src/simulator/server.js';
import { UpstreamClient } from '../../../src/upstream/client.js';
import { getGraph, listServers } from '../../../src/upstream/dedicated.js';
import { captureLogger } from '../../helpers/logger.js';
import { freshMetrics } from '../../helpers/metrics.js';
import { eventually } from '../../helpers/processes.js';

const KEY = 'lease-gate-key-5c0ffee';
let sim: Simulator | undefined;
let client: UpstreamClient | undefined;
afterEach(async () => {
  await client?.close();
  await sim?.close();
});

async function upstream(latencyMs = 0) {
  sim = await startSimulator({ apiKey: KEY, servers: 2, colocations: 0, transits: 0, attackRate: 0 });
  if (latencyMs > 0) sim.setFaults({ latencyMs });
  client = new UpstreamClient({ baseUrl: sim.url, apiKey: KEY, timeoutMs: 5_000, concurrency: 1, retries: 0 });
  return { sim, client };
}

describe('leaseGated', () => {
  it('sends while the replica leads; once it does not, sends nothing and says why', async () => {
    const { sim, client } = await upstream();
    let leading = true;
    let lost = 0;
    const gated = leaseGated(
      client,
      () => leading,
      () => lost++,
    );
    await expect(listServers(gated)).resolves.toBeDefined();
    leading = false;
    const refused = await listServers(gated).catch((error: unknown) => error);
    expect(refused).toMatchObject({ code: 'BM_ERR_CANCELLED' });
    expect((refused as Error).message).toContain(NOT_LEADING);
    expect(lost).toBe(1);
    expect(sim.calls).toHaveLength(1);
    // the client itself (remediation's) is not gated
    await expect(listServers(client)).resolves.toBeDefined();
    expect(sim.calls).toHaveLength(2);
  });

  it('gates every way a request leaves: a graph read from its bytes too', async () => {
    const { sim, client } = await upstream();
    let leading = true;
    const gated = leaseGated(
      client,
      () => leading,
      () => undefined,
    );
    const [server] = (await listServers(client)).servers;
    const before = sim.calls.length;
    await expect(getGraph(gated, server!.serverId, 'port_bits', 'day')).resolves.toBeInstanceOf(Buffer);
    leading = false;
    expect(await getGraph(gated, server!.serverId, 'port_bits', 'day').catch((error: unknown) => error)).toMatchObject({
      code: 'BM_ERR_CANCELLED',
    });
    expect(sim.calls.length - before).toBe(1);
  });

  it('refuses a request queued while the replica led once the lease is no longer trusted as its turn comes', async () => {
    const { sim, client } = await upstream(300);
    let leading = true;
    const gated = leaseGated(
      client,
      () => leading,
      () => undefined,
    );
    // concurrency 1: the second waits for the first one's slot
    const first = listServers(gated);
    const second = listServers(gated).catch((error: unknown) => error);
    await eventually('the first request at the simulator', async () => (sim.calls.length === 1 ? true : undefined));
    leading = false;
    await expect(first).resolves.toBeDefined();
    expect(await second).toMatchObject({ code: 'BM_ERR_CANCELLED' });
    expect(sim.calls).toHaveLength(1);
  });

  it("reads the client's own members through (limits, budget, failures per run)", async () => {
    const { client } = await upstream();
    const gated = leaseGated(
      client,
      () => true,
      () => undefined,
    );
    expect(gated.concurrency).toBe(1);
    expect(gated.budget).toBe(client.budget);
    expect(gated.apiKey).toBe(client.apiKey);
    expect(gated.failuresOf(new AbortController().signal).size).toBe(0);
  });

  it('cancels the poll run that met the lost lease: its items are counted cancelled, its log says why', async () => {
    const { sim, client } = await upstream();
    const { metrics } = freshMetrics();
    const { logger, lines } = captureLogger();
    let leading = true;
    let job: PollJob | undefined;
    const gated = leaseGated(
      client,
      () => leading,
      () => void job?.cancel('lease'),
    );
    job = new PollJob({
      name: 'firewall',
      account: 'default',
      metrics,
      logger,
      work: (signal) =>
        each(
          [1, 2, 3, 4],
          1,
          signal,
          async (item) => {
            await listServers(gated, signal);
            if (item === 2) leading = false;
          },
          () => undefined,
        ),
    });
    expect(await job.run()).toBe('partial');
    expect(job.last).toMatchObject({ outcome: 'partial', cancelled: 2 });
    expect(sim.calls).toHaveLength(2);
    expect(lines.join('\n')).toContain('poll run cancelled: this replica no longer leads the account');
  });
});
