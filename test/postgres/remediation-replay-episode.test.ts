/**
 * `remediation replay` of a history with resolved episodes (issue 49), on both state-store backends: the
 * resolution journaled `resolved`, and the request it withdrew, are replayed as what they were — the resolved
 * delivery resolves the replayed episode again — so the same rules report no change. The rows of an escalation
 * ladder (a later step, the episode escalated) are no deliveries: the replayed engine climbs its own ladder,
 * also where the recorded climb was lost and handed to a person (then the two differ, said as a change).
 * With an outage gate, each decision records what the gate read (its blocking alert, or none) and replay reads
 * that again: the recorded decisions, an approval's execution among them, replay the same; a recorded reading
 * changed replays changed.
 */
import { describe, expect, it } from 'vitest';
import type { AlertmanagerAlert } from '../../src/alertmanager/client.js';
import { replay } from '../../src/cli/remediation-replay.js';
import { makeRequest } from '../../src/remediation/request.js';
import { type LabelMatcher, parseMatcher } from '../../src/config/matchers.js';
import type { LadderStep, Principal, RemediationRule } from '../../src/config/types.js';
import {
  engineHarness,
  failingStore,
  remediationApp,
  rule,
  SAFETY_WITHOUT_ATTACK_GUARD,
} from '../helpers/remediation.js';
import { replayConfig, replayHarness } from '../helpers/replay.js';
import { backends } from '../helpers/store-backends.js';

const TOKEN = 'alertmanager-token-0123456789abcdef';
const PRINCIPALS: Principal[] = [{ name: 'alertmanager', bearerToken: TOKEN, roles: ['webhook'] }];
const MIN = 60_000;
const T0 = Date.UTC(2026, 10, 21, 12);
const RULES: RemediationRule[] = [
  rule({ alertname: 'ServerDown', action: 'powercycle', verifyWithinMs: 10 * MIN }),
  rule({ alertname: 'Held', action: 'powercycle', requireApproval: true }),
];

const ladderStep = (verifyMin: number): LadderStep => ({
  action: 'powercycle',
  verifyWithinMs: verifyMin * MIN,
  requireApproval: false,
  cooldownMs: MIN,
});
/** A ladder of two power cycles, verified within 10 and 20 minutes. */
const LADDER: RemediationRule[] = [
  rule({
    alertname: 'ServerDown',
    action: 'powercycle',
    verifyWithinMs: 10 * MIN,
    cooldownMs: MIN,
    steps: [ladderStep(10), ladderStep(20)],
  }),
];

/** Delivers LADDER's alert for server 100001, firing since T0, at T0 + `minutes`; returns the decisions. */
async function fireLadder(h: Awaited<ReturnType<typeof engineHarness>>, minutes = 0): Promise<string[]> {
  h.clock.now = T0 + minutes * MIN;
  const res = await remediationApp(h).inject({
    method: 'POST',
    url: '/api/v1/alertmanager',
    headers: { authorization: `Bearer ${TOKEN}` },
    payload: {
      version: '4',
      status: 'firing',
      alerts: [
        {
          status: 'firing',
          labels: { alertname: 'ServerDown', server_id: '100001' },
          startsAt: new Date(T0).toISOString(),
          fingerprint: 'fp-l',
        },
      ],
    },
  });
  expect(res.statusCode).toBe(200);
  return res.json().results.map((r: { decision: string }) => r.decision);
}

