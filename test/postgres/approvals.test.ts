/**
 * A second person, on both state-store backends: a request that needs approval (its principal's or its rule's
 * require_approval) is journaled awaiting_approval and sends nothing; another operator approves it (the guards
 * run again, it acts once) or denies it; the requester cannot approve its own; it expires; two replicas
 * approving at once act once.
 */
import { describe, expect, it } from 'vitest';
import type { AttackState } from '../../src/collectors/account-state.js';
import { type Config, DEFAULT_SAFETY, type Principal } from '../../src/config/types.js';
import { ConflictError } from '../../src/errors.js';
import { RemediationEngine } from '../../src/remediation/engine.js';
import type { Simulator } from '../../src/simulator/server.js';
import { UpstreamClient } from '../../src/upstream/client.js';
import { captureLogger } from '../helpers/logger.js';
import { freshMetrics } from '../helpers/metrics.js';
import {
  engineHarness,
  FIREWALL_PERIOD_MS,
  remediationApp,
  rule,
  simulatorTargets,
  unreachableAlert,
} from '../helpers/remediation.js';
import { backends } from '../helpers/store-backends.js';

const token = (name: string) => `${name}-token-0123456789abcdef`;
const bearer = (name: string) => ({ authorization: `Bearer ${token(name)}` });
const PRINCIPALS: Principal[] = [
  { name: 'alertmanager', bearerToken: token('alertmanager'), roles: ['webhook'] },
  { name: 'alice', bearerToken: token('alice'), roles: ['operator', 'reader'], requireApproval: true },
  { name: 'bob', bearerToken: token('bob'), roles: ['operator'] },
  { name: 'eu-bob', bearerToken: token('eu-bob'), roles: ['operator'], accounts: ['eu'] },
  { name: 'audit', bearerToken: token('audit'), roles: ['reader'] },
];
const POWERCYCLE = '/api/v1/dedicated/powercycle';
const MIN = 60_000;

