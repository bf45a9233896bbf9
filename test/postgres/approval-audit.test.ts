/**
 * Finding and auditing approvals, on both state-store backends: `GET /api/v1/actions` filters by `decision` and
 * `approver` (refusing values that are neither with a plain sentence); the approver's and the denier's reasons
 * are journaled in their own field, the approval time also as ISO-8601, and an expired row has neither
 * approver nor approval time; an approval that a guard denies answers at the top level that nothing was sent;
 * the status page, behind web.auth, lists what waits and shows a banner while a breaker is open.
 */
import { describe, expect, it } from 'vitest';
import { AccountState } from '../../src/collectors/account-state.js';
import { DEFAULT_SCHEDULES } from '../../src/config/schema.js';
import { localGraphs } from '../../src/graphs/source.js';
import type { Principal } from '../../src/config/types.js';
import { renderStatusPage } from '../../src/http/routes/status-page.js';
import { statusViewOf } from '../../src/http/status-view.js';
import { engineHarness, remediationApp, rule } from '../helpers/remediation.js';
import { backends } from '../helpers/store-backends.js';

const token = (name: string) => `${name}-token-0123456789abcdef`;
const bearer = (name: string) => ({ authorization: `Bearer ${token(name)}` });
const PRINCIPALS: Principal[] = [
  { name: 'alertmanager', bearerToken: token('alertmanager'), roles: ['webhook'] },
  { name: 'alice', bearerToken: token('alice'), roles: ['operator', 'reader'], requireApproval: true },
  { name: 'bob', bearerToken: token('bob'), roles: ['operator'] },
  { name: 'carol', bearerToken: token('carol'), roles: ['operator'] },
  { name: 'audit', bearerToken: token('audit'), roles: ['reader'] },
];

type Row = { id: number; decision: string; approver: string | null; serverId: string };
const MIN = 60_000;
const POWERCYCLE = '/api/v1/dedicated/powercycle';

