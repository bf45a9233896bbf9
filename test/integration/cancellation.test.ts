/**
 * A server's scheduled cancellation (issue 32) from `baremetal-exporter api cancellation …` to the exposition
 * and discovery: the built CLI schedules and withdraws it at the simulator, and the next servers poll shows it
 * (`baremetal_server_cancellation_scheduled`, `__meta_baremetal_cancellation`) or clears it.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { accountOf, HARNESS_KEY, startHarness } from '../helpers/daemon.js';

const NOW = Date.UTC(2026, 10, 25, 12, 0, 0);
const METRIC = 'baremetal_server_cancellation_scheduled';

let h: Awaited<ReturnType<typeof startHarness>>;
beforeAll(async () => {
  h = await startHarness({
    simulator: { servers: 3, colocations: 0, transits: 0, attackRate: 0, seed: 3, now: () => NOW },
    daemon: { now: () => NOW, initialPolls: false },
  });
});

/** `api cancellation SERVER TYPE` against the harness's simulator; its exit code. */
async function cancellation(serverId: string, type: string): Promise<number | null> {
  const args = ['api', 'cancellation', serverId, type, ...(type === 'delete' ? [] : ['--yes'])];
  const result = await runCli(args, { BAREMETAL_API_URL: h.sim.url, BAREMETAL_API_KEY: HARNESS_KEY });
  return result.code;
}

/** After a servers poll: the metric's samples and each discovery target's cancellation label. */
async function afterServersPoll() {
  expect(await accountOf(h.daemon, 'default').polls.run('servers')).toBe('success');
  await h.daemon.exposition.render();
  const samples = (await h.daemon.app.inject('/metrics')).body.split('\n').filter((l) => l.startsWith(`${METRIC}{`));
  const groups = (await h.daemon.app.inject('/api/v1/discovery')).json() as Array<{ labels: Record<string, string> }>;
  const labels = Object.fromEntries(
    groups.map((g) => [g.labels.__meta_baremetal_server_id, g.labels.__meta_baremetal_cancellation]),
  );
  return { samples, labels };
}

describe('a scheduled cancellation in metrics and discovery', () => {
  it('appears at the next servers poll, follows its type, and `delete` clears it', async () => {
    expect(await afterServersPoll()).toEqual({ samples: [], labels: { '100001': '', '100002': '', '100003': '' } });

    expect(await cancellation('100002', 'immediate')).toBe(0);
    expect(await afterServersPoll()).toEqual({
      samples: [`${METRIC}{account="default",server_id="100002",cancellation_type="immediate"} 1`],
      labels: { '100001': '', '100002': 'immediate', '100003': '' },
    });

    expect(await cancellation('100002', 'end')).toBe(0);
    expect(await cancellation('100003', 'end')).toBe(0);
    expect(await afterServersPoll()).toEqual({
      samples: [
        `${METRIC}{account="default",server_id="100002",cancellation_type="end"} 1`,
        `${METRIC}{account="default",server_id="100003",cancellation_type="end"} 1`,
      ],
      labels: { '100001': '', '100002': 'end', '100003': 'end' },
    });

    expect(await cancellation('100002', 'delete')).toBe(0);
    expect(await afterServersPoll()).toEqual({
      samples: [`${METRIC}{account="default",server_id="100003",cancellation_type="end"} 1`],
      labels: { '100001': '', '100002': '', '100003': 'end' },
    });

    // A server that leaves the list takes its cancellation series with it.
    h.sim.state.removeServer('100003');
    expect(await afterServersPoll()).toEqual({ samples: [], labels: { '100001': '', '100002': '' } });
  });
});
