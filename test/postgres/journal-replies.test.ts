/**
 * The journal as scripts read it (issue 51), on both state-store backends: every time has an ISO-8601 form
 * (`approvedAtIso`, `verifiedAtIso` beside the milliseconds kept), an alert's labels as a JSON object
 * (`alertLabels`, beside the `labels` text kept), no empty-string id (a breaker close's `serverId` is null), one
 * spelling of whether anything was sent (`sent`, never the engine's `send`), `?verification=` filters, and an
 * approval of a settled row says what the row is.
 */
import { describe, expect, it } from 'vitest';
import { journalRow } from '../../src/store/rows.js';
import { engineHarness, remediationApp, rule, TOKEN, unreachableAlert } from '../helpers/remediation.js';
import { backends } from '../helpers/store-backends.js';

const MIN = 60_000;
const headers = { authorization: `Bearer ${TOKEN}` };

for (const backend of backends()) {
  describe.skipIf(backend.skip)(`journal replies (${backend.name})`, () => {
    async function setup() {
      const db = await backend.fresh();
      const h = await engineHarness(
        { rules: [rule({ alertname: 'BaremetalServerUnreachable', action: 'powercycle' })] },
        await db.open(),
      );
      const app = remediationApp(h);
      const get = async (url: string) => {
        const res = await app.inject({ url, headers });
        expect(res.statusCode, res.body).toBe(200);
        return res.json();
      };
      return { ...h, app, get };
    }

    it('gives every time in ISO-8601, labels as an object, and no empty id', async () => {
      const { app, get, journal, clock } = await setup();
      const alerted = await app.inject({
        method: 'POST',
        url: '/api/v1/alertmanager',
        headers,
        payload: unreachableAlert(new Date(clock.now - MIN).toISOString()),
      });
      expect(alerted.statusCode).toBe(200);
      const closed = await app.inject({
        method: 'POST',
        url: '/api/v1/remediation/circuit/close',
        headers,
        payload: { reason: 'checked' },
      });
      expect(closed.statusCode).toBe(200);
      const { actions } = await get('/api/v1/actions');
      const alert = actions.find((a: { source: string }) => a.source === 'alert');
      expect(typeof alert.labels).toBe('string');
      expect(alert.alertLabels).toEqual(JSON.parse(alert.labels));
      expect(alert.alertLabels).toMatchObject({ alertname: 'BaremetalServerUnreachable', server_id: '100002' });
      const close = actions.find((a: { action: string }) => a.action === 'circuit_close');
      expect(close.serverId).toBeNull();
      expect(JSON.stringify(actions)).not.toMatch(/"[A-Za-z]*Id":""/);
      // Every time field: an ISO-8601 string, or milliseconds with an ISO twin.
      for (const row of actions)
        for (const [key, value] of Object.entries(row as Record<string, unknown>))
          if (/At$/.test(key) && value !== null) {
            if (typeof value === 'number') expect(row[`${key}Iso`]).toBe(new Date(value).toISOString());
            else expect(value).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
          }
      // And the row as read back is what the store holds.
      expect((await journal.get(close.id))?.serverId).toBe('');
    });

    it('filters by ?verification= and gives verifiedAt its ISO twin', async () => {
      const { get, journal, clock } = await setup();
      const row = (serverId: string) =>
        journalRow({
          account: 'default',
          createdAt: clock.now - 10 * MIN,
          source: 'alert',
          action: 'powercycle',
          serverId,
          principal: 'alertmanager',
          decision: 'executed',
          verifyWithinMs: 15 * MIN,
        });
      const verified = await journal.insert(row('100001'));
      const verifying = await journal.insert(row('100002'));
      const plain = await journal.insert({ ...row('100003'), verifyWithinMs: null });
      const evidence = 'a resolved delivery: its alert resolved at 2026-11-21T11:55:00.000Z (journal entry 9)';
      expect(await journal.settleVerification(verified, 'verified', clock.now - 5 * MIN, evidence)).toBe(true);
      const ids = async (v: string) =>
        (await get(`/api/v1/actions?verification=${v}`)).actions.map((a: { id: number }) => a.id);
      expect(await ids('verified')).toEqual([verified]);
      expect(await ids('verifying')).toEqual([verifying]);
      expect(await ids('ineffective')).toEqual([]);
      expect((await get('/api/v1/actions')).actions.map((a: { id: number }) => a.id)).toContain(plain);
      const shown = await get(`/api/v1/actions/${verified}`);
      expect(shown).toMatchObject({
        verification: 'verified',
        verifiedAt: clock.now - 5 * MIN,
        verifiedAtIso: new Date(clock.now - 5 * MIN).toISOString(),
        verificationEvidence: evidence,
      });
    });

    it('refuses an unknown ?verification= with a 400', async () => {
      const { app } = await setup();
      const res = await app.inject({ url: '/api/v1/actions?verification=maybe', headers });
      expect(res.statusCode).toBe(400);
    });

    it('says `sent` once, and what a settled row is when asked to approve it', async () => {
      const { app, journal } = await setup();
      const acted = await app.inject({
        method: 'POST',
        url: '/api/v1/actions/powercycle',
        headers,
        payload: { server_id: '100001' },
      });
      expect(acted.statusCode).toBe(200);
      expect(acted.json()).not.toHaveProperty('send');
      const { id, decision } = acted.json();
      expect(decision).toBe('executed');
      const approve = await app.inject({ method: 'POST', url: `/api/v1/actions/${id}/approve`, headers, payload: {} });
      expect(approve.statusCode).toBe(409);
      expect(approve.json().message).toBe(
        `journal entry ${id} is executed, not awaiting approval: there is nothing to settle (operator powercycle of 100001)`,
      );
      expect(approve.json().message).not.toContain('expired');
      expect((await journal.get(id))?.decision).toBe('executed');
    });
  });
}
