/**
 * The leader's reads of what the shared store holds (desired firewall state rows, circuit breaker, pending
 * changes, requests awaiting approval, budget) run at once
 * when the ticker's refresh meets a decision's: with PostgreSQL the two go to different connections, and the
 * read started before the decision committed may answer after the one started after it. Its older reply must
 * not overwrite the newer (a SQLite store whose reads are held and released in the other order).
 */
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../src/config/load.js';
import { DesiredRows } from '../../../src/remediation/desired-rows.js';
import { RemediationGauges } from '../../../src/remediation/gauges.js';
import { type CircuitState, type DesiredFirewall, type JournalEntry, journalRow } from '../../../src/store/rows.js';
import { captureLogger } from '../../helpers/logger.js';
import { freshMetrics, seriesValue } from '../../helpers/metrics.js';
import { openTestStore } from '../../helpers/remediation.js';
import type { SqliteStore } from '../../../src/store/sqlite/store.js';

/** A read held until its reply is given. */
const held = <T>() => {
  const replies: ((value: T) => void)[] = [];
  const read = () => new Promise<T>((resolve) => replies.push(resolve));
  return { read, reply: (index: number, value: T) => replies[index]!(value), count: () => replies.length };
};

const row: DesiredFirewall = {
  account: 'default',
  serverId: '100001',
  ip: '192.0.2.10',
  desiredState: '1',
  dueAt: 1_000,
  pending: true,
  attempts: 0,
  appliedState: null,
  appliedAt: null,
  cooldownMs: 0,
  principal: 'alertmanager',
};
/** The gauges of account default over `store` (a fresh registry; the clock at 1 s); `desired`: the rows' holder. */
function gaugesOver(store: SqliteStore, desired?: DesiredRows) {
  const { registry, metrics } = freshMetrics();
  const { logger } = captureLogger();
  const config = parseConfigText('upstream:\n  base_url: https://api.provider.test\n', {
    BAREMETAL_API_KEY: 'env-key',
  }).remediation;
  const gauges = new RemediationGauges({ account: 'default', store, metrics, logger, config, desired }, () => 1_000);
  return { registry, gauges, config };
}

const closed: CircuitState = { openedAt: null, closedAt: null, message: null };

describe('the leader refreshing the shared desired firewall state', () => {
  it('keeps the reply of the read started last when an older read answers after it', async () => {
    const store = openTestStore();
    const desiredReads = held<DesiredFirewall[]>();
    const circuitReads = held<CircuitState>();
    store.allDesired = desiredReads.read;
    store.circuit = circuitReads.read;
    const desired = new DesiredRows();
    const { registry, gauges } = gaugesOver(store, desired);

    // The ticker's read starts before a decision commits; the decision's refresh starts after the commit.
    const tick = gauges.refresh();
    const decision = gauges.refresh();
    expect(desiredReads.count()).toBe(2);
    desiredReads.reply(1, [row]);
    desiredReads.reply(0, []);
    // Each then reads the breaker, in the order their rows arrived: the decision's read (0) starts before
    // the tick's (1). The tick's, started last, sees the breaker opened meanwhile; the decision's answers after.
    await new Promise((resolve) => setImmediate(resolve));
    expect(circuitReads.count()).toBe(2);
    circuitReads.reply(1, { ...closed, openedAt: 900, message: 'opened' });
    circuitReads.reply(0, closed);
    await Promise.all([tick, decision]);
    expect(desired.rows()).toEqual([{ serverId: '100001', ip: '192.0.2.10', desiredState: '1' }]);
    // The breaker read started last (the tick's) is the one shown, not the older reply that came after it.
    expect(await seriesValue(registry, 'baremetal_remediation_circuit_open', { account: 'default' })).toBe(1);
  });

  it('keeps the latest-started reply of the pending, awaiting-approval and budget reads', async () => {
    const store = openTestStore();
    // Two powercycle requests awaiting approval, as the store returns them: the older read sees both, the
    // newer one (another operator approved one meanwhile) only the second.
    const awaitingRow = async (serverId: string): Promise<JournalEntry> => {
      const id = await store.insert(
        journalRow({
          account: 'default',
          createdAt: 900,
          source: 'operator',
          action: 'powercycle',
          serverId,
          decision: 'awaiting_approval',
          principal: 'alice',
        }),
      );
      return (await store.get(id))!;
    };
    const rows = [await awaitingRow('100001'), await awaitingRow('100002')];
    const pendingReads = held<number>();
    const awaitingReads = held<JournalEntry[]>();
    const sentReads = held<number>();
    store.pendingCount = pendingReads.read;
    store.awaitingApproval = awaitingReads.read;
    store.sentSince = sentReads.read;
    const { registry, gauges, config } = gaugesOver(store);
    /** Lets the refreshes run until `reads` has `count` reads started. */
    const started = async (reads: { count(): number }, count: number) => {
      while (reads.count() < count) await new Promise((resolve) => setImmediate(resolve));
    };

    // The ticker's refresh (older) starts before a decision commits, the decision's (newer) after the commit.
    const older = gauges.refresh();
    const newer = gauges.refresh();
    await started(pendingReads, 2);
    // The newer pending read (1) answers first: the change was applied; the older one's reply comes after.
    pendingReads.reply(1, 0);
    pendingReads.reply(0, 1);
    // The awaiting reads then start in the order the pending replies arrived: the older refresh's starts
    // last (1) and sees the approval; the one started before it (0) answers after it.
    await started(awaitingReads, 2);
    awaitingReads.reply(1, [rows[1]!]);
    awaitingReads.reply(0, rows);
    // Likewise the budget's reads: the one started last (1) sees the calls made since.
    await started(sentReads, 2);
    sentReads.reply(1, 3);
    sentReads.reply(0, 1);
    await Promise.all([older, newer]);
    expect({
      pending: await seriesValue(registry, 'baremetal_action_pending', { action: 'firewall_state' }),
      awaiting: await seriesValue(registry, 'baremetal_action_awaiting_approval', { action: 'powercycle' }),
      budget: await seriesValue(registry, 'baremetal_action_budget_remaining', { account: 'default' }),
    }).toEqual({ pending: 0, awaiting: 1, budget: config.budgetPerHour - 3 });
  });
});
