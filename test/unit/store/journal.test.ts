import { chmodSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { DatabaseSync } from 'node:sqlite';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { JournalError, StateDirLockedError } from '../../../src/errors.js';
import { Journal } from '../../../src/store/sqlite/journal.js';
import { MIGRATIONS } from '../../../src/store/sqlite/database.js';
import { sqliteStore } from '../../../src/store/sqlite/store.js';
import type { NewEntry } from '../../../src/store/rows.js';
import { LOCK_FILE, lockStateDir } from '../../../src/store/state-dir-lock.js';
import { Housekeeping, PRUNE_BATCH } from '../../../src/remediation/housekeeping.js';
import { captureLogger } from '../../helpers/logger.js';
import { bindStateFamilies } from '../../../src/collectors/families.js';
import { DesiredRows } from '../../../src/remediation/desired-rows.js';
import { freshMetrics, seriesValue, stateAccount } from '../../helpers/metrics.js';
import { tempDir } from '../../helpers/tmp.js';

const DAY = 86_400_000;
const row = (createdAt: number, over: Partial<NewEntry> = {}): NewEntry => ({
  account: 'default',
  createdAt,
  source: 'alert',
  action: 'powercycle',
  serverId: '100001',
  ip: null,
  value: null,
  alertname: null,
  fingerprint: null,
  startsAt: null,
  decision: 'executed',
  principal: 'alertmanager',
  ...over,
});

/** A valid journal file with one row, then damaged by `damage`. */
function truncatedJournal(path: string): void {
  const j = Journal.open(path);
  for (let i = 0; i < 200; i++) j.insert(row(i, { message: 'x'.repeat(200) }));
  j.close();
  const bytes = readFileSync(path);
  writeFileSync(path, bytes.subarray(0, Math.floor(bytes.length / 2)));
}

describe('opening the journal', () => {
  it.each([
    {
      name: 'a zero-length file',
      make: (p: string) => writeFileSync(p, ''),
      message: /is empty \(zero length\), not a SQLite database/,
    },
    {
      name: 'garbage',
      make: (p: string) => writeFileSync(p, 'this is not a database at all, just text\n'.repeat(100)),
      message: /not a SQLite database \(wrong file header\)/,
    },
    { name: 'a truncated database', make: truncatedJournal, message: /cannot open the journal/ },
    { name: 'a directory in its place', make: (p: string) => mkdirSync(p), message: /cannot open the journal/ },
  ])('refuses $name and leaves it unchanged', ({ make, message }) => {
    const path = join(tempDir(), 'journal.db');
    make(path);
    const before = (() => {
      try {
        return readFileSync(path);
      } catch {
        return 'directory';
      }
    })();
    expect(() => Journal.open(path)).toThrow(message);
    const journal = Journal.openOrUnavailable(path);
    expect(journal.unavailable).toMatch(message);
    expect(journal.healthy()).toBe(false);
    expect(() => journal.list({ limit: 1 })).toThrow(JournalError);
    expect(() => journal.insert(row(0))).toThrow(/the journal is unavailable/);
    const after = (() => {
      try {
        return readFileSync(path);
      } catch {
        return 'directory';
      }
    })();
    expect(after).toEqual(before);
  });

  it.skipIf(process.getuid?.() === 0)('refuses a directory it cannot write', () => {
    const dir = join(tempDir(), 'ro');
    mkdirSync(dir);
    chmodSync(dir, 0o500);
    expect(Journal.openOrUnavailable(join(dir, 'journal.db')).unavailable).toMatch(/cannot open the journal/);
    chmodSync(dir, 0o700);
  });

  it('migrates a version 1 journal, keeping its rows', () => {
    const path = join(tempDir(), 'journal.db');
    const j = Journal.open(path);
    j.insert(row(1));
    j.close();
    const again = Journal.open(path);
    expect(again.list({ limit: 5 })).toHaveLength(1);
    again.close();
  });

  it('migrates a version 2 journal: its rows and desired state become the account default', () => {
    const path = join(tempDir(), 'journal.db');
    const db = new DatabaseSync(path);
    for (const migration of MIGRATIONS.slice(0, 2)) db.exec(migration);
    db.exec('PRAGMA user_version = 2');
    db.exec(`INSERT INTO actions (created_at, source, action, server_id, decision) VALUES (1, 'alert', 'powercycle', '100001', 'executed');
      INSERT INTO firewall_desired (server_id, ip, desired_state, due_at, pending, cooldown_ms) VALUES ('100001', '198.18.0.1', '1', 5, 1, 120000);`);
    db.close();
    const j = Journal.open(path);
    const state = {
      rows: j.list({ limit: 5 }).map((e) => [e.account, e.serverId]),
      defaultDue: j.dueDesired('default', 10).map((d) => [d.account, d.serverId, d.ip]),
      otherDue: j.dueDesired('reseller-eu', 10),
      budgetUsedDefault: j.sentSince('default', 0),
      budgetUsedOther: j.sentSince('reseller-eu', 0),
    };
    j.close();
    expect(state).toEqual({
      rows: [['default', '100001']],
      defaultDue: [['default', '100001', '198.18.0.1']],
      otherDue: [],
      budgetUsedDefault: 1,
      budgetUsedOther: 0,
    });
  });

  it('migrates a version 8 journal: an expired row loses the approval time it was given, a settled one keeps it', () => {
    const path = join(tempDir(), 'journal.db');
    const db = new DatabaseSync(path);
    for (const migration of MIGRATIONS.slice(0, 8)) db.exec(migration);
    db.exec('PRAGMA user_version = 8');
    db.exec(`INSERT INTO actions (created_at, source, action, server_id, decision, approver, approved_at) VALUES
      (1, 'operator', 'powercycle', '100001', 'expired', NULL, 900001),
      (2, 'operator', 'powercycle', '100002', 'denied_by_approver', 'bob', 900002);`);
    db.close();
    const j = Journal.open(path);
    const rows = j.list({ limit: 5 }).map((e) => [e.decision, e.approver, e.approvedAt, e.approverReason]);
    j.close();
    expect(rows).toEqual([
      ['denied_by_approver', 'bob', 900002, null],
      ['expired', null, null, null],
    ]);
  });
});

describe('pruning', () => {
  it('deletes old rows in batches, never a row a delivery key, a pending change or a running call needs', async () => {
    const journal = Journal.open(':memory:');
    const now = 100 * DAY;
    const old = now - 31 * DAY;
    for (let i = 0; i < 2 * PRUNE_BATCH + 7; i++) journal.insert(row(old + i));
    const keyed = journal.insert(row(old, { serverId: 'keyed' }));
    journal.claimDelivery('alert:still-redelivered', 'd', keyed, old);
    journal.delivery('alert:still-redelivered', now - DAY); // seen again yesterday
    const staleKeyed = journal.insert(row(old, { serverId: 'stale-keyed' }));
    journal.claimDelivery('alert:gone', 'd', staleKeyed, old);
    journal.insert(row(old, { serverId: 'running', decision: 'executing' }));
    journal.insert(row(now - DAY, { serverId: 'recent' }));
    journal.saveDesired({
      account: 'default',
      serverId: '100001',
      ip: '198.18.0.1',
      desiredState: '1',
      dueAt: old,
      pending: true,
      attempts: 0,
      appliedState: null,
      appliedAt: null,
      cooldownMs: 120_000,
      principal: null,
    });
    const { metrics } = freshMetrics();
    const housekeeping = new Housekeeping({
      account: 'default',
      store: sqliteStore(journal, ':memory:', tempDir()),
      metrics,
      logger: captureLogger().logger,
      targets: { serversKnown: true, hasServer: () => true, ownsIp: () => true },
      config: { journalRetentionMs: 30 * DAY, retireAfterMs: DAY } as never,
    });
    expect(await housekeeping.prune(now)).toBe(2 * PRUNE_BATCH + 7 + 1);
    expect(
      journal
        .list({ limit: 100 })
        .map((e) => e.serverId)
        .sort(),
    ).toEqual(['keyed', 'recent', 'running']);
    expect(journal.delivery('alert:gone')).toBeUndefined();
    expect(journal.dueDesired('default', now)).toHaveLength(1);
    journal.close();
  });
});

/** Fresh metrics whose desired firewall state series are those of `desired`, the account `default`'s rows. */
function desiredMetrics() {
  const { metrics, registry } = freshMetrics();
  const desired = new DesiredRows();
  const account = { ...stateAccount('default', []), desired };
  bindStateFamilies(metrics, () => [account]);
  return { metrics, registry, desired };
}

describe('retiring desired state of servers gone from the list', () => {
  it('keeps it for 24 h after the server left the list, then removes rows and series', async () => {
    const journal = Journal.open(':memory:');
    const { metrics, registry, desired } = desiredMetrics();
    const listed = new Set(['100001', '100002']);
    const targets = { serversKnown: true, hasServer: (id: string) => listed.has(id), ownsIp: () => true };
    const housekeeping = new Housekeeping({
      account: 'default',
      store: sqliteStore(journal, ':memory:', tempDir()),
      metrics,
      desired,
      logger: captureLogger().logger,
      targets,
      config: { journalRetentionMs: 30 * DAY, retireAfterMs: DAY } as never,
    });
    for (const serverId of listed) {
      journal.saveDesired({
        account: 'default',
        serverId,
        ip: `198.18.0.${serverId.slice(-1)}`,
        desiredState: '1',
        dueAt: 0,
        pending: false,
        attempts: 0,
        appliedState: '1',
        appliedAt: 0,
        cooldownMs: 120_000,
        principal: null,
      });
    }
    // As the engine's gauges read them at start (remediation/gauges.ts `refresh`).
    desired.replace(journal.allDesired('default'));
    let now = DAY;
    listed.delete('100002');
    expect(await housekeeping.retire(now)).toBe(0);
    now += DAY - 1;
    expect(await housekeeping.retire(now)).toBe(0);
    now += 2;
    expect(await housekeeping.retire(now)).toBe(1);
    expect(journal.allDesired('default').map((d) => d.serverId)).toEqual(['100001']);
    expect(
      await seriesValue(registry, 'baremetal_firewall_desired_state', { server_id: '100002', ip: '198.18.0.2' }),
    ).toBeUndefined();
    expect(
      await seriesValue(registry, 'baremetal_firewall_desired_state', { server_id: '100001', ip: '198.18.0.1' }),
    ).toBe(1);
    journal.close();
  });

  it('forgets the mark when the server comes back', async () => {
    const journal = Journal.open(':memory:');
    let listed = false;
    const housekeeping = new Housekeeping({
      account: 'default',
      store: sqliteStore(journal, ':memory:', tempDir()),
      metrics: freshMetrics().metrics,
      logger: captureLogger().logger,
      targets: { serversKnown: true, hasServer: () => listed, ownsIp: () => true },
      config: { journalRetentionMs: DAY, retireAfterMs: DAY } as never,
    });
    journal.saveDesired({
      account: 'default',
      serverId: '1',
      ip: '198.18.0.1',
      desiredState: '1',
      dueAt: 0,
      pending: false,
      attempts: 0,
      appliedState: '1',
      appliedAt: 0,
      cooldownMs: 1,
      principal: null,
    });
    await housekeeping.retire(0);
    listed = true;
    await housekeeping.retire(DAY);
    listed = false;
    expect(await housekeeping.retire(DAY + 1)).toBe(0);
    expect(await housekeeping.retire(2 * DAY)).toBe(0);
    expect(await housekeeping.retire(2 * DAY + 2)).toBe(1);
    journal.close();
  });
});

describe('retiring desired state of an IP its server no longer owns', () => {
  it('keeps it for remediation.retire_after after the IP moved away, then removes row and series', async () => {
    const journal = Journal.open(':memory:');
    const { metrics, registry, desired } = desiredMetrics();
    const ips = new Map([['100001', new Set(['198.18.0.1', '198.18.0.2'])]]);
    const housekeeping = new Housekeeping({
      account: 'default',
      store: sqliteStore(journal, ':memory:', tempDir()),
      metrics,
      desired,
      logger: captureLogger().logger,
      targets: {
        serversKnown: true,
        hasServer: (id) => ips.has(id),
        ownsIp: (id, ip) => ips.get(id)?.has(ip) ?? false,
      },
      config: { journalRetentionMs: 30 * DAY, retireAfterMs: 2 * 60_000 } as never,
    });
    for (const ip of ['198.18.0.1', '198.18.0.2']) {
      journal.saveDesired({
        account: 'default',
        serverId: '100001',
        ip,
        desiredState: '0',
        dueAt: 0,
        pending: false,
        attempts: 0,
        appliedState: '0',
        appliedAt: 0,
        cooldownMs: 120_000,
        principal: null,
      });
    }
    desired.replace(journal.allDesired('default'));
    ips.get('100001')!.delete('198.18.0.2');
    expect(await housekeeping.retire(DAY)).toBe(0);
    expect(await housekeeping.retire(DAY + 2 * 60_000 - 1)).toBe(0);
    expect(await housekeeping.retire(DAY + 2 * 60_000 + 1)).toBe(1);
    expect(journal.allDesired('default').map((d) => d.ip)).toEqual(['198.18.0.1']);
    expect(
      await seriesValue(registry, 'baremetal_firewall_desired_state', { server_id: '100001', ip: '198.18.0.2' }),
    ).toBeUndefined();
    expect(
      await seriesValue(registry, 'baremetal_firewall_desired_state', { server_id: '100001', ip: '198.18.0.1' }),
    ).toBe(0);
    journal.close();
  });
});

describe('the state_dir lock', () => {
  // Above Linux's PID_MAX_LIMIT (2^22): no process has it, and none ever will.
  const deadPid = () => 2 ** 22 + 1;

  it.each([
    { name: 'a lock of a dead process', content: () => `${deadPid()}\n` },
    { name: 'a lock file with garbage', content: () => 'not a pid' },
    { name: 'an empty lock file', content: () => '' },
    { name: 'our own PID from an earlier life (PID 1 in a container)', content: () => `${process.pid}\n` },
  ])('takes over $name', ({ content }) => {
    const dir = tempDir();
    writeFileSync(join(dir, LOCK_FILE), content());
    const lock = lockStateDir(dir);
    expect(readFileSync(join(dir, LOCK_FILE), 'utf8')).toBe(`${process.pid}\n`);
    lock.release();
  });

  it.each([
    { name: 'a live process', holder: () => String(process.ppid), pid: () => process.ppid },
    { name: 'this process already', holder: undefined, pid: () => process.pid },
  ])('refuses a lock held by $name, naming its PID', ({ holder, pid }) => {
    const dir = tempDir();
    const first = holder ? undefined : lockStateDir(dir);
    if (holder) writeFileSync(join(dir, LOCK_FILE), holder());
    const error = (() => {
      try {
        lockStateDir(dir);
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(StateDirLockedError);
    expect((error as StateDirLockedError).message).toContain(`(PID ${pid()})`);
    first?.release();
  });

  it('removes its file on release, and a released lock can be taken again', () => {
    const dir = tempDir();
    lockStateDir(dir).release();
    lockStateDir(dir).release();
    expect(() => readFileSync(join(dir, LOCK_FILE))).toThrow(/ENOENT/);
  });
});
