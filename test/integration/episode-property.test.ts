/**
 * The alert episode as a property (issue 49, fast-check): random interleavings of firing and resolved
 * deliveries, approvals, operators' withdrawals, expiries (time passing), calls held in flight and completed,
 * Alertmanager restarts and Prometheus's re-sends, and the leader's ticks (also while a delivery's or an
 * approval's call is in flight, as the daemon's ticker runs; not while a tick's own is), through the webhook and
 * approval routes of a real engine (SQLite in memory) over the simulator, for a plain rule, one that asks for
 * approval and an escalation ladder whose second step asks for approval, never
 * - act on a resolved episode: no power call for it after its resolved delivery, whatever comes next (a call
 *   already in flight then completes, and is not followed by another: no ladder step);
 * - settle a verification without evidence: a row of the episode is `verified` only once it resolved;
 * - leave a request of it awaiting approval after its resolution: it is withdrawn by the resolution (its
 *   message says so), and an approval after is refused;
 * - leave an episode without a page, a pending request or a final state. A page cannot be observed in-process:
 *   the shipped routing (examples/alertmanager.yml) routes every alert the daemon handles to the on-call's
 *   receiver too (test/e2e/episode.test.ts proves it against Debian's Alertmanager), so an alert pages unless a
 *   silence mutes it, and the daemon's silences are the only ones here. The property is then: after each tick,
 *   an episode not resolved whose alert the daemon's silences mute has a request pending (awaiting approval,
 *   executing or verifying); a final state (denied, expired, escalated, failed, ineffective, unknown) pages;
 * - swallow an expiry: a firing delivery after the episode's latest request expired asks again (no `duplicate`).
 * Alertmanager is a model here (its alert list, start time and silences, as `GET /api/v2/alerts`,
 * `/api/v2/status` and `/api/v2/silences` give them): a restart empties the list, a re-send of a firing alert
 * lists it again, a resolution removes it; as Prometheus does, a still-firing alert is re-sent at the latest a
 * resend interval (a minute) after a restart.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import type { AlertmanagerAlert, AlertmanagerSilence } from '../../src/alertmanager/client.js';
import type { LadderStep, Principal } from '../../src/config/types.js';
import { WITHDRAWN_BY_RESOLUTION } from '../../src/remediation/episode.js';
import type { JournalEntry } from '../../src/store/rows.js';
import { type ReplyDecoder, UpstreamClient } from '../../src/upstream/client.js';
import type { UpstreamRequest } from '../../src/upstream/request.js';
import { engineHarness, remediationApp, rule, SAFETY_WITHOUT_ATTACK_GUARD } from '../helpers/remediation.js';

const token = (name: string) => `${name}-token-0123456789abcdef`;
const bearer = (name: string) => ({ authorization: `Bearer ${token(name)}` });
const PRINCIPALS: Principal[] = [
  { name: 'alertmanager', bearerToken: token('alertmanager'), roles: ['webhook'] },
  { name: 'bob', bearerToken: token('bob'), roles: ['operator'] },
];
const MIN = 60_000;
const POWERCYCLE = '/api/v1/dedicated/powercycle';
/** What a request of the episode still being handled is. */
const PENDING = new Set(['awaiting_approval', 'executing']);

/** A promise and its resolve. */
function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve = () => {};
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

/**
 * The engine's client: the simulator's, except that while `hold` is set the next call's reply (the API acted)
 * is held back until `release()`: the call is in flight meanwhile.
 */
class HeldClient extends UpstreamClient {
  target: UpstreamClient | undefined;
  hold = false;
  /** resolved when a call's reply is being held */
  reached: { promise: Promise<void>; resolve: () => void } = deferred();
  #release: (() => void) | undefined;
  constructor() {
    super({ baseUrl: 'http://127.0.0.1:9', apiKey: '', timeoutMs: 1, concurrency: 1, retries: 0 });
  }
  override async json<T>(req: UpstreamRequest, decode?: ReplyDecoder<T>): Promise<T> {
    const reply = await (decode ? this.target!.json(req, decode) : (this.target!.json(req) as Promise<T>));
    if (this.hold) {
      this.hold = false;
      const held = deferred();
      this.#release = held.resolve;
      this.reached.resolve();
      await held.promise;
    }
    return reply;
  }
  release(): void {
    this.#release?.();
    this.#release = undefined;
    this.reached = deferred();
  }
}

type Command =
  | { kind: 'firing' }
  | { kind: 'resolved' }
  | { kind: 'approve' }
  | { kind: 'withdraw' }
  | { kind: 'time'; seconds: number }
  | { kind: 'hold' }
  | { kind: 'complete' }
  | { kind: 'am_restart' }
  | { kind: 'am_resend' };

