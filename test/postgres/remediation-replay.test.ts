/**
 * `remediation replay` over a journal a daemon wrote through its webhook against the simulator, on SQLite and on
 * a real PostgreSQL: each recorded delivery with the decision made then and the one a changed rule makes now,
 * rows written without labels listed as not replayable, and nothing sent or written.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runRemediationReplay } from '../../src/cli/remediation-replay.js';
import { startHarness } from '../helpers/daemon.js';
import { requirePostgres, startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { eventually } from '../helpers/processes.js';
import { TOKEN, unreachableAlert } from '../helpers/remediation.js';
import { tempDir } from '../helpers/tmp.js';

const found = requirePostgres();
let postgres: TestPostgres | undefined;
beforeAll(async () => {
  if (!found.skip) postgres = await startPostgres(found.bin);
}, 120_000);
afterAll(() => postgres?.stop());

const RULE = { alertname: 'BaremetalServerUnreachable', cooldown: '1m' };

describe.each([
  { backend: 'sqlite' as const, skip: undefined },
  { backend: 'postgres' as const, skip: found.skip ? found.reason : undefined },
])('remediation replay on $backend', ({ backend, skip }) => {
  it.skipIf(skip)("shows a changed rule's effect on the recorded deliveries, sending and writing nothing", async () => {
    const url = backend === 'postgres' ? postgres!.createDatabase(`replay_${process.pid}`) : undefined;
    const h = await startHarness({
      key: 'k',
      simulator: { servers: 3, colocations: 0, transits: 0, attackRate: 0, seed: 11 },
      remediationAuth: true,
      ...(url ? { databaseUrl: url } : {}),
      config: { remediation: { dry_run: false, rules: [{ ...RULE, action: 'powercycle' }] } },
      daemon: { ha: { retryMs: 100, heartbeatMs: 200, timeoutMs: 2_000, refreshMs: 100 } },
    });
    await h.daemon.ready;
    const { state } = h.account('default');
    await eventually('the first server list and firewall histories', async () =>
      state.serversKnown && state.firewallState.services.size === 3 ? true : undefined,
    );
    for (const serverId of ['100001', '100002']) {
      const res = await h.daemon.app.inject({
        method: 'POST',
        url: '/api/v1/alertmanager',
        headers: { authorization: `Bearer ${TOKEN}` },
        payload: unreachableAlert('2026-11-21T12:00:00Z', `fp${serverId}`, serverId),
      });
      expect(res.json().results[0].decision).toBe('executed');
    }
    // A row as an exporter before this change wrote it: no labels, no status.
    await h.daemon.store.insert({
      account: 'default',
      createdAt: Date.now(),
      source: 'alert',
      action: 'powercycle',
      serverId: '100003',
      ip: null,
      value: null,
      alertname: 'BaremetalServerUnreachable',
      fingerprint: 'fp-legacy',
      startsAt: '2026-11-20T12:00:00Z',
      principal: null,
      decision: 'cooldown',
    });
    const before = await h.daemon.store.list({ limit: 100 });
    const sent = h.sim.calls.length;
    await h.daemon.stop();

    // NEW.yml: the same store, the rule now powers the server off.
    const file = join(tempDir(), 'new.yml');
    writeFileSync(
      file,
      JSON.stringify({
        upstream: { base_url: h.sim.url, api_key: 'k' },
        state_dir: h.stateDir,
        ...(url ? { database: { url } } : {}),
        remediation: { dry_run: false, rules: [{ ...RULE, action: 'poweroff' }] },
      }),
    );
    let out = '';
    const sink = new Writable({
      write(chunk, _encoding, done) {
        out += String(chunk);
        done();
      },
    });
    expect(await runRemediationReplay(['--config.file', file, '--since', '1d'], sink)).toBe(0);
    // As git diff --exit-code: the changed decisions make it exit 1.
    const quiet = new Writable({ write: (_chunk, _encoding, done) => done() });
    expect(await runRemediationReplay(['--config.file', file, '--since', '1d', '--exit-code'], quiet)).toBe(1);
    // The rules that made the history: no change, exit 0 (the legacy row is not replayable, no change either).
    const same = join(tempDir(), 'same.yml');
    writeFileSync(
      same,
      JSON.stringify({
        upstream: { base_url: h.sim.url, api_key: 'k' },
        state_dir: h.stateDir,
        ...(url ? { database: { url } } : {}),
        remediation: { dry_run: false, rules: [{ ...RULE, action: 'powercycle' }] },
      }),
    );
    expect(await runRemediationReplay(['--config.file', same, '--since', '1d', '--exit-code'], quiet)).toBe(0);
    const lines = out.trim().split('\n');
    expect(lines.slice(0, 3).map((l) => l.replace(/^\S+ /, ''))).toEqual([
      'BaremetalServerUnreachable firing server 100001: then powercycle: executed; now poweroff: executed  (changed)',
      'BaremetalServerUnreachable firing server 100002: then powercycle: executed; now poweroff: executed  (changed)',
      `BaremetalServerUnreachable server 100003 (journal ${before[0]!.id}): powercycle: cooldown; not replayable (no labels kept)`,
    ]);
    expect(lines.slice(3)).toEqual([
      '',
      '3 deliveries: 0 same, 2 changed, 0 overturn a human decision, 1 not replayable',
      '  2× powercycle: executed -> poweroff: executed',
    ]);
    // The same as one JSON document (-o json).
    let json = '';
    const jsonSink = new Writable({
      write(chunk, _encoding, done) {
        json += String(chunk);
        done();
      },
    });
    expect(await runRemediationReplay(['--config.file', file, '--since', '1d', '-o', 'json'], jsonSink)).toBe(0);
    const report = JSON.parse(json) as {
      deliveries: Array<{
        serverId: string;
        verdict: string;
        recorded: unknown[];
        replayed?: unknown[];
        journalIds: number[];
      }>;
      counts: Record<string, number>;
      operatorRows: unknown[];
    };
    expect(report.counts).toEqual({ same: 0, changed: 2, overturned: 0, notReplayable: 1 });
    expect(report.operatorRows).toEqual([]);
    expect(report.deliveries.map((d) => [d.serverId, d.verdict, d.recorded, d.replayed])).toEqual([
      [
        '100001',
        'changed',
        [{ action: 'powercycle', decision: 'executed' }],
        [{ action: 'poweroff', decision: 'executed' }],
      ],
      [
        '100002',
        'changed',
        [{ action: 'powercycle', decision: 'executed' }],
        [{ action: 'poweroff', decision: 'executed' }],
      ],
      ['100003', 'not_replayable', [{ action: 'powercycle', decision: 'cooldown' }], undefined],
    ]);
    expect(report.deliveries[2]!.journalIds).toEqual([before[0]!.id]);
    // No call upstream, no row written.
    expect(h.sim.calls.length).toBe(sent);
    const restarted = await h.start();
    expect(await restarted.store.list({ limit: 100 })).toEqual(before);
  });
});
