/**
 * The leader's reads of what the shared store holds (desired firewall state rows, circuit breaker) run at once
 * when the ticker's refresh meets a decision's: with PostgreSQL the two go to different connections, and the
 * read started before the decision committed may answer after the one started after it. Its older reply must
 * not overwrite the newer (a SQLite store whose reads are held and released in the other order).
 */
import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../src/config/load.js';
import { DesiredRows } from '../../../src/remediation/desired-rows.js';
import { RemediationGauges } from '../../../src/remediation/gauges.js';
import type { CircuitState, DesiredFirewall } from '../../../src/store/rows.js';
import { captureLogger } from '../../helpers/logger.js';
import { freshMetrics, seriesValue } from '../../helpers/metrics.js';
import { openTestStore } from '../../helpers/remediation.js';

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
const closed: CircuitState = { openedAt: null, closedAt: null, message: null };

describe('the leader refreshing the shared desired firewall state', () => {
  it('keeps the reply of the read started last when an older read answers after it', async () => {
    const store = openTestStore();
    const desiredReads = held<DesiredFirewall[]>();
    const circuitReads = held<CircuitState>();
    store.allDesired = desiredReads.read;
    store.circuit = circuitReads.read;
    const { registry, metrics } = freshMetrics();
    const { logger } = captureLogger();
    const config = parseConfigText('upstream:\n  base_url: https://api.provider.test\n', {
      BAREMETAL_API_KEY: 'env-key',
    }).remediation;
    const desired = new DesiredRows();
    const gauges = new RemediationGauges({ account: 'default', store, metrics, logger, config, desired }, () => 1_000);

    // The ticker's read starts before a decision commits; the decision's refresh starts after the commit.
    const tick = gauges.refreshShared();
    const decision = gauges.refreshShared();
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
});
