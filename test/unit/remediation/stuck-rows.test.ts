/**
 * No journal row stays `executing` past any call in flight, in one process too (issue 38): a row whose
 * completion could not be written is recovered as `unknown` by the housekeeping once it is older than a
 * write can last (`stuckAfterMs`); a younger one, whose call may still be in flight, is left alone.
 */
import { describe, expect, it } from 'vitest';
import { engineHarness } from '../../helpers/remediation.js';

const STUCK_AFTER_MS = 2 * 2000 + 60_000;

describe('a row left executing in one process', () => {
  it('is unknown once older than a write can last, and not before', async () => {
    const h = await engineHarness({}, ':memory:', 2000, { stuckAfterMs: STUCK_AFTER_MS });
    const row = await h.journal.insert({
      account: 'default',
      createdAt: h.clock.now,
      source: 'operator',
      action: 'poweroff',
      serverId: '100001',
      ip: null,
      value: null,
      alertname: null,
      fingerprint: null,
      startsAt: null,
      decision: 'executing',
      principal: 'ops',
    });
    h.clock.now += STUCK_AFTER_MS - 1000;
    await h.engine.tick();
    expect((await h.journal.get(row))?.decision).toBe('executing');
    // The housekeeping looks again a minute later: the row is past any call in flight by then.
    h.clock.now += 61_000;
    await h.engine.tick();
    expect(await h.journal.get(row)).toMatchObject({ decision: 'unknown', upstreamOutcome: 'interrupted' });
    expect(h.log.lines.some((l) => l.includes('journal row left executing past any call in flight'))).toBe(true);
  });
});
