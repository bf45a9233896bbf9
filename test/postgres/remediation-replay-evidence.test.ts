/**
 * `remediation replay` settles each replayed verification on the evidence its recorded row settled on, and
 * replays a ladder's later steps and escalations as what they were (issue 49), on both state-store backends. The
 * history: an outage gate (block_while_firing) and a ladder; one episode's step 1 ends ineffective at its deadline,
 * its step 2 runs (the gate read, none firing) and Alertmanager's list ends it; another episode is verified by
 * the list; a third delivery is blocked by an outage; a fourth, the blocked server's alert again, whose verification ends unknown (Alertmanager's status
 * unreadable at its deadline): replayed unknown, no ladder climbs. Replayed through the CLI with the config that made it: no
 * change, exit 0 with --exit-code; with the second step changed: exit 1, the ladder row named as changed.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import type { AlertmanagerAlert } from '../../src/alertmanager/client.js';
import { replay, runRemediationReplay } from '../../src/cli/remediation-replay.js';
import { outcomesText } from '../../src/cli/replay-report.js';
import { loadConfig } from '../../src/config/load.js';
import type { Config, LadderStep, Principal, RemediationRule } from '../../src/config/types.js';
import type { StateStore } from '../../src/store/store.js';
import { engineHarness, openTestStore, remediationApp, rule } from '../helpers/remediation.js';
import { replayConfig, replayHarness } from '../helpers/replay.js';
import { backends } from '../helpers/store-backends.js';
import { tempDir } from '../helpers/tmp.js';

const TOKEN = 'alertmanager-token-0123456789abcdef';
const PRINCIPALS: Principal[] = [{ name: 'alertmanager', bearerToken: TOKEN, roles: ['webhook'] }];
const MIN = 60_000;
const T0 = Date.UTC(2026, 10, 21, 12);

/** The config file of the history (`secondStep`: the ladder's second action). */
const configFile = (store: { stateDir: string } | { url: string }, secondStep: string) => {
  const file = join(tempDir(), 'config.json');
  writeFileSync(
    file,
    JSON.stringify({
      upstream: { base_url: 'http://127.0.0.1:9', api_key: 'k' },
      ...('url' in store ? { database: { url: store.url } } : { state_dir: store.stateDir }),
      remediation: {
        dry_run: false,
        alertmanager: { url: 'http://127.0.0.1:9' },
        safety: { deny_power_when_attacked: false, block_while_firing: ['alertname = "DatacenterOutage"'] },
        rules: [
          {
            alertname: 'ServerDown',
            steps: [
              { action: 'powercycle', verify_within: '10m', cooldown: '1m' },
              { action: secondStep, verify_within: '20m', cooldown: '1m' },
            ],
          },
        ],
      },
    }),
  );
  return file;
};