for (const backend of backends()) {
  describe.skipIf(backend.skip)(`remediation replay of resolved episodes (${backend.name})`, () => {
    it('reports no change under the same rules', async () => {
      const db = await backend.fresh();
      const h = await engineHarness({ principals: PRINCIPALS, rules: RULES }, await db.open());
      const app = remediationApp(h);
      const deliver = async (minutes: number, status: 'firing' | 'resolved', alertname: string, serverId: string) => {
        h.clock.now = T0 + minutes * MIN;
        const labels = { alertname, server_id: serverId };
        const startsAt = new Date(T0).toISOString();
        const res = await app.inject({
          method: 'POST',
          url: '/api/v1/alertmanager',
          headers: { authorization: `Bearer ${TOKEN}` },
          payload: { version: '4', status, alerts: [{ status, labels, startsAt, fingerprint: `fp-${serverId}` }] },
        });
        expect(res.statusCode).toBe(200);
      };
      await deliver(0, 'firing', 'ServerDown', '100001');
      await deliver(0.5, 'firing', 'Held', '100002');
      await deliver(2, 'resolved', 'ServerDown', '100001');
      await deliver(3, 'resolved', 'Held', '100002');
      const rows = (await h.journal.list({ limit: 100 })).reverse();
      expect(rows.map((r) => [r.serverId, r.decision, r.verification])).toEqual([
        ['100001', 'executed', 'verified'],
        ['100002', 'withdrawn', null],
        ['100001', 'resolved', null],
        ['100002', 'resolved', null],
      ]);
      const report = await replayHarness(h, RULES, { from: T0 - MIN, to: T0 + 30 * MIN }, rows);
      expect(report.deliveries.map((d) => [d.serverId, d.status, d.verdict])).toEqual([
        ['100001', 'firing', 'same'],
        ['100002', 'firing', 'same'],
        ['100001', 'resolved', 'same'],
        ['100002', 'resolved', 'same'],
      ]);
      expect(report.counts).toEqual({ same: 4, changed: 0, overturned: 0, notReplayable: 0 });
    });

    it('replays a ladder as what it was: its steps and escalation are not deliveries', async () => {
      const rules = LADDER;
      const db = await backend.fresh();
      const h = await engineHarness({ principals: PRINCIPALS, rules }, await db.open());
      await fireLadder(h);
      h.clock.now += 11 * MIN;
      await h.engine.tick();
      // The same climb asked again (a second replica's tick): a duplicate row, no step of the ladder.
      const first = (await h.journal.list({ limit: 2 }))[1]!;
      const again = await h.engine.request(
        makeRequest({ kind: 'ladder', row: first, steps: rules[0]!.steps!, climb: true }),
      );
      expect(again.decision).toBe('duplicate');
      h.clock.now += 21 * MIN;
      await h.engine.tick();
      const rows = (await h.journal.list({ limit: 100 })).reverse();
      expect(rows.map((r) => [r.ladderStep, r.decision])).toEqual([
        [0, 'executed'],
        [1, 'executed'],
        [1, 'duplicate'],
        [1, 'escalated'],
      ]);
      const report = await replayHarness(h, rules, { from: T0 - MIN, to: T0 + 60 * MIN }, rows);
      expect(report.deliveries.map((d) => [d.serverId, d.verdict, d.recorded.map((o) => o.decision)])).toEqual([
        ['100001', 'same', ['executed']],
      ]);
      expect(report.counts).toEqual({ same: 1, changed: 0, overturned: 0, notReplayable: 0 });
      expect(report.ladder.map((l) => [l.step, l.escalated, l.verdict])).toEqual([
        [1, false, 'same'],
        [1, true, 'same'],
      ]);
    });

    it('replays a lost climb that was handed to a person as the climb the rules ask for: a change, said as such', async () => {
      const rules = LADDER;
      const db = await backend.fresh();
      const inner = await db.open();
      // The journal fails the climb's transaction in the tick that settles step 1: the climb is lost.
      let failClimb = false;
      const store = failingStore(inner, ['transaction'], () => failClimb);
      const h = await engineHarness({ principals: PRINCIPALS, rules }, store);
      expect(await fireLadder(h)).toEqual(['executed']);
      h.clock.now = T0 + 11 * MIN;
      failClimb = true;
      await h.engine.tick();
      failClimb = false;
      // The climb was lost: a tick past the grace hands the episode to a person.
      h.clock.now = T0 + 13 * MIN;
      await h.engine.tick();
      const rows = (await h.journal.list({ limit: 100 })).reverse();
      expect(rows.map((r) => [r.ladderStep, r.decision, r.verification])).toEqual([
        [0, 'executed', 'ineffective'],
        [0, 'escalated', null],
      ]);
      // Replay cannot stop where the daemon stopped: its ladder climbs as the rules ask, and the recorded
      // hand-over is a ladder row that changed — a gate under `--exit-code` flags it for a person to read.
      const report = await replayHarness(h, rules, { from: T0 - MIN, to: T0 + 60 * MIN }, rows);
      expect(report.deliveries.map((d) => [d.serverId, d.verdict, d.recorded.map((o) => o.decision)])).toEqual([
        ['100001', 'same', ['executed']],
      ]);
      expect(
        report.ladder.map((l) => [l.step, l.escalated, l.verdict, l.recorded?.decision, l.replayed?.decision]),
      ).toEqual([
        [0, true, 'changed', 'escalated', undefined],
        // Replayed only: step 2, ineffective too, and the escalation after it.
        [1, true, 'changed', undefined, 'escalated'],
        [1, false, 'changed', undefined, 'executed'],
      ]);
    });

    it('replays what the outage gate read: the blocking alert, or none', async () => {
      const held: AlertmanagerAlert[] = [];
      const am = {
        alerts: async () => [...held],
        status: async () => ({ startedAt: 0 }),
        silences: async () => [],
        createSilence: async () => 'silence',
        expireSilence: async () => {},
      };
      const gate = [parseMatcher('alertname = "DatacenterOutage"') as LabelMatcher];
      const rules = [
        rule({ alertname: 'ServerDown', action: 'powercycle' }),
        rule({ alertname: 'Held', action: 'powercycle', requireApproval: true }),
      ];
      const principals: Principal[] = [
        ...PRINCIPALS,
        { name: 'bob', bearerToken: 'bob-token-0123456789abcdef', roles: ['operator'] },
      ];
      const db = await backend.fresh();
      const h = await engineHarness(
        { principals, rules, safety: { ...SAFETY_WITHOUT_ATTACK_GUARD, blockWhileFiring: gate } },
        await db.open(),
        2000,
        { alertmanager: am },
      );
      const app = remediationApp(h);
      const deliver = async (minutes: number, alertname: string, serverId: string) => {
        h.clock.now = T0 + minutes * MIN;
        const labels = { alertname, server_id: serverId };
        const res = await app.inject({
          method: 'POST',
          url: '/api/v1/alertmanager',
          headers: { authorization: `Bearer ${TOKEN}` },
          payload: {
            version: '4',
            status: 'firing',
            alerts: [
              { status: 'firing', labels, startsAt: new Date(h.clock.now).toISOString(), fingerprint: `fp-${minutes}` },
            ],
          },
        });
        expect(res.statusCode).toBe(200);
        return res.json().results[0] as { id: number; decision: string };
      };
      expect((await deliver(0, 'ServerDown', '100001')).decision).toBe('executed');
      held.push({
        fingerprint: 'o',
        labels: { alertname: 'DatacenterOutage', dc: 'fra1' },
        startsAt: new Date(T0).toISOString(),
        state: 'active',
        silencedBy: [],
      });
      const blockedRow = await deliver(1, 'ServerDown', '100002');
      expect(blockedRow.decision).toBe('denied_blocked');
      // The journal API gives the reading as an object, beside the other fields.
      const shown = await app.inject({
        url: `/api/v1/actions/${blockedRow.id}`,
        headers: { authorization: 'Bearer bob-token-0123456789abcdef' },
      });
      expect(shown.statusCode).toBe(200);
      expect(shown.json()).toMatchObject({
        decision: 'denied_blocked',
        gate: { read: 'blocked', alert: { alertname: 'DatacenterOutage', fingerprint: 'o' }, more: 0 },
      });
      held.length = 0;
      const asked = await deliver(2, 'Held', '100003');
      h.clock.now = T0 + 3 * MIN;
      const approved = await app.inject({
        method: 'POST',
        url: `/api/v1/actions/${asked.id}/approve`,
        headers: { authorization: 'Bearer bob-token-0123456789abcdef' },
        payload: {},
      });
      expect(approved.json().execution.decision).toBe('executed');
      const rows = (await h.journal.list({ limit: 100 })).reverse();
      // Each row the gate ran for records what it read: none firing, or the blocking alert.
      const none = { read: 'none_firing' };
      expect(rows.map((r) => [r.serverId, r.decision, r.gate])).toEqual([
        ['100001', 'executed', none],
        [
          '100002',
          'denied_blocked',
          {
            read: 'blocked',
            alert: {
              alertname: 'DatacenterOutage',
              fingerprint: 'o',
              labels: { alertname: 'DatacenterOutage', dc: 'fra1' },
            },
            more: 0,
          },
        ],
        ['100003', 'approved', none],
        ['100003', 'executed', none],
      ]);
      const circuit = await h.journal.circuit('default');
      const again = (history: typeof rows) =>
        replay(replayConfig(h.config, rules), {
          rows: history,
          circuits: new Map([['default', circuit]]),
          from: T0 - MIN,
          to: T0 + 30 * MIN,
        });
      const report = await again(rows);
      expect(
        report.deliveries.map((d) => [d.serverId, d.verdict, d.replayed?.map((o) => o.execution ?? o.decision)]),
      ).toEqual([
        ['100001', 'same', ['executed']],
        ['100002', 'same', ['denied_blocked']],
        ['100003', 'same', ['executed']],
      ]);
      expect(report.counts).toEqual({ same: 3, changed: 0, overturned: 0, notReplayable: 0 });
      // Replay reads the recorded reading, not the decision: the first row recorded as blocked replays blocked.
      const blocked = rows[1]!.gate;
      const changed = await again(rows.map((r, i) => (i === 0 ? { ...r, gate: blocked } : r)));
      expect(changed.deliveries.map((d) => [d.serverId, d.verdict, d.replayed?.map((o) => o.decision)])).toEqual([
        ['100001', 'changed', ['denied_blocked']],
        ['100002', 'same', ['denied_blocked']],
        ['100003', 'same', ['awaiting_approval']],
      ]);
    });
  });
}
