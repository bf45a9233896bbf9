/**
 * An approval runs exactly the request that was made (issue 39), on both state-store backends: the journal row
 * keeps the rule a request was made under (position and digest) and its resolved cooldown, hold and
 * require_owned_ip, and the approval runs those, never the first rule with the same alertname and action. Two
 * rules on one alert, told apart by their matchers, are the reproduction: the first has a short cooldown (or
 * another require_owned_ip, or no hold), the second needs approval.
 */
import { describe, expect, it } from 'vitest';
import type { Principal, RemediationRule } from '../../src/config/types.js';
import { ruleDigest } from '../../src/remediation/request.js';
import { engineHarness, remediationApp, rule } from '../helpers/remediation.js';
import { backends } from '../helpers/store-backends.js';

const token = (name: string) => `${name}-token-0123456789abcdef`;
const bearer = (name: string) => ({ authorization: `Bearer ${token(name)}` });
const PRINCIPALS: Principal[] = [
  { name: 'alertmanager', bearerToken: token('alertmanager'), roles: ['webhook'] },
  { name: 'bob', bearerToken: token('bob'), roles: ['operator', 'reader'] },
];
const POWERCYCLE = '/api/v1/dedicated/powercycle';
const SENSITIVITY = '/api/v1/dedicated/firewall/sensitivity';
const FIREWALL_STATE = '/api/v1/dedicated/firewall/state';
const HOUR = 3_600_000;
const MIN = 60_000;

/** Server 100002 of the simulator. */
const SERVER = '100002';