for (const backend of backends()) {
  describe.skipIf(backend.skip)(`remediation replay on the recorded evidence (${backend.name})`, () => {
    it('replays a gated ladder with its own config as no change, and names a changed step', async () => {
      const db = await backend.fresh();
      const stateDir = tempDir();
      const where = db.url !== undefined ? { url: db.url } : { stateDir };
      const config = await loadConfig(configFile(where, 'poweroff'));
      // What Alertmanager lists: the firing episodes, and an outage for a while; up for an hour.
      const listed: AlertmanagerAlert[] = [];
      let statusReadable = true;
      const am = {
        alerts: async () => [...listed],
        status: async () => {
          if (!statusReadable) throw new Error('status unreadable');
          return { startedAt: T0 - 60 * MIN };
        },
        silences: async () => [],
        createSilence: async () => 'silence',
        expireSilence: async () => {},
      };
      const store = db.url !== undefined ? await db.open() : openTestStore(join(stateDir, 'journal.db'));
      const h = await engineHarness({ ...config.remediation, principals: PRINCIPALS }, store, 2000, {
        alertmanager: am,
      });
      const app = remediationApp(h);
      const alert = (serverId: string, at: number) => ({
        status: 'firing' as const,
        labels: { alertname: 'ServerDown', server_id: serverId },
        startsAt: new Date(at).toISOString(),
        fingerprint: `fp-${serverId}`,
      });
      const deliver = async (minutes: number, serverId: string) => {
        h.clock.now = T0 + minutes * MIN;
        const a = alert(serverId, h.clock.now);
        listed.push({ ...a, state: 'active', silencedBy: [] });
        const res = await app.inject({
          method: 'POST',
          url: '/api/v1/alertmanager',
          headers: { authorization: `Bearer ${TOKEN}` },
          payload: { version: '4', status: 'firing', alerts: [a] },
        });
        expect(res.statusCode).toBe(200);
        return res.json().results[0].decision as string;
      };
      const tick = async (minutes: number) => {
        h.clock.now = T0 + minutes * MIN;
        await h.engine.tick();
      };
      const unlist = (serverId: string) =>
        listed.splice(
          listed.findIndex((a) => a.fingerprint === `fp-${serverId}`),
          1,
        );
      expect(await deliver(0, '100001')).toBe('executed');
      expect(await deliver(1, '100002')).toBe('executed');
      const outage = {
        fingerprint: 'o',
        labels: { alertname: 'DatacenterOutage' },
        startsAt: new Date(T0).toISOString(),
      };
      listed.push({ ...outage, state: 'active', silencedBy: [] });
      expect(await deliver(2, '100003')).toBe('denied_blocked');
      listed.splice(
        listed.findIndex((a) => a.fingerprint === 'o'),
        1,
      );
      // Server 100002's episode ends: Alertmanager (up for an hour) no longer lists it.
      unlist('100002');
      await tick(4);
      // Server 100001's step 1 is still listed at its deadline: ineffective, step 2 runs; then its list ends it.
      expect(await deliver(3, '100003')).toBe('executed');
      await tick(11);
      // At server 100003's deadline Alertmanager's status cannot be read: no evidence either way, unknown.
      statusReadable = false;
      await tick(13.5);
      statusReadable = true;
      unlist('100001');
      await tick(15);
      const rows = (await h.journal.list({ limit: 100 })).reverse();
      expect(rows.map((r) => [r.serverId, r.ladderStep, r.decision, r.verification, r.gate?.read ?? null])).toEqual([
        ['100001', 0, 'executed', 'ineffective', 'none_firing'],
        ['100002', 0, 'executed', 'verified', 'none_firing'],
        ['100003', 0, 'denied_blocked', null, 'blocked'],
        ['100002', null, 'resolved', null, null],
        ['100003', 0, 'executed', 'unknown', 'none_firing'],
        ['100001', 1, 'executed', 'verified', 'none_firing'],
        ['100001', null, 'resolved', null, null],
      ]);
      expect(rows[1]!.verificationEvidence).toMatch(/delivered by alertmanager \(alert list\)/);
      expect(rows[4]!.verificationEvidence).toMatch(/^no evidence either way/);
      expect(rows[5]!.verificationEvidence).toMatch(/delivered by alertmanager \(alert list\)/);
      await h.engine.stop();
      if (db.url === undefined) await store.close();

      let out = '';
      const sink = new Writable({
        write(chunk, _encoding, done) {
          out += String(chunk);
          done();
        },
      });
      const now = () => T0 + 60 * MIN;
      const same = configFile(where, 'poweroff');
      expect(await runRemediationReplay(['--config.file', same, '--since', '1d', '--exit-code'], sink, now)).toBe(0);
      const lines = out
        .trim()
        .split('\n')
        .map((l) => l.replace(/^\d{4}-\S+ /, ''));
      expect(lines).toEqual([
        'ServerDown firing server 100001: then powercycle: executed (ineffective); now powercycle: executed (ineffective)',
        'ServerDown firing server 100002: then powercycle: executed (verified); now powercycle: executed (verified)',
        'ServerDown firing server 100003: then powercycle: denied_blocked; now powercycle: denied_blocked',
        'ServerDown firing server 100003: then powercycle: executed (unknown); now powercycle: executed (unknown)',
        'ServerDown resolved server 100002: then powercycle: resolved; now powercycle: resolved',
        `ServerDown ladder step 2 server 100001 (journal ${rows[5]!.id}): then poweroff: executed (verified); now poweroff: executed (verified)`,
        'ServerDown resolved server 100001: then poweroff: resolved; now poweroff: resolved',
        '',
        '6 deliveries: 6 same, 0 changed, 0 overturn a human decision, 0 not replayable',
        '1 ladder rows: 1 same, 0 changed',
      ]);

      // The second step changed: the deliveries decide the same, the ladder's step 2 does not.
      out = '';
      const changed = configFile(where, 'powercycle');
      expect(await runRemediationReplay(['--config.file', changed, '--since', '1d', '--exit-code'], sink, now)).toBe(1);
      expect(out).toContain(
        `ServerDown ladder step 2 server 100001 (journal ${rows[5]!.id}): then poweroff: executed (verified); now powercycle: executed (verified)  (changed)`,
      );
      expect(out).toContain('1 ladder rows: 0 same, 1 changed');
    });

    it('replays a ladder step asked again after it expired as that delivery: no change', async () => {
      const db = await backend.fresh();
      const steps: LadderStep[] = [
        { action: 'powercycle', verifyWithinMs: 10 * MIN, requireApproval: false, cooldownMs: MIN },
        { action: 'poweroff', verifyWithinMs: 20 * MIN, requireApproval: true, cooldownMs: MIN },
      ];
      const rules = [
        rule({ alertname: 'ServerDown', action: 'powercycle', verifyWithinMs: 10 * MIN, cooldownMs: MIN, steps }),
      ];
      const h = await engineHarness({ principals: PRINCIPALS, rules }, await db.open());
      const app = remediationApp(h);
      const labels = { alertname: 'ServerDown', server_id: '100001' };
      const deliver = async (minutes: number) => {
        h.clock.now = T0 + minutes * MIN;
        const res = await app.inject({
          method: 'POST',
          url: '/api/v1/alertmanager',
          headers: { authorization: `Bearer ${TOKEN}` },
          payload: {
            version: '4',
            status: 'firing',
            alerts: [{ status: 'firing', labels, startsAt: new Date(T0).toISOString(), fingerprint: 'fp-x' }],
          },
        });
        expect(res.statusCode).toBe(200);
        return res.json().results.map((r: { decision: string }) => r.decision);
      };
      expect(await deliver(0)).toEqual(['executed']);
      // Step 1 ineffective: step 2 awaits approval, nobody approves it, it expires.
      h.clock.now = T0 + 11 * MIN;
      await h.engine.tick();
      h.clock.now = T0 + 30 * MIN;
      await h.engine.tick();
      // Alertmanager repeats the still-firing alert: step 2 is asked again.
      expect(await deliver(31)).toEqual(['awaiting_approval']);
      const rows = (await h.journal.list({ limit: 100 })).reverse();
      expect(rows.map((r) => [r.ladderStep, r.decision])).toEqual([
        [0, 'executed'],
        [1, 'expired'],
        [1, 'awaiting_approval'],
      ]);
      const report = await replayHarness(h, rules, { from: T0 - MIN, to: T0 + 32 * MIN }, rows);
      expect(
        report.deliveries.map((d) => [d.verdict, outcomesText(d.recorded), outcomesText(d.replayed ?? [])]),
      ).toEqual([
        ['same', 'powercycle: executed (ineffective)', 'powercycle: executed (ineffective)'],
        ['same', 'poweroff: awaiting_approval', 'poweroff: awaiting_approval'],
      ]);
      expect(
        report.ladder.map((l) => [
          l.step,
          l.verdict,
          outcomesText(l.recorded ? [l.recorded] : []),
          outcomesText(l.replayed ? [l.replayed] : []),
        ]),
      ).toEqual([[1, 'same', 'poweroff: awaiting_approval → expired', 'poweroff: awaiting_approval → expired']]);
      expect(report.ladderCounts).toEqual({ same: 1, changed: 0 });
    });

    it('replays a ladder step an approver approved as that approval: no change; a budget spent is a change', async () => {
      const { h, rows, replayWith } = await ladderStepSettled(await (await backend.fresh()).open(), 'approve');
      expect(rows.map((r) => [r.ladderStep, r.decision, r.approver])).toEqual([
        [0, 'executed', null],
        [1, 'approved', 'bob'],
        [1, 'executed', 'bob'],
      ]);
      const same = await replayWith(h.config.rules);
      expect(same.operatorRows).toEqual([]);
      expect(ladderLines(same)).toEqual([
        [1, 'same', 'poweroff: awaiting_approval → approved by bob → executed (verifying)'],
      ]);
      expect(same.ladderCounts).toEqual({ same: 1, changed: 0 });
      expect(same.counts).toEqual({ same: 1, changed: 0, overturned: 0, notReplayable: 0 });
      // A budget of one call an hour: step 1's call spends it, step 2 is denied before it asks, and says so.
      const report = await replayWith(h.config.rules, { budgetPerHour: 1 });
      expect(ladderLines(report)).toEqual([[1, 'changed', 'poweroff: denied_budget']]);
      expect(report.ladderCounts).toEqual({ same: 0, changed: 1 });
    });

    it('replays an operator withdrawal of a ladder step, and of a request, as that operator: no change', async () => {
      const { rows, replayWith, h } = await ladderStepSettled(await (await backend.fresh()).open(), 'withdraw');
      expect(rows.map((r) => [r.ladderStep, r.decision, r.approver])).toEqual([
        [0, 'executed', null],
        [1, 'withdrawn', 'bob'],
      ]);
      const report = await replayWith(h.config.rules);
      expect(ladderLines(report)).toEqual([[1, 'same', 'poweroff: awaiting_approval → withdrawn by bob']]);
      expect(report.ladderCounts).toEqual({ same: 1, changed: 0 });

      // A plain rule's request, withdrawn by an operator: replayed as bob's withdrawal, not the requester's.
      const plain = [rule({ alertname: 'ServerDown', action: 'powercycle', requireApproval: true, cooldownMs: MIN })];
      const p = await engineHarness({ principals: PRINCIPALS, rules: plain }, await (await backend.fresh()).open());
      h.clock.now = T0;
      p.clock.now = T0;
      const res = await remediationApp(p).inject({
        method: 'POST',
        url: '/api/v1/alertmanager',
        headers: { authorization: `Bearer ${TOKEN}` },
        payload: { version: '4', status: 'firing', alerts: [serverDown(T0)] },
      });
      expect(res.json().results.map((r: { decision: string }) => r.decision)).toEqual(['awaiting_approval']);
      p.clock.now = T0 + MIN;
      await p.engine.withdraw((await p.journal.awaitingApproval('default'))[0]!, 'bob');
      const replayed = await replayHarness(p, plain, { from: T0 - MIN, to: T0 + 2 * MIN });
      expect(
        replayed.deliveries.map((d) => [d.verdict, outcomesText(d.recorded), outcomesText(d.replayed ?? [])]),
      ).toEqual([
        [
          'same',
          'powercycle: awaiting_approval → withdrawn by bob',
          'powercycle: awaiting_approval → withdrawn by bob',
        ],
      ]);
    });

    it('replays a climb at the moment it was recorded when the tick that saw the deadline ran late', async () => {
      const steps: LadderStep[] = [
        { action: 'powercycle', verifyWithinMs: 10 * MIN, requireApproval: false, cooldownMs: MIN },
        { action: 'powercycle', verifyWithinMs: 20 * MIN, requireApproval: false, cooldownMs: 15 * MIN },
      ];
      const rules = [
        rule({ alertname: 'ServerDown', action: 'powercycle', verifyWithinMs: 10 * MIN, cooldownMs: MIN, steps }),
      ];
      const h = await engineHarness({ principals: PRINCIPALS, rules }, await (await backend.fresh()).open());
      h.clock.now = T0;
      const res = await remediationApp(h).inject({
        method: 'POST',
        url: '/api/v1/alertmanager',
        headers: { authorization: `Bearer ${TOKEN}` },
        payload: { version: '4', status: 'firing', alerts: [serverDown(T0)] },
      });
      expect(res.json().results.map((r: { decision: string }) => r.decision)).toEqual(['executed']);
      // The daemon was down from 9m to 16m: its first tick after step 1's deadline (10m) is at 16m, past step
      // 2's cooldown (15m after step 1's call).
      h.clock.now = T0 + 16 * MIN;
      await h.engine.tick();
      const rows = (await h.journal.list({ limit: 100 })).reverse();
      expect(rows.map((r) => [r.ladderStep, r.decision, r.verification, (r.verifiedAt ?? T0) - T0])).toEqual([
        [0, 'executed', 'ineffective', 10 * MIN],
        [1, 'executed', 'verifying', 0],
      ]);
      const report = await replayHarness(h, rules, { from: T0 - MIN, to: T0 + 17 * MIN }, rows);
      expect(ladderLines(report)).toEqual([[1, 'same', 'powercycle: executed (verifying)']]);
      expect(report.ladderCounts).toEqual({ same: 1, changed: 0 });
    });

    it('decides a step no recorded gate reading covers as unknown, not on the last event read', async () => {
      const db = await backend.fresh();
      const stateDir = tempDir();
      const where = db.url !== undefined ? { url: db.url } : { stateDir };
      const config = await loadConfig(configFile(where, 'poweroff'));
      const am = {
        alerts: async () => [],
        status: async () => ({ startedAt: T0 - 60 * MIN }),
        silences: async () => [],
        createSilence: async () => 'silence',
        expireSilence: async () => {},
      };
      const store = db.url !== undefined ? await db.open() : openTestStore(join(stateDir, 'journal.db'));
      const h = await engineHarness({ ...config.remediation, principals: PRINCIPALS }, store, 2000, {
        alertmanager: am,
      });
      const app = remediationApp(h);
      // Fires at 0 (the gate reads none firing), resolves at 8m: step 1 verified, no ladder.
      for (const [minutes, status] of [
        [0, 'firing'],
        [8, 'resolved'],
      ] as const) {
        h.clock.now = T0 + minutes * MIN;
        const res = await app.inject({
          method: 'POST',
          url: '/api/v1/alertmanager',
          headers: { authorization: `Bearer ${TOKEN}` },
          payload: { version: '4', status, alerts: [{ ...serverDown(T0), status }] },
        });
        expect(res.statusCode).toBe(200);
      }
      const rows = (await h.journal.list({ limit: 100 })).reverse();
      expect(rows.map((r) => [r.ladderStep, r.decision, r.verification, r.gate?.read ?? null])).toEqual([
        [0, 'executed', 'verified', 'none_firing'],
        [null, 'resolved', null, null],
      ]);
      const circuits = new Map([['default', await h.journal.circuit('default')]]);
      await h.engine.stop();
      if (db.url === undefined) await store.close();
      // Step 1 verified within 5m now: its ladder climbs at the next replayed moment (8m), which recorded no
      // reading of the gate for a step 2: unknown, denied as the daemon denies when Alertmanager cannot be read.
      const [ladder] = config.remediation.rules;
      const steps = ladder!.steps!.map((s, i) => (i === 0 ? { ...s, verifyWithinMs: 5 * MIN } : s));
      const report = await replay(
        { ...config, remediation: { ...config.remediation, rules: [{ ...ladder!, verifyWithinMs: 5 * MIN, steps }] } },
        {
          rows,
          circuits,
          from: T0 - MIN,
          to: T0 + 9 * MIN,
        },
      );
      expect(ladderLines(report)).toEqual([[1, 'changed', 'poweroff: denied_blocked']]);
    });
  });
}

