/**
 * AccountShares (src/ha/shares.ts) over a membership and leases in memory: a replica claims nothing at its
 * first heartbeat, nor at the first after a failed one — after an outage the others' rows may have expired, and
 * the first replica back would otherwise claim every account before seeing the others — and a replica that
 * disagrees with the live membership claims nothing and hands over what it led.
 */
import { describe, expect, it } from 'vitest';
import { AccountShares } from '../../../src/ha/shares.js';
import { type Member, termsOf } from '../../../src/ha/terms.js';
import type { Beat } from '../../../src/store/postgres/membership.js';
import { captureLogger } from '../../helpers/logger.js';

const ACCOUNTS = ['a1', 'a2', 'a3', 'a4', 'a5', 'a6'];
const TERMS = termsOf(
  'shared',
  ACCOUNTS.map((name) => ({ name, baseUrl: `https://${name}.example` })),
);
const member = (replica: string, startedAt: number, terms = TERMS): Member => ({
  replica,
  bootId: `boot-${replica}`,
  startedAt,
  terms,
});

/** r0's shares over scripted heartbeats: each tick takes the next beat (an Error: the database failed). */
function r0(beats: Array<Beat | Error>) {
  const claims: string[][] = [];
  let tick = 0;
  const ticked: Array<() => void> = [];
  const shares = new AccountShares({
    membership: {
      replica: 'r0',
      bootId: 'boot-r0',
      terms: TERMS,
      members: async () => {
        const beat = beats[Math.min(tick, beats.length - 1)]!;
        tick++;
        queueMicrotask(() => {
          for (const f of ticked.splice(0)) f();
        });
        if (beat instanceof Error) throw beat;
        claims.push([]);
        return beat;
      },
      leave: async () => {},
    },
    leases: {
      claim: async (account) => {
        claims.at(-1)!.push(account);
        return '1';
      },
      renew: async () => true,
      release: async () => {},
    },
    accounts: ACCOUNTS,
    logger: captureLogger('debug').logger,
    onGained: () => {},
    onLost: () => {},
    leaseMs: 60_000,
    tickMs: 5,
    marginMs: 1_000,
  });
  /** runs until `n` heartbeats were asked for, then stops */
  const run = async (n: number) => {
    shares.start();
    while (tick < n) await new Promise<void>((resolve) => ticked.push(resolve));
    await shares.stop();
    return claims;
  };
  return { shares, run };
}

const alone: Beat = { live: [member('r0', 1)], singleLeaderLocked: false };
const three: Beat = { live: [member('r0', 1), member('r1', 2), member('r2', 3)], singleLeaderLocked: false };

describe('AccountShares', () => {
  it('claims nothing at its first heartbeat, then its share of the replicas it sees', async () => {
    const claims = await r0([alone, three, three]).run(3);
    expect(claims[0]).toEqual([]);
    expect(claims[1]!.length).toBe(2);
  });

  it('after a failed heartbeat, claims nothing at the next one: the others come back meanwhile', async () => {
    // r0 alone before (all six its own), the database fails, r0 is back first and sees itself alone, then all
    const claims = await r0([alone, alone, new Error('connection refused'), alone, three, three]).run(6);
    // first beat: nothing; then all six; the failure loses them; back alone: nothing; then its share of three
    expect(claims.map((c) => c.length)).toEqual([0, 6, 0, 2, 0]);
  });

  it('a replica that disagrees claims nothing', async () => {
    const single = termsOf('single', []);
    const older: Beat = { live: [member('host/1', 0, single), member('r0', 1)], singleLeaderLocked: true };
    const claims = await r0([older, older, older]).run(3);
    expect(claims.flat()).toEqual([]);
  });
});
