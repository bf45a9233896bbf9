import { describe, expect, it } from 'vitest';
import type { Daemon } from '../../src/daemon/start.js';
import { startHarness } from '../helpers/daemon.js';
import { POWERCYCLE_REMEDIATION, TOKEN, unreachableAlert } from '../helpers/remediation.js';

const unreachable = unreachableAlert('2026-11-21T10:00:00Z');

describe('remediation across a restart', () => {
  it('power-cycles once for an alert delivered before and after a restart', async () => {
    const h = await startHarness({
      key: 'k',
      start: false,
      simulator: { servers: 3 },
      remediationAuth: true,
      config: { remediation: POWERCYCLE_REMEDIATION },
    });
    const deliver = async (d: Daemon) => {
      const res = await d.app.inject({
        method: 'POST',
        url: '/api/v1/alertmanager',
        headers: { authorization: `Bearer ${TOKEN}` },
        payload: unreachable,
      });
      expect(res.statusCode).toBe(200);
      return res.json().results[0].decision as string;
    };

    const first = await h.start();
    await first.ready;
    expect(await deliver(first)).toBe('executed');

    // The same config and state_dir: the journal remembers the delivery.
    const daemon = await h.start();
    await daemon.ready;
    expect(await deliver(daemon)).toBe('duplicate');
    expect(h.sim.callsTo('/api/v1/dedicated/powercycle', { server_id: '100002' })).toHaveLength(1);
    expect((await daemon.store.list({ limit: 10 })).map((e) => e.decision)).toEqual(['duplicate', 'executed']);
  });
});