for (const backend of backends()) {
  describe.skipIf(backend.skip)(`finding and auditing approvals (${backend.name})`, () => {
    async function setup() {
      const db = await backend.fresh();
      const h = await engineHarness(
        {
          principals: PRINCIPALS,
          rules: [rule({ alertname: 'BaremetalServerUnreachable', action: 'powercycle', requireApproval: true })],
        },
        await db.open(),
      );
      const app = remediationApp(h);
      const ask = async (serverId: string) =>
        (
          await app.inject({
            method: 'POST',
            url: '/api/v1/actions/powercycle',
            headers: bearer('alice'),
            payload: { server_id: serverId, reason: 'hung' },
          })
        ).json().id as number;
      const settle = (verb: 'approve' | 'deny', id: number, who: string, payload: object = {}) =>
        app.inject({ method: 'POST', url: `/api/v1/actions/${id}/${verb}`, headers: bearer(who), payload });
      const list = async (query: string): Promise<Row[]> => {
        const res = await app.inject({ url: `/api/v1/actions${query}`, headers: bearer('audit') });
        expect(res.statusCode).toBe(200);
        return res.json().actions;
      };
      return { ...h, app, ask, settle, list };
    }

    it('lists the requests awaiting approval, and what an approver settled', async () => {
      const { ask, settle, list } = await setup();
      const [first, second, third] = [await ask('100001'), await ask('100002'), await ask('100003')];
      const execution = (await settle('approve', first, 'bob')).json().execution.id as number;
      await settle('deny', second, 'carol', { reason: 'not now' });

      expect((await list('?decision=awaiting_approval')).map((r) => r.id)).toEqual([third]);
      expect((await list('?decision=denied_by_approver')).map((r) => [r.id, r.approver])).toEqual([[second, 'carol']]);
      // The awaiting row and its execution both name the approver.
      expect((await list('?approver=bob')).map((r) => [r.id, r.decision])).toEqual([
        [execution, 'executed'],
        [first, 'approved'],
      ]);
      expect((await list('?approver=carol&decision=approved')).map((r) => r.id)).toEqual([]);
      expect(await list('?approver=nobody')).toEqual([]);
      expect((await list('?decision=awaiting_approval&server_id=100003&action=powercycle')).map((r) => r.id)).toEqual([
        third,
      ]);
    });

    it("journals the approver's reason apart from the requester's, on the row and its execution", async () => {
      const { ask, settle, list, clock } = await setup();
      const id = await ask('100001');
      clock.now += MIN;
      const approved = await settle('approve', id, 'bob', { reason: 'checked IPMI, host hung' });
      expect(approved.statusCode).toBe(200);
      const iso = new Date(clock.now).toISOString();
      const rows = await list('?approver=bob');
      expect(rows).toHaveLength(2);
      for (const row of rows)
        expect(row).toMatchObject({
          principal: 'alice',
          reason: 'hung',
          approver: 'bob',
          approverReason: 'checked IPMI, host hung',
          approvedAt: clock.now,
          approvedAtIso: iso,
        });
      // Without a reason, none is journaled.
      const other = await ask('100002');
      await settle('approve', other, 'carol');
      expect(
        (await list('?approver=carol')).map((r) => (r as unknown as Record<string, unknown>).approverReason),
      ).toEqual([null, null]);
    });

    it("journals the denier's reason in its own field; the message still says it", async () => {
      const { ask, settle, list, clock } = await setup();
      const id = await ask('100001');
      clock.now += MIN;
      await settle('deny', id, 'bob', { reason: 'not during the migration' });
      expect(await list('?decision=denied_by_approver')).toMatchObject([
        {
          id,
          reason: 'hung',
          approver: 'bob',
          approverReason: 'not during the migration',
          approvedAt: clock.now,
          approvedAtIso: new Date(clock.now).toISOString(),
          message: 'denied by bob: not during the migration; nothing sent',
        },
      ]);
    });

    it('leaves an expired row without approver, reason or approval time, by the ticker or a late approval', async () => {
      const { ask, settle, list, clock, engine } = await setup();
      const ticked = await ask('100001');
      clock.now += 16 * MIN;
      await engine.tick();
      // Expired by a late approval before any tick noticed it.
      const late = await ask('100002');
      clock.now += 16 * MIN;
      expect((await settle('approve', late, 'bob', { reason: 'sorry, late' })).statusCode).toBe(409);
      const rows = await list('?decision=expired');
      expect(rows.map((r) => r.id)).toEqual([late, ticked]);
      for (const row of rows) {
        expect(row).toMatchObject({ approver: null, approverReason: null, approvedAt: null, approvedAtIso: null });
        expect((row as unknown as { completedAt: string }).completedAt).toMatch(/^\d{4}-\d\d-\d\dT/);
      }
    });

    it('answers 409 at the top level when a guard denies the approved request: nothing sent, the approval spent', async () => {
      const { ask, settle, sim, journal, clock } = await setup();
      const id = await ask('100001');
      await journal.openCircuit('default', clock.now, 'opened by the test');
      clock.now += MIN;
      const res = await settle('approve', id, 'bob', { reason: 'checked IPMI' });
      expect(res.statusCode).toBe(409);
      const body = res.json();
      expect(body).toMatchObject({
        statusCode: 409,
        code: 'BM_ERR_APPROVED_NOT_SENT',
        error: 'Conflict',
        sent: false,
        decision: 'denied_circuit_open',
        // The fields the 200 had, kept.
        approved: id,
        approver: 'bob',
        execution: { decision: 'denied_circuit_open' },
      });
      expect(body.message).toMatch(
        new RegExp(
          `^approved by bob, but nothing was sent: journal entry ${body.execution.id} is denied_circuit_open \\(the circuit breaker of account default is open`,
        ),
      );
      expect(sim.callsTo(POWERCYCLE)).toHaveLength(0);
      expect(await journal.get(id)).toMatchObject({
        decision: 'approved',
        approverReason: 'checked IPMI',
        message: `approved by bob; nothing sent: journal entry ${body.execution.id} is denied_circuit_open`,
      });
      // Spent: approving again is the plain conflict, the breaker closed or not.
      await journal.closeCircuit('default', clock.now);
      expect((await settle('approve', id, 'carol')).json()).toMatchObject({ code: 'BM_ERR_CONFLICT' });
      expect(sim.callsTo(POWERCYCLE)).toHaveLength(0);
    });

    it('answers 200 with sent: true when the approved request was sent', async () => {
      const { ask, settle, sim } = await setup();
      const id = await ask('100001');
      const res = await settle('approve', id, 'bob');
      expect(res.statusCode).toBe(200);
      const body = res.json();
      expect(body).toMatchObject({
        approved: id,
        approver: 'bob',
        sent: true,
        decision: 'executed',
        execution: { decision: 'executed' },
        message: `approved by bob; sent as journal entry ${body.execution.id}: executed`,
      });
      expect(body.code).toBeUndefined();
      expect(sim.callsTo(POWERCYCLE)).toHaveLength(1);
    });

    it('shows the requests awaiting approval and an open breaker on the status page behind web.auth, their counts to anyone', async () => {
      const h = await setup();
      const { ask, settle, journal, clock, app } = h;
      const [first, second] = [await ask('100001'), await ask('100002')];
      await settle('deny', second, 'bob');
      const alert = await app.inject({
        method: 'POST',
        url: '/api/v1/alertmanager',
        headers: bearer('alertmanager'),
        payload: {
          version: '4',
          status: 'firing',
          alerts: [
            {
              status: 'firing',
              labels: { alertname: 'BaremetalServerUnreachable', server_id: '100003' },
              startsAt: '2026-11-21T11:59:00Z',
              fingerprint: 'f1',
            },
          ],
        },
      });
      const fromAlert = alert.json().results[0].id as number;
      await journal.openCircuit('default', clock.now, 'opened <by> the test');
      const state = new AccountState({
        schedules: { ...DEFAULT_SCHEDULES, firewall_under_attack: DEFAULT_SCHEDULES.firewall },
        services: { colocationIds: [], transitIds: [] },
      });
      const statusView = statusViewOf({
        version: 'test',
        accounts: new Map([['default', { state, polls: { jobs: new Map() }, metrics: h.metrics }]]),
        store: journal,
        graphs: localGraphs(new Map()),
        approvalTimeoutMs: 15 * MIN,
        now: () => clock.now,
      });
      const shown = await statusView({ actions: true });
      expect(shown.awaiting).toEqual([
        {
          id: first,
          account: 'default',
          serverId: '100001',
          ip: null,
          action: 'powercycle',
          principal: 'alice',
          rule: null,
          reason: 'hung',
          deadline: clock.now + 15 * MIN,
        },
        expect.objectContaining({
          id: fromAlert,
          serverId: '100003',
          principal: 'alertmanager',
          rule: 'BaremetalServerUnreachable (rules[0])',
        }),
      ]);
      expect(shown.openBreakers).toEqual([
        { account: 'default', openedAt: clock.now, message: 'opened <by> the test' },
      ]);
      const html = renderStatusPage(shown);
      expect(html).toContain(`<code>POST /api/v1/actions/${first}/approve</code>`);
      expect(html).toContain('open since 2026-11-21 12:00:00Z: opened &lt;by&gt; the test.');
      expect(html).not.toContain(`data-awaiting="${second}"`);
      expect(shown.pendingCounts).toEqual({ awaiting: 2, openBreakers: 1 });
      expect(html).toMatch(
        /id="awaiting-count">2<\/strong> · open circuit breakers: <strong id="open-breakers" class="bad">1</,
      );
      // A viewer bounded to its accounts sees the details of those only, the counts of every account as anyone.
      const mine = await statusView({ actions: true, accounts: ['default'] });
      expect([mine.awaiting, mine.openBreakers, mine.actions]).toEqual([
        shown.awaiting,
        shown.openBreakers,
        shown.actions,
      ]);
      const eu = await statusView({ actions: true, accounts: ['eu'] });
      expect([eu.awaiting, eu.openBreakers, eu.actions]).toEqual([[], [], []]);
      expect(eu.pendingCounts).toEqual({ awaiting: 2, openBreakers: 1 });
      const euHtml = renderStatusPage(eu);
      expect(euHtml).toContain('<span class="muted" id="details-of">(details of your accounts only: eu)</span>');
      expect(euHtml).not.toMatch(/data-awaiting|data-breaker|Circuit breaker of account|opened &lt;by|hung/);
      expect(shown.actions!.length).toBeGreaterThan(0);
      // An open page counts them, and shows none of the details.
      const open = await statusView({ actions: false });
      expect([open.awaiting, open.openBreakers]).toEqual([undefined, undefined]);
      expect(open.pendingCounts).toEqual({ awaiting: 2, openBreakers: 1 });
      const openHtml = renderStatusPage(open);
      expect(openHtml).toContain(
        '<p id="pending">Requests awaiting approval: <strong id="awaiting-count">2</strong> · open circuit breakers: <strong id="open-breakers" class="bad">1</strong> <span class="muted">(details for a reader or operator when web.auth is set)</span></p>',
      );
      expect(openHtml).not.toMatch(
        /data-awaiting|data-breaker|Circuit breaker of account|opened &lt;by|<h2>Requests awaiting/,
      );
    });

    it.each([
      {
        name: 'an unknown decision',
        query: 'decision=done',
        message: 'decision must be one of executed, dry_run, denied_unknown_target,',
      },
      { name: 'a decision in another case', query: 'decision=EXECUTED', message: '(got "EXECUTED")' },
      { name: 'an empty decision', query: 'decision=', message: 'decision must be one of' },
      // Two values are an array, refused by the schema (no coercion to either).
      {
        name: 'a repeated decision',
        query: 'decision=executed&decision=expired',
        message: 'querystring/decision must be string',
        code: 'FST_ERR_VALIDATION',
      },
      {
        name: 'an approver that is no name',
        query: 'approver=a%20b',
        message: `approver must be a principal's name: a letter or digit, then up to 63 letters, digits, ".", "_", "@" or "-" (got "a b")`,
      },
      { name: 'an empty approver', query: 'approver=', message: `approver must be a principal's name` },
      { name: 'an approver named like the api command', query: 'approver=cli:root', message: '(got "cli:root")' },
    ])('refuses $name with a 400 that says what is allowed', async ({ query, message, code }) => {
      const { app } = await setup();
      const res = await app.inject({ url: `/api/v1/actions?${query}`, headers: bearer('audit') });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({ code: code ?? 'BM_ERR_BAD_REQUEST' });
      expect(res.json().message).toContain(message);
    });
  });
}
