/**
 * `remediation replay` is exact about the human path, on both state-store backends: a journal written through
 * the daemon's routes (alerts that await approval, approved, denied, expired; an operator's power cycle and
 * close of the breaker) replayed under the same rules is the same line for line — the row an approval wrote
 * when it ran is no delivery of its own, the approval is applied again, the operator's row is replayed — and
 * under rules that ask nobody, the denial the new rules would overturn is flagged apart from a plain change.
 * The recorded breaker, open before the first moment replayed, denies the power actions until the operator's
 * recorded close.
 */
import { describe, expect, it } from 'vitest';
import type { Config, Principal, RemediationRule } from '../../src/config/types.js';
import { replay, type Recorded } from '../../src/cli/remediation-replay.js';
import { reportText } from '../../src/cli/replay-report.js';
import { engineHarness, remediationApp, rule } from '../helpers/remediation.js';
import { replayConfig } from '../helpers/replay.js';
import { backends } from '../helpers/store-backends.js';

const token = (name: string) => `${name}-token-0123456789abcdef`;
const bearer = (name: string) => ({ authorization: `Bearer ${token(name)}` });
const PRINCIPALS: Principal[] = [
  { name: 'alertmanager', bearerToken: token('alertmanager'), roles: ['webhook'] },
  { name: 'bob', bearerToken: token('bob'), roles: ['operator', 'reader'] },
];
const MIN = 60_000;
const T0 = Date.UTC(2026, 10, 21, 12);
const at = (minutes: number) => new Date(T0 + minutes * MIN).toISOString();

const powercycle = (requireApproval: boolean): RemediationRule[] => [
  rule({ alertname: 'Unreach', action: 'powercycle', cooldownMs: MIN, requireApproval }),
];

