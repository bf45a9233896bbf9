/**
 * A dedicated server removed while its firewall history request is in flight (issue 32, found by `npm run soak`):
 * when that request then fails, the failure must not bring back `baremetal_firewall_history_up` for a server
 * the server list already dropped — one stale series per removed server, for as long as the daemon runs.
 */
import { describe, expect, it } from 'vitest';
import { accountOf, startHarness } from '../helpers/daemon.js';
import { eventually } from '../helpers/processes.js';
import { seriesOf } from '../helpers/metrics.js';

describe('a server removed while its firewall history is in flight', () => {
  it('leaves no firewall series when that request fails after the server list dropped the server', async () => {
    const h = await startHarness({
      simulator: { servers: 3, colocations: 0, transits: 0, attackRate: 0 },
      config: { upstream: { timeout: '5s', retries: 0 }, collectors: { graphs: false, catalog: false } },
      daemon: { initialPolls: false },
    });
    const { polls } = accountOf(h.daemon, 'default');
    expect(await polls.run('servers')).toBe('success');
    expect(await polls.run('firewall')).toBe('success');
    // The history of 100002 is held back until the client gives up (its 5 s timeout): a failure.
    h.sim.setFaults({ paths: ['/api/v1/dedicated/firewall'], ids: ['100002'], mode: 'act_then_hang', hangMs: 60_000 });
    const firewall = polls.run('firewall');
    await eventually('the held request to arrive', async () =>
      h.sim.callsTo('/api/v1/dedicated/firewall', { server_id: '100002' }).length === 2 ? true : undefined,
    );
    h.sim.state.removeServer('100002');
    expect(await polls.run('servers')).toBe('success');
    expect(await firewall).toBe('partial');
    const ids = async (name: string) => (await seriesOf(h.daemon.registry, name)).map((s) => s.service_id).sort();
    expect(await ids('baremetal_firewall_history_up')).toEqual(['100001', '100003']);
    expect(await ids('baremetal_firewall_history_last_success_timestamp_seconds')).toEqual(['100001', '100003']);
  });
});
