/**
 * How often the journal is pruned (issue 32): hourly for the default retention, every tenth of a short one, so
 * that the soak's `journal_retention: 10m` keeps at most 11 minutes of rows rather than 70.
 */
import { describe, expect, it } from 'vitest';
import { Housekeeping, pruneEveryMs } from '../../../src/remediation/housekeeping.js';
import type { NewEntry } from '../../../src/store/rows.js';
import { Journal } from '../../../src/store/sqlite/journal.js';
import { sqliteStore } from '../../../src/store/sqlite/store.js';
import { captureLogger } from '../../helpers/logger.js';
import { freshMetrics } from '../../helpers/metrics.js';
import { tempDir } from '../../helpers/tmp.js';

const MIN = 60_000;

describe('journal pruning cadence', () => {
  it('prunes hourly, every tenth of a shorter retention, at most once a minute', () => {
    expect(pruneEveryMs(30 * 24 * 60 * MIN)).toBe(60 * MIN);
    expect(pruneEveryMs(10 * 60 * MIN)).toBe(60 * MIN);
    expect(pruneEveryMs(10 * MIN)).toBe(MIN);
    expect(pruneEveryMs(MIN)).toBe(MIN);
  });

  it('with a 10-minute retention, a row 11 minutes old is gone two minutes after the last prune', async () => {
    const journal = Journal.open(':memory:');
    const housekeeping = new Housekeeping({
      account: 'default',
      store: sqliteStore(journal, ':memory:', tempDir()),
      metrics: freshMetrics().metrics,
      logger: captureLogger().logger,
      targets: { serversKnown: true, hasServer: () => true, ownsIp: () => true },
      config: { journalRetentionMs: 10 * MIN } as never,
    });
    const start = 1_000 * 60 * MIN;
    await housekeeping.run(start);
    const entry: NewEntry = {
      account: 'default',
      createdAt: start - 9 * MIN,
      source: 'alert',
      action: 'firewall_state',
      serverId: '100001',
      ip: '198.18.0.1',
      value: '1',
      alertname: 'BaremetalIpUnderAttack',
      principal: 'alertmanager',
      fingerprint: null,
      startsAt: null,
      decision: 'dry_run',
    };
    journal.insert(entry);
    await housekeeping.run(start + MIN / 2);
    expect(journal.list({ limit: 10 })).toHaveLength(1);
    await housekeeping.run(start + 2 * MIN);
    expect(journal.list({ limit: 10 })).toEqual([]);
    journal.close();
  });
});