for (const backend of backends()) {
  describe.skipIf(backend.skip)(`approval by a second person (${backend.name})`, () => {
    async function setup(safety: Partial<Config['remediation']> = {}) {
      const db = await backend.fresh();
      const h = await engineHarness(
        {
          principals: PRINCIPALS,
          rules: [rule({ alertname: 'BaremetalServerUnreachable', action: 'powercycle', requireApproval: true })],
          ...safety,
        },
        await db.open(),
      );
      const app = remediationApp(h);
      const ask = (who = 'alice', serverId = '100001', extra: object = {}) =>
        app.inject({
          method: 'POST',
          url: '/api/v1/actions/powercycle',
          headers: bearer(who),
          payload: { server_id: serverId, reason: 'hung', ...extra },
        });
      const settle = (verb: 'approve' | 'deny', id: number, who: string, payload: object = {}) =>
        app.inject({ method: 'POST', url: `/api/v1/actions/${id}/${verb}`, headers: bearer(who), payload });
      const pending = async () =>
        (await h.metrics.actionAwaitingApproval.get()).values.find((v) => v.labels.action === 'powercycle')?.value;
      return { ...h, app, ask, settle, pending };
    }

    it('waits for another operator, then acts once; the journal keeps the approver and the time', async () => {
      const { ask, settle, sim, journal, pending, clock } = await setup();
      const asked = await ask();
      expect(asked.json()).toMatchObject({ decision: 'awaiting_approval' });
      expect(asked.json().message).toContain('awaiting approval by an operator other than alice');
      expect(sim.callsTo(POWERCYCLE)).toHaveLength(0);
      expect(await pending()).toBe(1);
      const id = asked.json().id as number;

      const self = await settle('approve', id, 'alice');
      expect(self.statusCode).toBe(403);
      expect(self.json().message).toBe(
        `principal alice asked for journal entry ${id}: another operator must approve or deny it`,
      );
      expect((await settle('approve', id, 'audit')).json().message).toContain('lacks the role operator');
      expect((await settle('approve', id, 'eu-bob')).json().message).toContain('may not act on account default');
      expect(sim.callsTo(POWERCYCLE)).toHaveLength(0);

      clock.now += MIN;
      const approved = await settle('approve', id, 'bob');
      expect(approved.statusCode).toBe(200);
      expect(approved.json()).toMatchObject({ approved: id, approver: 'bob', execution: { decision: 'executed' } });
      const again = await settle('approve', id, 'bob');
      expect(again.statusCode).toBe(409);
      expect(again.json()).toMatchObject({ code: 'BM_ERR_CONFLICT' });
      expect(sim.callsTo(POWERCYCLE)).toHaveLength(1);
      expect(await pending()).toBe(0);

      const awaitingRow = await journal.get(id);
      expect(awaitingRow).toMatchObject({ decision: 'approved', principal: 'alice', approver: 'bob' });
      expect(awaitingRow!.approvedAt).toBe(clock.now);
      const execution = await journal.get(approved.json().execution.id);
      expect(execution).toMatchObject({
        decision: 'executed',
        principal: 'alice',
        reason: 'hung',
        approver: 'bob',
        approvedAt: clock.now,
      });
    });

    it('denies: journaled denied_by_approver with the reason, nothing sent, then a 409', async () => {
      const { ask, settle, sim, journal } = await setup();
      const id = (await ask()).json().id as number;
      const denied = await settle('deny', id, 'bob', { reason: 'not during the migration' });
      expect(denied.statusCode).toBe(200);
      expect(denied.json()).toMatchObject({ denied: id, decision: 'denied_by_approver' });
      expect(await journal.get(id)).toMatchObject({
        decision: 'denied_by_approver',
        approver: 'bob',
        message: 'denied by bob: not during the migration; nothing sent',
      });
      expect((await settle('approve', id, 'bob')).statusCode).toBe(409);
      expect(sim.callsTo(POWERCYCLE)).toHaveLength(0);
    });

    it('expires after approval_timeout: nothing sent, a late approval is a 409', async () => {
      const { ask, settle, sim, journal, engine, clock, pending } = await setup();
      const id = (await ask()).json().id as number;
      clock.now += 14 * MIN;
      await engine.tick();
      expect(await journal.get(id)).toMatchObject({ decision: 'awaiting_approval' });
      clock.now += 2 * MIN;
      await engine.tick();
      expect(await journal.get(id)).toMatchObject({ decision: 'expired', approver: null });
      expect(await pending()).toBe(0);
      const late = await settle('approve', id, 'bob');
      expect(late.statusCode).toBe(409);
      expect(late.json().message).toContain('expired');
      expect(sim.callsTo(POWERCYCLE)).toHaveLength(0);
    });

    it('runs the guards again when approved: a power cycle made meanwhile puts it in cooldown', async () => {
      const { ask, settle, sim } = await setup();
      const id = (await ask()).json().id as number;
      // Bob needs no approval: his power cycle of the same server is sent at once.
      expect((await ask('bob')).json().decision).toBe('executed');
      const approved = await settle('approve', id, 'bob');
      expect(approved.json().execution).toMatchObject({ decision: 'cooldown' });
      expect(sim.callsTo(POWERCYCLE)).toHaveLength(1);
    });

    it('approves a forced request as it was made: forced past the attack guard, and only that guard', async () => {
      // The attack guard on, and no attack data in the engine harness: a power call that is not forced is denied
      // (unknown attack state) before it could wait for approval.
      const { ask, settle, sim, journal, app } = await setup({ safety: DEFAULT_SAFETY });
      expect((await ask()).json()).toMatchObject({ decision: 'denied_under_attack' });
      const forced = await ask('alice', '100001', { force: true });
      expect(forced.json()).toMatchObject({ decision: 'awaiting_approval' });
      expect(await journal.get(forced.json().id)).toMatchObject({
        forced: true,
        decision: 'awaiting_approval',
        message: expect.stringMatching(/^forced by the operator past the attack guard; awaiting approval/),
      });
      // Asked again while the first waits: approved after the first acted, the cooldown still holds it.
      const again = (await ask('alice', '100001', { force: true })).json().id as number;

      const approved = (await settle('approve', forced.json().id, 'bob')).json();
      expect(approved.execution).toMatchObject({ decision: 'executed' });
      expect(await journal.get(approved.execution.id)).toMatchObject({
        forced: true,
        principal: 'alice',
        approver: 'bob',
        message: expect.stringMatching(/^forced by the operator past the attack guard/),
      });
      expect((await settle('approve', again, 'bob')).json().execution).toMatchObject({ decision: 'cooldown' });
      expect(sim.callsTo(POWERCYCLE)).toHaveLength(1);
      const listed = await app.inject({ method: 'GET', url: '/api/v1/actions', headers: bearer('alice') });
      expect(listed.json().actions.map((a: { decision: string; forced: boolean }) => [a.decision, a.forced])).toEqual([
        ['cooldown', true],
        ['executed', true],
        ['approved', true],
        ['approved', true],
        ['denied_under_attack', false],
      ]);
    });

    it('holds an alert whose rule requires approval until an operator approves it', async () => {
      const { app, settle, sim } = await setup();
      const res = await app.inject({
        method: 'POST',
        url: '/api/v1/alertmanager',
        headers: bearer('alertmanager'),
        payload: {
          version: '4',
          status: 'firing',
          alerts: [
            {
              status: 'firing',
              labels: { alertname: 'BaremetalServerUnreachable', server_id: '100002' },
              startsAt: '2026-11-21T11:59:00Z',
              fingerprint: 'f1',
            },
          ],
        },
      });
      const [result] = res.json().results;
      expect(result).toMatchObject({ decision: 'awaiting_approval' });
      expect(sim.callsTo(POWERCYCLE)).toHaveLength(0);
      const approved = await settle('approve', result.id, 'bob');
      expect(approved.json().execution).toMatchObject({ decision: 'executed' });
      expect(sim.callsTo(POWERCYCLE, { server_id: '100002' })).toHaveLength(1);
    });

    it('keeps an approval the engine cannot decide yet (503, still awaiting), then acts on it once decidable', async () => {
      // The attack guard on (the default); the attack state is known when the alert asks, then undecided here
      // (this replica lost the account, or its new leader has not read the history yet), then known again.
      const decided: AttackState = { known: true, readAt: Date.UTC(2026, 10, 21, 12), lastEventAt: new Map() };
      const undecided: AttackState = {
        known: false,
        reason: 'this replica does not lead the account',
        undecided: true,
      };
      let attack: AttackState = decided;
      /** the next read is decided, every later one undecided: the account lost between the check and the decision */
      let loseAfterNextRead = false;
      let sim: Simulator | undefined;
      const db = await backend.fresh();
      const h = await engineHarness(
        {
          principals: PRINCIPALS,
          rules: [rule({ alertname: 'BaremetalServerUnreachable', action: 'powercycle', requireApproval: true })],
          safety: DEFAULT_SAFETY,
        },
        await db.open(),
        2000,
        {
          targets: {
            serversKnown: true,
            hasServer: (id) => sim?.state.servers.has(id) ?? false,
            ownsIp: () => false,
            attackState: () => {
              const now = attack;
              if (loseAfterNextRead) [attack, loseAfterNextRead] = [undecided, false];
              return now;
            },
          },
        },
      );
      sim = h.sim;
      const app = remediationApp(h);
      const alert = () =>
        app.inject({
          method: 'POST',
          url: '/api/v1/alertmanager',
          headers: bearer('alertmanager'),
          payload: unreachableAlert('2026-11-21T11:59:00Z', 'f2', '100002'),
        });
      const approve = (id: number) =>
        app.inject({ method: 'POST', url: `/api/v1/actions/${id}/approve`, headers: bearer('bob'), payload: {} });
      const [asked] = (await alert()).json().results;
      expect(asked).toMatchObject({ decision: 'awaiting_approval' });

      const awaiting = await h.journal.get(asked.id);
      attack = undecided;
      const early = await approve(asked.id);
      expect(early.statusCode).toBe(503);
      expect(early.json()).toMatchObject({ code: 'BM_ERR_NO_LEADER' });
      expect(early.headers['retry-after']).toBe('5');
      expect(await h.journal.get(asked.id)).toEqual(awaiting);
      expect(h.sim.callsTo(POWERCYCLE)).toHaveLength(0);

      // Decidable when the approval checks, no longer when the engine decides: the row awaits again as it was.
      attack = decided;
      loseAfterNextRead = true;
      h.clock.now += 1000;
      const raced = await approve(asked.id);
      expect(raced.statusCode).toBe(503);
      expect(raced.json()).toMatchObject({ code: 'BM_ERR_NO_LEADER' });
      expect(await h.journal.get(asked.id)).toEqual(awaiting);
      expect(h.sim.callsTo(POWERCYCLE)).toHaveLength(0);

      attack = decided;
      const later = await approve(asked.id);
      expect(later.statusCode).toBe(200);
      expect(later.json()).toMatchObject({ approved: asked.id, execution: { decision: 'executed' } });
      expect(await h.journal.get(asked.id)).toMatchObject({ decision: 'approved', approver: 'bob' });
      // The alert delivered again is the one already acted on; the power call ran once.
      expect((await alert()).json().results[0]).toMatchObject({ decision: 'duplicate' });
      expect(h.sim.callsTo(POWERCYCLE, { server_id: '100002' })).toHaveLength(1);
    });

    it('acts once when two replicas approve the same request at once', async () => {
      const db = await backend.fresh();
      const h = await engineHarness({ principals: PRINCIPALS }, await db.open());
      // A second replica: its own store connection, client and engine, on the same database and upstream.
      const client = new UpstreamClient({
        baseUrl: h.sim.url,
        apiKey: 'k',
        timeoutMs: 5000,
        concurrency: 4,
        retries: 0,
      });
      const other = new RemediationEngine({
        account: 'default',
        store: await db.open(),
        client,
        metrics: freshMetrics().metrics,
        logger: captureLogger().logger,
        targets: simulatorTargets(h.sim),
        config: h.config,
        now: () => h.clock.now,
        firewallPeriodMs: FIREWALL_PERIOD_MS,
      });
      try {
        await other.ready;
        const asked = await h.engine.request({
          source: 'operator',
          principal: 'alice',
          account: 'default',
          action: 'powercycle',
          serverId: '100001',
          cooldownMs: 30 * MIN,
          requireOwnedIp: true,
          requireApproval: true,
        });
        expect(asked.decision).toBe('awaiting_approval');
        const row = (await h.journal.get(asked.id))!;
        const outcomes = await Promise.allSettled([h.engine.approve(row, 'bob'), other.approve(row, 'carol')]);
        const done = outcomes.filter((o) => o.status === 'fulfilled');
        const refused = outcomes.filter((o) => o.status === 'rejected');
        expect(done).toHaveLength(1);
        expect(refused).toHaveLength(1);
        expect((refused[0] as PromiseRejectedResult).reason).toBeInstanceOf(ConflictError);
        expect(h.sim.callsTo(POWERCYCLE)).toHaveLength(1);
      } finally {
        await other.stop();
        await client.close();
      }
    });
  });
}
