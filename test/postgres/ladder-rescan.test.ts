/**
 * An escalation ladder's climb that was owed and lost (the process stopped after the step's verification was
 * journaled `ineffective` and before the next step or the escalation was; or asking for the next step failed)
 * is found again by the leader's tick and done exactly once, on both state-store backends: by a restarted
 * process on the same database, by the same engine after a failure, never for an episode that resolved, and
 * once when two replicas rescan at once.
 */
import { describe, expect, it } from 'vitest';
import type { LadderStep, Principal } from '../../src/config/types.js';
import { JournalError } from '../../src/errors.js';
import { RemediationEngine } from '../../src/remediation/engine.js';
import type { NewEntry } from '../../src/store/rows.js';
import type { StateQueries, StateStore } from '../../src/store/store.js';
import { captureLogger } from '../helpers/logger.js';
import { freshMetrics, seriesValue } from '../helpers/metrics.js';
import { engineHarness, FIREWALL_PERIOD_MS, remediationApp, rule, simulatorTargets } from '../helpers/remediation.js';
import { backends } from '../helpers/store-backends.js';

const TOKEN = 'alertmanager-token-0123456789abcdef';
const PRINCIPALS: Principal[] = [{ name: 'alertmanager', bearerToken: TOKEN, roles: ['webhook'] }];
const MIN = 60_000;
const POWERCYCLE = '/api/v1/dedicated/powercycle';
const POWEROFF = '/api/v1/dedicated/poweroff';
const step = (action: 'powercycle' | 'poweroff', verifyMin: number, cooldownMin: number): LadderStep => ({
  action,
  verifyWithinMs: verifyMin * MIN,
  requireApproval: false,
  cooldownMs: cooldownMin * MIN,
});
/** Two steps: a powercycle, then a poweroff (its own action: no cooldown of the first applies). */
const STEPS = [step('powercycle', 10, 30), step('poweroff', 20, 10)];
const LADDER = rule({
  alertname: 'ServerDown',
  action: 'powercycle',
  verifyWithinMs: STEPS[0]!.verifyWithinMs,
  cooldownMs: STEPS[0]!.cooldownMs,
  steps: STEPS,
});
const ALERT = {
  labels: { alertname: 'ServerDown', server_id: '100002' },
  startsAt: '2026-11-21T11:58:00Z',
  fingerprint: 'fp',
};

/**
 * `inner` whose inserts of a ladder's later step (a row with `ladderStep` ≥ 1, or an escalation) fail with a
 * JournalError while `fail()` says so — in a transaction too, where a climb is decided.
 */
