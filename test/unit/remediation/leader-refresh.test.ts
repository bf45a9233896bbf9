/**
 * What the leader-only remediation series show (pending changes, requests awaiting approval, budget left; docs/
 * high-availability.md): read again at once when a replica starts leading, not left as it last read them
 * (perhaps as a follower, long before); rendered soon after each periodic re-read, not at the next poll's end;
 * and an awaiting-approval series for every action the rules require approval for, so that a new leader shows
 * the same series as the one before it.
 */
import { describe, expect, it } from 'vitest';
import { journalRow } from '../../../src/store/rows.js';
import { seriesValue } from '../../helpers/metrics.js';
import { engineHarness, rule } from '../../helpers/remediation.js';

const ROW_OF_ANOTHER_REPLICA = {
  account: 'default',
  source: 'operator' as const,
  action: 'powercycle' as const,
  serverId: '100001',
  decision: 'awaiting_approval' as const,
  principal: 'alice',
};

describe('the leader-only remediation series', () => {
  it('are read again at once when the replica starts leading', async () => {
    const h = await engineHarness({
      rules: [rule({ alertname: 'HostDown', action: 'powercycle', requireApproval: true })],
    });
    const awaiting = () => seriesValue(h.registry, 'baremetal_action_awaiting_approval', { action: 'powercycle' });
    expect(await awaiting()).toBe(0);
    // Another replica journals a request awaiting approval; this one read the store at start, on the same clock.
    await h.journal.insert(journalRow({ ...ROW_OF_ANOTHER_REPLICA, createdAt: h.clock.now }));
    // It becomes leader: the first tick runs at once (the interval is an hour) and reads the store again.
    h.engine.start(3_600_000);
    await h.engine.tick();
    expect(await awaiting()).toBe(1);
  });

  it('are handed to the exposition after every periodic re-read', async () => {
    let renderings = 0;
    const h = await engineHarness({}, ':memory:', 2000, { onDecision: () => renderings++ });
    await h.engine.tick();
    const before = renderings;
    h.clock.now += 10_000;
    await h.engine.tick();
    expect(renderings).toBeGreaterThan(before);
  });

  it('have an awaiting-approval series for each action a rule or ladder step requires approval for', async () => {
    const h = await engineHarness({
      rules: [
        rule({
          alertname: 'HostDown',
          action: 'powercycle',
          steps: [
            { action: 'powercycle', verifyWithinMs: 600_000, requireApproval: false, cooldownMs: 1_800_000 },
            { action: 'poweroff', verifyWithinMs: 600_000, requireApproval: true, cooldownMs: 1_800_000 },
          ],
        }),
      ],
    });
    const series = async (action: string) =>
      seriesValue(h.registry, 'baremetal_action_awaiting_approval', { account: 'default', action });
    expect(await series('poweroff')).toBe(0);
    expect(await series('powercycle')).toBeUndefined();
  });
});