/** The firing alert of server 100001 that started at `at` (ms). */
const serverDown = (at: number) => ({
  status: 'firing' as const,
  labels: { alertname: 'ServerDown', server_id: '100001' },
  startsAt: new Date(at).toISOString(),
  fingerprint: 'fp-x',
});

/** A two-step ladder whose second step (poweroff) asks for approval. */
function ladderRules() {
  const steps: LadderStep[] = [
    { action: 'powercycle', verifyWithinMs: 10 * MIN, requireApproval: false, cooldownMs: MIN },
    { action: 'poweroff', verifyWithinMs: 20 * MIN, requireApproval: true, cooldownMs: MIN },
  ];
  return [rule({ alertname: 'ServerDown', action: 'powercycle', verifyWithinMs: 10 * MIN, cooldownMs: MIN, steps })];
}

/** Each replayed ladder row: its step, verdict and the replayed outcome. */
const ladderLines = (report: Awaited<ReturnType<typeof replay>>) =>
  report.ladder.map((l) => [l.step, l.verdict, outcomesText(l.replayed ? [l.replayed] : [])]);

/**
 * A history on `store`: one alert, step 1 ineffective at 11m, step 2 awaits approval and bob settles it at 12m
 * (`settle`: approves or withdraws it); and a replay of it under given rules.
 */