for (const backend of backends()) {
  describe.skipIf(backend.skip)(`an approval runs the request as it was made (${backend.name})`, () => {
    async function setup(rules: RemediationRule[]) {
      const db = await backend.fresh();
      const h = await engineHarness({ principals: PRINCIPALS, rules }, await db.open());
      const app = remediationApp(h);
      /** Delivers one alert; returns its single result. */
      const deliver = async (labels: Record<string, string>, startsAt: string, status = 'firing') => {
        const res = await app.inject({
          method: 'POST',
          url: '/api/v1/alertmanager',
          headers: bearer('alertmanager'),
          payload: {
            version: '4',
            status,
            alerts: [{ status, labels: { server_id: SERVER, ...labels }, startsAt, fingerprint: 'fp-1' }],
          },
        });
        expect(res.statusCode).toBe(200);
        const results = res.json().results as Array<{ id: number; decision: string; message: string }>;
        expect(results).toHaveLength(1);
        return results[0]!;
      };
      const approve = async (id: number) => {
        const res = await app.inject({
          method: 'POST',
          url: `/api/v1/actions/${id}/approve`,
          headers: bearer('bob'),
          payload: {},
        });
        // A guard's denial of the approved request (cooldown …) is a 409 saying nothing was sent; else a 200.
        expect([res.statusCode, res.json().code]).toEqual(
          res.json().sent === false && res.json().decision === 'cooldown'
            ? [409, 'BM_ERR_APPROVED_NOT_SENT']
            : [200, undefined],
        );
        return res.json() as {
          approved: number;
          execution: { id: number; decision: string; message: string };
          ruleChanged?: string;
        };
      };
      return { ...h, app, deliver, approve };
    }

    const powerRules = [
      rule({ alertname: 'Unreach', matchers: { severity: 'page' }, action: 'powercycle', cooldownMs: 1000 }),
      rule({
        alertname: 'Unreach',
        matchers: { severity: 'ticket' },
        action: 'powercycle',
        cooldownMs: 6 * HOUR,
        requireApproval: true,
      }),
    ];

    it("uses the matched rule's cooldown: two approvals of one server inside it act once", async () => {
      const { deliver, approve, sim, journal, clock } = await setup(powerRules);
      const first = await deliver({ alertname: 'Unreach', severity: 'ticket' }, '2026-11-21T11:00:00Z');
      const second = await deliver({ alertname: 'Unreach', severity: 'ticket' }, '2026-11-21T11:30:00Z');
      expect([first.decision, second.decision]).toEqual(['awaiting_approval', 'awaiting_approval']);
      // The row keeps what the request was made with.
      expect(await journal.get(first.id)).toMatchObject({
        ruleIndex: 1,
        ruleDigest: ruleDigest(powerRules[1]!),
        cooldownMs: 6 * HOUR,
        requireOwnedIp: true,
        holdMs: null,
        labels: JSON.stringify({ alertname: 'Unreach', server_id: SERVER, severity: 'ticket' }),
      });

      expect((await approve(first.id)).execution).toMatchObject({ decision: 'executed' });
      clock.now += 2000;
      const again = await approve(second.id);
      expect(again.execution).toMatchObject({
        decision: 'cooldown',
        message: expect.stringContaining('cooldown 21600s'),
      });
      expect(again.ruleChanged).toBeUndefined();
      expect(sim.callsTo(POWERCYCLE, { server_id: SERVER })).toHaveLength(1);
      // The execution row records the same request, approved.
      expect(await journal.get(again.execution.id)).toMatchObject({
        ruleIndex: 1,
        cooldownMs: 6 * HOUR,
        approver: 'bob',
      });
      // Delivered directly, the ticket rule answers the same.
      const direct = await deliver({ alertname: 'Unreach', severity: 'ticket' }, '2026-11-21T11:45:00Z');
      expect(direct).toMatchObject({ decision: 'cooldown', message: expect.stringContaining('cooldown 21600s') });
    });

    it("uses the matched rule's require_owned_ip", async () => {
      const sensitivity = (team: string, over: Partial<RemediationRule>) =>
        rule({
          alertname: 'Attack',
          matchers: { team },
          action: 'firewall_sensitivity',
          sensitivity: 'high',
          ...over,
        });
      const { deliver, approve, sim, journal } = await setup([
        sensitivity('a', { requireOwnedIp: true }),
        sensitivity('b', { requireOwnedIp: false, requireApproval: true }),
      ]);
      // An IP of another server, not 100002's own: the team=b rule lets it through the target guard, so the call is
      // sent (and the simulated API, which checks ownership itself, says no); under team=a's rule it never would be.
      const foreignIp = sim.state.servers.get('100003')!.ips[0]!;
      const asked = await deliver({ alertname: 'Attack', team: 'b', ip: foreignIp }, '2026-11-21T11:00:00Z');
      expect(asked.decision).toBe('awaiting_approval');
      expect(await journal.get(asked.id)).toMatchObject({ ruleIndex: 1, requireOwnedIp: false });
      expect((await approve(asked.id)).execution).toMatchObject({
        decision: 'failed',
        message: expect.stringContaining('IP does not belong to this server'),
      });
      expect(sim.callsTo(SENSITIVITY, { ip: foreignIp })).toHaveLength(1);
    });

    it("uses the matched rule's hold", async () => {
      const state = (team: string, over: Partial<RemediationRule>) =>
        rule({ alertname: 'Attack', matchers: { team }, action: 'firewall_state', ...over });
      const { deliver, approve, sim, journal, clock, engine } = await setup([
        state('a', { holdMs: 0 }),
        state('b', { holdMs: 30 * MIN, requireApproval: true }),
      ]);
      const ip = sim.state.servers.get(SERVER)!.ips[0]!;
      const asked = await deliver({ alertname: 'Attack', team: 'b', ip }, '2026-11-21T11:00:00Z', 'resolved');
      expect(asked.decision).toBe('awaiting_approval');
      expect(await journal.get(asked.id)).toMatchObject({ ruleIndex: 1, holdMs: 30 * MIN, value: '0' });
      const approved = await approve(asked.id);
      expect(approved.execution).toMatchObject({ decision: 'deferred' });
      expect(await journal.desired('default', SERVER, ip)).toMatchObject({
        desiredState: '0',
        pending: true,
        dueAt: clock.now + 30 * MIN,
      });
      await engine.tick();
      expect(sim.callsTo(FIREWALL_STATE, { ip })).toHaveLength(0);
    });

    it('runs the recorded request when its rule changed since, and says so', async () => {
      const { deliver, approve, sim, journal, clock, config } = await setup(powerRules.map((r) => ({ ...r })));
      const first = await deliver({ alertname: 'Unreach', severity: 'ticket' }, '2026-11-21T11:00:00Z');
      const second = await deliver({ alertname: 'Unreach', severity: 'ticket' }, '2026-11-21T11:30:00Z');
      // A reload (daemon/reload.ts assigns the new rules) drops the ticket rule; the page rule stays.
      Object.assign(config, { rules: [rule({ ...powerRules[0]! })] });
      const approved = await approve(first.id);
      expect(approved.execution).toMatchObject({ decision: 'executed' });
      expect(approved.ruleChanged).toMatch(
        /^the rule the request was made under \(remediation\.rules\[1\], Unreach → powercycle\) was changed or removed since; the approval ran the request as it was made$/,
      );
      expect((await journal.get(first.id))!.message).toContain(approved.ruleChanged);
      clock.now += 2000;
      expect((await approve(second.id)).execution).toMatchObject({ decision: 'cooldown' });
      expect(sim.callsTo(POWERCYCLE)).toHaveLength(1);
    });

    it('says nothing when the rule only moved', async () => {
      const { deliver, approve, config } = await setup(powerRules);
      const asked = await deliver({ alertname: 'Unreach', severity: 'ticket' }, '2026-11-21T11:00:00Z');
      Object.assign(config, { rules: [rule({ alertname: 'Other', action: 'poweron' }), ...powerRules] });
      const approved = await approve(asked.id);
      expect(approved.execution).toMatchObject({ decision: 'executed' });
      expect(approved.ruleChanged).toBeUndefined();
    });

    it('refuses to approve a row written before requests were recorded, and leaves it awaiting', async () => {
      const { app, journal, sim, clock } = await setup(powerRules);
      const id = await journal.insert({
        account: 'default',
        createdAt: clock.now,
        source: 'alert',
        action: 'powercycle',
        serverId: SERVER,
        ip: null,
        value: null,
        alertname: 'Unreach',
        fingerprint: 'fp-old',
        startsAt: '2026-11-21T10:00:00Z',
        decision: 'awaiting_approval',
        principal: 'alertmanager',
      });
      const res = await app.inject({
        method: 'POST',
        url: `/api/v1/actions/${id}/approve`,
        headers: bearer('bob'),
        payload: {},
      });
      expect(res.statusCode).toBe(409);
      expect(res.json().message).toContain('written before requests were recorded whole');
      expect(await journal.get(id)).toMatchObject({ decision: 'awaiting_approval', approver: null });
      expect(sim.callsTo(POWERCYCLE)).toHaveLength(0);
    });
  });
}
