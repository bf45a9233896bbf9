/**
 * The alert episode as a property (issue 49, fast-check): random interleavings of firing and resolved
 * deliveries, approvals, expiries (time passing), Alertmanager restarts and Prometheus's re-sends, and the
 * leader's ticks, through the webhook and approval routes of a real engine over the simulator, never
 * - act on a resolved episode: no power call for it after its resolved delivery, whatever comes next;
 * - settle a verification without evidence: a row of the episode is `verified` only once it resolved;
 * - leave a request of it awaiting approval after its resolution.
 * Alertmanager is a model here (its alert list and start time, as `GET /api/v2/alerts` and `/api/v2/status`
 * give them): a restart empties the list, a re-send of a firing alert lists it again, a resolution removes it;
 * as Prometheus does, a still-firing alert is re-sent at the latest a resend interval (a minute) after a restart.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { AlertmanagerAlert } from '../../src/alertmanager/client.js';
import type { Principal } from '../../src/config/types.js';
import { engineHarness, remediationApp, rule, SAFETY_WITHOUT_ATTACK_GUARD } from '../helpers/remediation.js';

const token = (name: string) => `${name}-token-0123456789abcdef`;
const bearer = (name: string) => ({ authorization: `Bearer ${token(name)}` });
const PRINCIPALS: Principal[] = [
  { name: 'alertmanager', bearerToken: token('alertmanager'), roles: ['webhook'] },
  { name: 'bob', bearerToken: token('bob'), roles: ['operator'] },
];
const MIN = 60_000;
const POWERCYCLE = '/api/v1/dedicated/powercycle';

type Command =
  | { kind: 'firing' }
  | { kind: 'resolved' }
  | { kind: 'approve' }
  | { kind: 'time'; seconds: number }
  | { kind: 'am_restart' }
  | { kind: 'am_resend' };

const command: fc.Arbitrary<Command> = fc.oneof(
  fc.constant({ kind: 'firing' } as const),
  fc.constant({ kind: 'resolved' } as const),
  fc.constant({ kind: 'approve' } as const),
  fc.integer({ min: 10, max: 1200 }).map((seconds) => ({ kind: 'time', seconds }) as const),
  fc.constant({ kind: 'am_restart' } as const),
  fc.constant({ kind: 'am_resend' } as const),
);

describe('the alert episode, interleaved at random', () => {
  it('never acts on a resolved episode, never verifies without evidence, withdraws what awaits', async () => {
    const am = {
      startedAt: 0,
      listed: new Map<string, AlertmanagerAlert>(),
      async alerts() {
        return [...this.listed.values()];
      },
      async status() {
        return { startedAt: this.startedAt };
      },
      silences: async () => [],
      createSilence: async () => 'silence',
      expireSilence: async () => {},
    };
    const h = await engineHarness(
      {
        principals: PRINCIPALS,
        budgetPerHour: 1_000_000,
        safety: {
          ...SAFETY_WITHOUT_ATTACK_GUARD,
          maxPowerActionsPerServer: 1_000_000,
          circuitBreaker: { windowMs: MIN, maxServers: 1_000_000, maxFraction: 1 },
        },
        rules: [
          rule({ alertname: 'Plain', action: 'powercycle', cooldownMs: 1, verifyWithinMs: 10 * MIN }),
          rule({
            alertname: 'Asked',
            action: 'powercycle',
            cooldownMs: 1,
            verifyWithinMs: 10 * MIN,
            requireApproval: true,
          }),
        ],
      },
      ':memory:',
      2000,
      { alertmanager: am },
    );
    am.startedAt = h.clock.now - 60 * MIN;
    const app = remediationApp(h);
    let run = 0;

    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('Plain', 'Asked'),
        fc.constantFrom('100001', '100002', '100003'),
        fc.array(command, { minLength: 1, maxLength: 12 }),
        async (alertname, serverId, commands) => {
          run++;
          const fingerprint = `fp-${run}`;
          const startsAt = new Date(h.clock.now).toISOString();
          const labels = { alertname, server_id: serverId };
          let resolved = false;
          let callsAtResolution = 0;
          const calls = () => h.sim.callsTo(POWERCYCLE, { server_id: serverId }).length;
          const rows = async () =>
            (await h.journal.list({ serverId, limit: 1000 })).filter((r) => r.fingerprint === fingerprint);
          const deliver = async (status: 'firing' | 'resolved') => {
            const res = await app.inject({
              method: 'POST',
              url: '/api/v1/alertmanager',
              headers: bearer('alertmanager'),
              payload: { version: '4', status, alerts: [{ status, labels, startsAt, fingerprint }] },
            });
            expect(res.statusCode, res.body).toBe(200);
          };
          // Prometheus sends the alert to Alertmanager before it notifies anyone.
          am.listed.set(fingerprint, { fingerprint, labels, startsAt, state: 'active', silencedBy: [] });
          for (const c of commands) {
            if (c.kind === 'firing') await deliver('firing');
            else if (c.kind === 'resolved') {
              if (!resolved) callsAtResolution = calls();
              resolved = true;
              am.listed.delete(fingerprint);
              await deliver('resolved');
            } else if (c.kind === 'approve') {
              const awaiting = (await rows()).find((r) => r.decision === 'awaiting_approval');
              if (awaiting) {
                const res = await app.inject({
                  method: 'POST',
                  url: `/api/v1/actions/${awaiting.id}/approve`,
                  headers: bearer('bob'),
                  payload: {},
                });
                expect([200, 409], res.body).toContain(res.statusCode);
              }
            } else if (c.kind === 'time') {
              h.clock.now += c.seconds * 1000;
              // Prometheus re-sends a still-firing alert every resend interval: listed again by then.
              if (!resolved && h.clock.now - am.startedAt >= MIN)
                am.listed.set(fingerprint, { fingerprint, labels, startsAt, state: 'active', silencedBy: [] });
              await h.engine.tick();
            } else if (c.kind === 'am_restart') {
              am.startedAt = h.clock.now;
              am.listed.clear();
            } else if (!resolved)
              am.listed.set(fingerprint, { fingerprint, labels, startsAt, state: 'active', silencedBy: [] });
            const now = await rows();
            if (resolved) {
              expect(calls(), 'a power call after the resolution').toBe(callsAtResolution);
              expect(now.filter((r) => r.decision === 'awaiting_approval')).toEqual([]);
            } else expect(now.filter((r) => r.verification === 'verified')).toEqual([]);
          }
          // The next run's episode starts later, with no alert of this one listed.
          am.listed.delete(fingerprint);
          h.clock.now += 30 * MIN;
          await h.engine.tick();
        },
      ),
      { numRuns: 40 },
    );
  });
});