async function ladderStepSettled(store: StateStore, settle: 'approve' | 'withdraw') {
  const h = await engineHarness({ principals: PRINCIPALS, rules: ladderRules() }, store);
  const app = remediationApp(h);
  h.clock.now = T0;
  const res = await app.inject({
    method: 'POST',
    url: '/api/v1/alertmanager',
    headers: { authorization: `Bearer ${TOKEN}` },
    payload: {
      version: '4',
      status: 'firing',
      alerts: [serverDown(T0)],
    },
  });
  expect(res.statusCode).toBe(200);
  h.clock.now = T0 + 11 * MIN;
  await h.engine.tick();
  const awaiting = (await h.journal.awaitingApproval('default'))[0]!;
  expect([awaiting.ladderStep, awaiting.action]).toEqual([1, 'poweroff']);
  h.clock.now = T0 + 12 * MIN;
  if (settle === 'approve') await h.engine.approve(awaiting, 'bob');
  else await h.engine.withdraw(awaiting, 'bob');
  const rows = (await h.journal.list({ limit: 100 })).reverse();
  const circuits = new Map([['default', await h.journal.circuit('default')]]);
  const replayWith = (rules: RemediationRule[], change: Partial<Config['remediation']> = {}) =>
    replay(replayConfig(h.config, rules, change), { rows, circuits, from: T0 - MIN, to: T0 + 13 * MIN });
  return { h, rows, replayWith };
}