const command: fc.Arbitrary<Command> = fc.oneof(
  { arbitrary: fc.constant({ kind: 'firing' } as const), weight: 3 },
  { arbitrary: fc.constant({ kind: 'resolved' } as const), weight: 1 },
  { arbitrary: fc.constant({ kind: 'approve' } as const), weight: 2 },
  { arbitrary: fc.constant({ kind: 'withdraw' } as const), weight: 1 },
  { arbitrary: fc.integer({ min: 10, max: 1200 }).map((seconds) => ({ kind: 'time', seconds }) as const), weight: 4 },
  { arbitrary: fc.constant({ kind: 'hold' } as const), weight: 2 },
  { arbitrary: fc.constant({ kind: 'complete' } as const), weight: 2 },
  { arbitrary: fc.constant({ kind: 'am_restart' } as const), weight: 1 },
  { arbitrary: fc.constant({ kind: 'am_resend' } as const), weight: 1 },
);

const step = (verifyMin: number, requireApproval: boolean): LadderStep => ({
  action: 'powercycle',
  verifyWithinMs: verifyMin * MIN,
  requireApproval,
  cooldownMs: 1,
});

describe('the alert episode, interleaved at random', () => {
  it('never acts on a resolved episode, never verifies without evidence, never leaves one unpaged', async () => {
    /** the harness's clock, once it is made */
    let clock = { now: 0 };
    const silences = new Map<string, AlertmanagerSilence & { matchers: Record<string, string>; endsAt: number }>();
    const am = {
      startedAt: 0,
      listed: new Map<string, AlertmanagerAlert>(),
      async alerts() {
        return [...this.listed.values()];
      },
      async status() {
        return { startedAt: this.startedAt };
      },
      // As Alertmanager: a silence past its end is expired.
      silences: async () =>
        [...silences.values()].map((s) => ({ ...s, state: s.endsAt <= clock.now ? 'expired' : s.state })),
      createSilence: async (s: {
        matchers: Array<{ name: string; value: string }>;
        endsAt: number;
        createdBy: string;
        comment: string;
      }) => {
        const id = `silence-${silences.size + 1}`;
        const matchers = Object.fromEntries(s.matchers.map((m) => [m.name, m.value]));
        silences.set(id, {
          id,
          state: 'active',
          createdBy: s.createdBy,
          comment: s.comment,
          matchers,
          endsAt: s.endsAt,
        });
        return id;
      },
      expireSilence: async (id: string) => {
        const s = silences.get(id);
        if (s) silences.set(id, { ...s, state: 'expired' });
      },
    };
    /** Whether an active silence mutes an alert with `labels`. */
    const muted = (labels: Record<string, string>) =>
      [...silences.values()].some(
        (s) =>
          s.state !== 'expired' &&
          s.endsAt > clock.now &&
          Object.entries(s.matchers).every(([name, value]) => labels[name] === value),
      );
    const client = new HeldClient();
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
          rule({
            alertname: 'Laddered',
            action: 'powercycle',
            cooldownMs: 1,
            verifyWithinMs: 10 * MIN,
            steps: [step(10, false), step(10, true)],
          }),
        ],
      },
      ':memory:',
      2000,
      { alertmanager: am, client },
    );
    client.target = h.client;
    clock = h.clock;
    am.startedAt = clock.now - 60 * MIN;
    const app = remediationApp(h);
    let run = 0;

    await fc.assert(
      fc.asyncProperty(
        fc.constantFrom('Plain', 'Asked', 'Laddered'),
        fc.constantFrom('100001', '100002', '100003'),
        fc.array(command, { minLength: 1, maxLength: 24 }),
        async (alertname, serverId, commands) => {
          run++;
          const fingerprint = `fp-${run}`;
          const startsAt = new Date(clock.now).toISOString();
          const labels = { alertname, server_id: serverId };
          let resolved = false;
          let callsAtResolution = 0;
          /** a delivery, approval or tick whose call is held in flight */
          let inFlight: Promise<unknown> | undefined;
          /** whether the call in flight is a tick's (then no other tick runs: the ticker waits for it) */
          let inFlightTick = false;
          const calls = () => h.sim.callsTo(POWERCYCLE, { server_id: serverId }).length;
          const rows = async (): Promise<JournalEntry[]> =>
            (await h.journal.list({ serverId, limit: 1000 })).filter((r) => r.fingerprint === fingerprint);
          /** Runs `act`; when its call is held, leaves it in flight and goes on. */
          const act = async <T>(what: () => Promise<T>, tick = false): Promise<T | undefined> => {
            const running = what();
            // One call is held at a time: with one in flight, nothing else is.
            if (inFlight !== undefined) return running;
            const held = await Promise.race([running.then(() => false), client.reached.promise.then(() => true)]);
            if (!held) return running;
            inFlight = running;
            inFlightTick = tick;
            return undefined;
          };
          const deliver = async (status: 'firing' | 'resolved') => {
            const res = await act(() =>
              app.inject({
                method: 'POST',
                url: '/api/v1/alertmanager',
                headers: bearer('alertmanager'),
                payload: { version: '4', status, alerts: [{ status, labels, startsAt, fingerprint }] },
              }),
            );
            if (res) expect(res.statusCode, res.body).toBe(200);
            return res?.json().results as Array<{ decision: string }> | undefined;
          };
          const complete = async () => {
            if (inFlight === undefined) return;
            client.release();
            await inFlight;
            inFlight = undefined;
            inFlightTick = false;
          };
          // Prometheus sends the alert to Alertmanager before it notifies anyone.
          am.listed.set(fingerprint, { fingerprint, labels, startsAt, state: 'active', silencedBy: [] });
          for (const c of commands) {
            let ticked = false;
            if (c.kind === 'firing') {
              // The newest request of the episode (a repeat's `duplicate` row is none) expired: it asks again.
              const latest = (await rows()).find((r) => r.decision !== 'duplicate');
              const results = await deliver('firing');
              if (!resolved && latest?.decision === 'expired' && results)
                expect(
                  results.map((r) => r.decision),
                  'an expiry swallowed the next delivery',
                ).not.toContain('duplicate');
            } else if (c.kind === 'resolved') {
              const awaiting = resolved ? [] : (await rows()).filter((r) => r.decision === 'awaiting_approval');
              if (!resolved) callsAtResolution = calls();
              resolved = true;
              am.listed.delete(fingerprint);
              await deliver('resolved');
              // What awaited approval is withdrawn by the resolution, and says so.
              for (const r of awaiting) {
                const now = (await h.journal.get(r.id))!;
                expect(now.decision).toBe('withdrawn');
                expect(now.message).toMatch(new RegExp(`^${WITHDRAWN_BY_RESOLUTION}`));
              }
            } else if (c.kind === 'approve' || c.kind === 'withdraw') {
              const awaiting = (await rows()).find((r) => r.decision === 'awaiting_approval');
              if (awaiting) {
                const res = await act(() =>
                  app.inject({
                    method: 'POST',
                    url: `/api/v1/actions/${awaiting.id}/${c.kind}`,
                    headers: bearer('bob'),
                    payload: {},
                  }),
                );
                if (res) expect([200, 409], res.body).toContain(res.statusCode);
              }
            } else if (c.kind === 'time') {
              clock.now += c.seconds * 1000;
              // Prometheus re-sends a still-firing alert every resend interval: listed again by then.
              if (!resolved && clock.now - am.startedAt >= MIN)
                am.listed.set(fingerprint, { fingerprint, labels, startsAt, state: 'active', silencedBy: [] });
              // The leader's ticker waits for a tick whose call is in flight, as the daemon's does; it runs while a
              // delivery's or an approval's call is in flight (the webhook and the ticker are not serialized).
              if (inFlight === undefined) {
                await act(() => h.engine.tick(), true);
                ticked = inFlight === undefined;
              } else if (!inFlightTick) {
                await h.engine.tick();
                ticked = true;
              }
            } else if (c.kind === 'hold') {
              if (inFlight === undefined) client.hold = true;
            } else if (c.kind === 'complete') await complete();
            else if (c.kind === 'am_restart') {
              am.startedAt = clock.now;
              am.listed.clear();
            } else if (!resolved)
              am.listed.set(fingerprint, { fingerprint, labels, startsAt, state: 'active', silencedBy: [] });
            const now = await rows();
            if (resolved) {
              expect(calls(), 'a power call after the resolution').toBe(callsAtResolution);
              expect(now.filter((r) => r.decision === 'awaiting_approval')).toEqual([]);
              // The resolution settled every verification, a call in flight then included once it completed.
              if (inFlight === undefined) expect(now.filter((r) => r.verification === 'verifying')).toEqual([]);
            } else {
              expect(now.filter((r) => r.verification === 'verified')).toEqual([]);
              // After a tick (the silences reconciled): muted only while something of it is pending.
              if (ticked && muted(labels))
                expect(
                  now.filter((r) => PENDING.has(r.decision) || r.verification === 'verifying'),
                  'the alert is silenced with nothing of it pending: nobody is paged',
                ).not.toEqual([]);
            }
          }
          client.hold = false;
          await complete();
          const all = await rows();
          if (resolved) {
            expect(calls(), 'a power call after the resolution').toBe(callsAtResolution);
            expect(all.filter((r) => r.verification === 'verifying')).toEqual([]);
          }
          // The next run's episode starts later, with no alert of this one listed.
          am.listed.delete(fingerprint);
          clock.now += 30 * MIN;
          await h.engine.tick();
        },
      ),
      { numRuns: 300 },
    );
  });
});