function failingClimbs(inner: StateStore, fail: () => boolean): StateStore {
  const wrap = <T extends StateQueries>(q: T): T =>
    new Proxy(q, {
      get(target, key, receiver) {
        const value = Reflect.get(target, key, receiver);
        if (key === 'insert')
          return async (entry: NewEntry) => {
            if ((entry.ladderStep ?? 0) >= 1 && fail()) throw new JournalError('journal write or read failed: blip');
            return (value as (e: NewEntry) => Promise<number>).call(target, entry);
          };
        if (key === 'transaction')
          return (account: string, fn: (tx: StateQueries) => Promise<unknown>, options?: { leader?: boolean }) =>
            (target as unknown as StateStore).transaction(account, (tx) => fn(wrap(tx)), options);
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
  return wrap(inner);
}

for (const backend of backends()) {
  describe.skipIf(backend.skip)(`an owed ladder climb is done after a crash or a failure (${backend.name})`, () => {
    async function setup(fail: () => boolean) {
      const db = await backend.fresh();
      const h = await engineHarness({ principals: PRINCIPALS, rules: [LADDER] }, failingClimbs(await db.open(), fail));
      const app = remediationApp(h);
      const deliver = async (status: 'firing' | 'resolved') => {
        const res = await app.inject({
          method: 'POST',
          url: '/api/v1/alertmanager',
          headers: { authorization: `Bearer ${TOKEN}` },
          payload: { version: '4', status, alerts: [{ ...ALERT, status }] },
        });
        expect(res.statusCode).toBe(200);
        return res.json().results as Array<{ id: number; decision: string }>;
      };
      const rows = async () =>
        (await h.journal.list({ limit: 100 })).reverse().map((e) => [e.ladderStep, e.decision, e.verification]);
      /** A restarted process (or another replica): a new store on the same database, a new engine over it. */
      const restart = async (config = h.config) => {
        const { registry, metrics } = freshMetrics();
        const log = captureLogger();
        const store = await db.open();
        const engine = new RemediationEngine({
          firewallPeriodMs: FIREWALL_PERIOD_MS,
          account: 'default',
          store,
          client: h.client,
          metrics,
          logger: log.logger,
          targets: simulatorTargets(h.sim),
          config,
          now: () => h.clock.now,
        });
        await engine.ready;
        const recovered = async () =>
          (await seriesValue(registry, 'baremetal_remediation_ladder_climbs_recovered_total', {
            action: 'powercycle',
          })) ?? 0;
        const warnings = () =>
          log.lines.map((l) => JSON.parse(l)).filter((l) => l.msg.startsWith('an escalation ladder climb owed'));
        return { engine, registry, log, recovered, warnings };
      };
      return { h, deliver, rows, restart };
    }

    it('a restarted process asks for the next step once, and a second tick asks nothing more', async () => {
      // The first process never journals the climb: it stops (is dropped) right after the outcome.
      const { h, deliver, rows, restart } = await setup(() => true);
      expect((await deliver('firing'))[0]!.decision).toBe('executed');
      h.clock.now += 11 * MIN;
      await h.engine.tick();
      expect(await rows()).toEqual([[0, 'executed', 'ineffective']]);
      await h.engine.stop();
      expect(h.sim.callsTo(POWEROFF)).toHaveLength(0);

      const next = await restart();
      h.clock.now += 1 * MIN;
      await next.engine.tick();
      expect(await rows()).toEqual([
        [0, 'executed', 'ineffective'],
        [1, 'executed', 'verifying'],
      ]);
      expect(h.sim.callsTo(POWEROFF)).toHaveLength(1);
      const first = (await h.journal.list({ limit: 100 })).at(-1)!;
      const second = (await h.journal.list({ limit: 1 }))[0]!;
      expect(second).toMatchObject({ action: 'poweroff', ladderStep: 1, source: 'alert' });
      expect(second.reason).toBe(`step 2 of 2: step 1 (powercycle, journal entry ${first.id}) was ineffective`);
      const warned = next.warnings();
      expect(warned).toHaveLength(1);
      expect(warned[0]).toMatchObject({
        level: 'warn',
        journal_id: first.id,
        action: 'powercycle',
        server_id: '100002',
        id: second.id,
      });
      expect(await next.recovered()).toBe(1);

      // Later ticks (the step still verifying) ask nothing more.
      h.clock.now += 1 * MIN;
      await next.engine.tick();
      h.clock.now += 1 * MIN;
      await next.engine.tick();
      expect(await rows()).toHaveLength(2);
      expect(h.sim.callsTo(POWEROFF)).toHaveLength(1);
      expect(await next.recovered()).toBe(1);

      // Another restart finds the climb done: nothing asked, nothing counted.
      const third = await restart();
      await third.engine.tick();
      expect(await rows()).toHaveLength(2);
      expect(await third.recovered()).toBe(0);
      await next.engine.stop();
      await third.engine.stop();
    });

    it('an owed escalation after the last step is journaled once by a restarted process', async () => {
      let failing = false;
      const { h, deliver, rows, restart } = await setup(() => failing);
      await deliver('firing');
      h.clock.now += 11 * MIN;
      await h.engine.tick();
      // The second step runs; its outcome is journaled, and the process stops before the escalation is.
      failing = true;
      h.clock.now += 21 * MIN;
      await h.engine.tick();
      await h.engine.stop();
      expect(await rows()).toEqual([
        [0, 'executed', 'ineffective'],
        [1, 'executed', 'ineffective'],
      ]);
      const next = await restart();
      h.clock.now += 1 * MIN;
      await next.engine.tick();
      h.clock.now += 1 * MIN;
      await next.engine.tick();
      expect(await rows()).toEqual([
        [0, 'executed', 'ineffective'],
        [1, 'executed', 'ineffective'],
        [1, 'escalated', null],
      ]);
      expect(await next.recovered()).toBe(0);
      expect(
        await seriesValue(next.registry, 'baremetal_remediation_ladder_climbs_recovered_total', { action: 'poweroff' }),
      ).toBe(1);
      expect(h.sim.callsTo(POWERCYCLE)).toHaveLength(1);
      expect(h.sim.callsTo(POWEROFF)).toHaveLength(1);
      await next.engine.stop();
    });

    it('escalates an owed climb whose rule was changed meanwhile, as the climb itself would', async () => {
      const { h, deliver, rows, restart } = await setup(() => true);
      await deliver('firing');
      h.clock.now += 11 * MIN;
      await h.engine.tick();
      await h.engine.stop();
      // The restarted process reads other rules: the second step waits 30 minutes now.
      const changed = { ...LADDER, steps: [STEPS[0]!, step('poweroff', 30, 10)] };
      const next = await restart({ ...h.config, rules: [changed] });
      h.clock.now += 1 * MIN;
      await next.engine.tick();
      h.clock.now += 1 * MIN;
      await next.engine.tick();
      expect(await rows()).toEqual([
        [0, 'executed', 'ineffective'],
        [0, 'escalated', null],
      ]);
      const first = (await h.journal.list({ limit: 100 })).at(-1)!;
      expect((await h.journal.list({ limit: 1 }))[0]!.message).toBe(
        `the ladder of remediation.rules[0] (ServerDown) was changed or removed after step 1 (powercycle, journal entry ${first.id}) was ineffective: nothing more is sent, a person must look at it`,
      );
      expect(h.sim.callsTo(POWEROFF)).toHaveLength(0);
      expect(await next.recovered()).toBe(1);
      await next.engine.stop();
    });

    it('does not climb for an episode that resolved while the climb was owed', async () => {
      const { h, deliver, rows, restart } = await setup(() => true);
      await deliver('firing');
      h.clock.now += 11 * MIN;
      await h.engine.tick();
      h.clock.now += 1 * MIN;
      await deliver('resolved');
      await h.engine.stop();
      const next = await restart();
      h.clock.now += 1 * MIN;
      await next.engine.tick();
      expect(await rows()).toEqual([
        [0, 'executed', 'ineffective'],
        [null, 'resolved', null],
      ]);
      expect(h.sim.callsTo(POWEROFF)).toHaveLength(0);
      expect(await next.recovered()).toBe(0);
      await next.engine.stop();
    });

    it('does a climb that threw once at a later tick, exactly once', async () => {
      let failures = 0;
      const { h, deliver, rows } = await setup(() => failures++ === 0);
      await deliver('firing');
      h.clock.now += 11 * MIN;
      await h.engine.tick();
      // The climb failed on the journal and was logged; nothing was asked.
      expect(failures).toBe(1);
      expect(await rows()).toEqual([[0, 'executed', 'ineffective']]);
      expect(h.log.lines.some((l) => l.includes('the next step of the escalation ladder could not be asked for'))).toBe(
        true,
      );
      h.clock.now += 1 * MIN;
      await h.engine.tick();
      expect(await rows()).toEqual([
        [0, 'executed', 'ineffective'],
        [1, 'executed', 'verifying'],
      ]);
      h.clock.now += 1 * MIN;
      await h.engine.tick();
      expect(await rows()).toHaveLength(2);
      expect(h.sim.callsTo(POWEROFF)).toHaveLength(1);
      expect(
        await seriesValue(h.registry, 'baremetal_remediation_ladder_climbs_recovered_total', { action: 'powercycle' }),
      ).toBe(1);
    });

    it('two replicas rescanning at once ask for the owed step once', async () => {
      const { h, deliver, rows, restart } = await setup(() => true);
      await deliver('firing');
      h.clock.now += 11 * MIN;
      await h.engine.tick();
      await h.engine.stop();
      const [a, b] = [await restart(), await restart()];
      h.clock.now += 1 * MIN;
      await Promise.all([a.engine.tick(), b.engine.tick()]);
      expect(await rows()).toEqual([
        [0, 'executed', 'ineffective'],
        [1, 'executed', 'verifying'],
      ]);
      expect(h.sim.callsTo(POWEROFF)).toHaveLength(1);
      expect((await a.recovered()) + (await b.recovered())).toBe(1);
      await a.engine.stop();
      await b.engine.stop();
    });
  });
}