for (const backend of backends()) {
  describe.skipIf(backend.skip)(`remediation replay of the human path (${backend.name})`, () => {
    /** Writes the journal through the routes; returns what replay reads of it and the recorded config. */
    async function record(): Promise<{ recorded: Recorded; remediation: Config['remediation'] }> {
      const db = await backend.fresh();
      const h = await engineHarness({ principals: PRINCIPALS, rules: powercycle(true) }, await db.open());
      const app = remediationApp(h);
      const post = async (who: string, url: string, payload: object) => {
        const res = await app.inject({ method: 'POST', url, headers: bearer(who), payload });
        expect(res.statusCode, res.body).toBe(200);
        return res.json();
      };
      const deliver = async (minutes: number, fingerprint: string, serverId: string) => {
        h.clock.now = T0 + minutes * MIN;
        const startsAt = at(minutes);
        const labels = { alertname: 'Unreach', server_id: serverId };
        const reply = await post('alertmanager', '/api/v1/alertmanager', {
          version: '4',
          status: 'firing',
          alerts: [{ status: 'firing', labels, startsAt, fingerprint }],
        });
        return reply.results[0] as { id: number; decision: string };
      };
      const later = (minutes: number) => {
        h.clock.now = T0 + minutes * MIN;
      };

      const approved = await deliver(0, 'fp-1', '100001');
      expect(approved.decision).toBe('awaiting_approval');
      later(1);
      const ran = await post('bob', `/api/v1/actions/${approved.id}/approve`, { reason: 'checked IPMI' });
      expect(ran.execution.decision).toBe('executed');
      const denied = await deliver(2, 'fp-2', '100002');
      later(3);
      await post('bob', `/api/v1/actions/${denied.id}/deny`, { reason: 'host is being moved' });
      expect((await deliver(4, 'fp-3', '100003')).decision).toBe('awaiting_approval');
      later(5);
      expect((await post('bob', '/api/v1/actions/powercycle', { server_id: '100003' })).decision).toBe('executed');
      later(5.25);
      expect((await post('bob', '/api/v1/remediation/circuit/close', { reason: 'drill' })).decision).toBe(
        'circuit_closed',
      );
      // Within the 1-minute cooldown of the operator's power cycle.
      expect((await deliver(5.5, 'fp-4', '100003')).decision).toBe('cooldown');
      later(30);
      await h.engine.tick();
      const rows = (await h.journal.list({ limit: 100 })).reverse();
      expect(rows.find((r) => r.id === 3)?.decision).toBe('denied_by_approver');
      const circuits = new Map([['default', await h.journal.circuit('default')]]);
      return { recorded: { rows, circuits, from: T0 - MIN, to: T0 + 60 * MIN }, remediation: h.config };
    }

    it('under the same rules every delivery is the same: the approval applied again, the operator row replayed', async () => {
      const { recorded, remediation } = await record();
      const report = await replay(replayConfig(remediation, powercycle(true)), recorded);
      const lines = reportText(report).split('\n');
      expect(lines.slice(0, 6).map((l) => l.replace(/^\S+ /, ''))).toEqual([
        'Unreach firing server 100001: then powercycle: awaiting_approval → approved by bob → executed; now powercycle: awaiting_approval → approved by bob → executed',
        'Unreach firing server 100002: then powercycle: awaiting_approval → denied_by_approver by bob; now powercycle: awaiting_approval → denied_by_approver by bob',
        'Unreach firing server 100003: then powercycle: awaiting_approval → expired; now powercycle: awaiting_approval → expired',
        `operator bob powercycle server 100003 (journal ${report.operatorRows[0]!.journalId}): executed; replayed as recorded`,
        `operator bob circuit_close (journal ${report.operatorRows[1]!.journalId}): circuit_closed; replayed as recorded`,
        'Unreach firing server 100003: then powercycle: cooldown; now powercycle: cooldown',
      ]);
      // The row the approval wrote when it ran is no delivery: four deliveries, not five.
      expect(report.counts).toEqual({ same: 4, changed: 0, overturned: 0, notReplayable: 0 });
      expect(lines.slice(6)).toEqual([
        '',
        '4 deliveries: 4 same, 0 changed, 0 overturn a human decision, 0 not replayable',
        '2 operator rows replayed as recorded',
        '',
      ]);
    });

    it('an approval whose request was before the window is replayed as recorded, not as a delivery', async () => {
      const { recorded, remediation } = await record();
      const from = T0 + 0.5 * MIN;
      const report = await replay(replayConfig(remediation, powercycle(true)), {
        ...recorded,
        rows: recorded.rows.filter((r) => r.createdAt >= from),
        from,
      });
      expect(report.deliveries.map((d) => d.serverId)).toEqual(['100002', '100003', '100003']);
      expect(report.operatorRows.map((r) => [r.source, r.principal, r.action, r.serverId, r.decision])).toEqual([
        ['alert', 'alertmanager', 'powercycle', '100001', 'executed'],
        ['operator', 'bob', 'powercycle', '100003', 'executed'],
        // No empty-string id (issue 51): a breaker's close names no server.
        ['operator', 'bob', 'circuit_close', null, 'circuit_closed'],
      ]);
      expect(report.counts).toEqual({ same: 3, changed: 0, overturned: 0, notReplayable: 0 });
    });

    it('under rules that ask nobody, the overturned denial is flagged apart from the changes', async () => {
      const { recorded, remediation } = await record();
      const report = await replay(replayConfig(remediation, powercycle(false)), recorded);
      expect(report.deliveries.map((d) => [d.serverId, d.verdict, d.replayed?.map((o) => o.decision)])).toEqual([
        ['100001', 'changed', ['executed']],
        ['100002', 'overturned', ['executed']],
        ['100003', 'changed', ['executed']],
        // The operator's power cycle is replayed: the alert is still inside its cooldown.
        ['100003', 'same', ['cooldown']],
      ]);
      expect(report.deliveries[1]!.overturned).toEqual([
        { action: 'powercycle', decision: 'denied_by_approver', by: 'bob' },
      ]);
      expect(report.counts).toEqual({ same: 1, changed: 2, overturned: 1, notReplayable: 0 });
      const text = reportText(report);
      expect(text).toContain(
        'Unreach firing server 100002: then powercycle: awaiting_approval → denied_by_approver by bob; now powercycle: executed  (overturns powercycle denied_by_approver by bob)\n',
      );
      expect(text).toContain('4 deliveries: 1 same, 2 changed, 1 overturn a human decision, 0 not replayable\n');
      expect(text).toContain(
        '  1× powercycle: awaiting_approval → denied_by_approver by bob -> powercycle: executed\n',
      );
    });

    it('the recorded breaker, open before the window, denies power actions until the recorded close', async () => {
      const { recorded, remediation } = await record();
      const open = { openedAt: T0 - 2 * MIN, closedAt: null, message: 'opened: 3 servers in 10m' };
      const report = await replay(replayConfig(remediation, powercycle(false)), {
        ...recorded,
        circuits: new Map([['default', open]]),
      });
      expect(report.deliveries.map((d) => d.replayed?.map((o) => o.decision)[0])).toEqual([
        'denied_circuit_open',
        'denied_circuit_open',
        'denied_circuit_open',
        'cooldown',
      ]);
      // The approval the person gave is overturned: the breaker would have denied the request.
      expect(report.deliveries[0]!.verdict).toBe('overturned');
      expect(report.deliveries[1]!.verdict).toBe('changed');
    });
  });
}
