/**
 * Silence while handled (issue 41), against Debian's Alertmanager: a request made from an alert that awaits
 * approval or is verifying gets a silence for the alert's labels (createdBy baremetal-exporter, its comment
 * naming the journal entry), expired once the request is no longer handled — verified, ineffective, withdrawn;
 * a silence someone expires with `amtool silence expire` stays expired for its entry (issue 51).
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { AlertmanagerClient } from '../../src/alertmanager/client.js';
import { VERIFY_EVERY_MS } from '../../src/remediation/verify.js';
import { startQuietAlertmanager } from '../helpers/alertmanager.js';
import { requireBinary } from '../helpers/binaries.js';
import { eventually } from '../helpers/processes.js';
import type { LadderStep, Principal } from '../../src/config/types.js';
import { engineHarness, powerRequest, remediationApp, rule } from '../helpers/remediation.js';

const binary = requireBinary('/usr/bin/prometheus-alertmanager', 'prometheus-alertmanager');
const amtool = requireBinary('/usr/bin/amtool', 'prometheus-alertmanager');
const MIN = 60_000;
const TOKEN = 'alertmanager-token-0123456789abcdef';
const PRINCIPALS: Principal[] = [{ name: 'alertmanager', bearerToken: TOKEN, roles: ['webhook'] }];

describe.skipIf(binary.skip)("silences while handled, against Debian's Alertmanager", () => {
  let am: Awaited<ReturnType<typeof startQuietAlertmanager>>['am'];
  let client: AlertmanagerClient;

  /** Posts the alert of `serverId` to Alertmanager and returns it as Alertmanager lists it. */
  const fire = async (serverId: string) => {
    const labels = { alertname: 'ServerDown', server_id: serverId };
    const res = await request(`${am.url}/api/v2/alerts`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify([{ labels }]),
    });
    await res.body.dump();
    const listed = await eventually('the alert to be listed', async () =>
      (await client.alerts()).find((a) => a.labels.server_id === serverId),
    );
    return { labels, listed };
  };
  /** The daemon's silences naming journal entry `id` (each test has its own journal: and its server), by state. */
  const silencesOf = async (id: number, serverId: string) =>
    (await client.silences())
      .filter(
        (s) =>
          s.createdBy === 'baremetal-exporter' &&
          s.comment.includes(`journal entry ${id} `) &&
          s.comment.includes(`of server ${serverId},`),
      )
      .map((s) => s.state);
  const harness = async () => {
    const h = await engineHarness({}, ':memory:', 2000, { alertmanager: client });
    // Alertmanager refuses a silence that ends in the past, and one starting in the future is pending: the
    // engine's clock runs a minute behind the real one here, and each tick moves it by VERIFY_EVERY_MS.
    h.clock.now = Date.now() - MIN;
    const tick = async () => {
      h.clock.now += VERIFY_EVERY_MS;
      await h.engine.tick();
    };
    return { h, tick };
  };

  beforeAll(async () => {
    ({ am, client } = await startQuietAlertmanager(binary.skip ? '' : binary.path, 'bmx-am-silences-'));
  });
  afterAll(async () => {
    await client?.close();
    await am?.stop();
  });

  it('silences the alert while its action is verifying; expires the silence once it is verified', async () => {
    const SERVER = '100001';
    const { labels, listed } = await fire(SERVER);
    const { h, tick } = await harness();
    const alert = { alertname: 'ServerDown', fingerprint: listed.fingerprint, startsAt: listed.startsAt, labels };
    const decided = await h.engine.request(
      powerRequest({ serverId: '100001', source: 'alert', idempotencyKey: 'k1', verifyWithinMs: 10 * MIN, alert }),
    );
    expect(decided.decision).toBe('executed');
    await tick();
    expect(await silencesOf(decided.id, SERVER)).toEqual(['active']);
    const silence = (await client.silences()).find((s) => s.comment.includes(`journal entry ${decided.id} `))!;
    expect(silence.comment).toContain('powercycle of server 100001, verifying until');
    await eventually('the alert to be muted', async () =>
      (await client.alerts()).some((a) => a.silencedBy.includes(silence.id)) ? true : undefined,
    );
    // Reconciled, not repeated: another run keeps the one silence.
    await tick();
    expect(await silencesOf(decided.id, SERVER)).toEqual(['active']);
    await h.engine.alertResolved({
      account: 'default',
      fingerprint: listed.fingerprint,
      startsAt: listed.startsAt,
      labels,
    });
    await tick();
    expect(await silencesOf(decided.id, SERVER)).toEqual(['expired']);
  });

  it('expires it when the action was ineffective', async () => {
    const SERVER = '100003';
    const { labels, listed } = await fire(SERVER);
    const { h, tick } = await harness();
    const alert = { alertname: 'ServerDown', fingerprint: listed.fingerprint, startsAt: listed.startsAt, labels };
    const decided = await h.engine.request(
      powerRequest({ serverId: '100003', source: 'alert', idempotencyKey: 'k3', verifyWithinMs: 2 * MIN, alert }),
    );
    await tick();
    expect(await silencesOf(decided.id, SERVER)).toEqual(['active']);
    h.clock.now += 2 * MIN;
    await tick();
    expect((await h.journal.get(decided.id))?.verification).toBe('ineffective');
    expect(await silencesOf(decided.id, SERVER)).toEqual(['expired']);
  });

  it('silences it while the request awaits approval; expires the silence once it is withdrawn', async () => {
    const SERVER = '100002';
    const { labels, listed } = await fire(SERVER);
    const { h, tick } = await harness();
    const alert = { alertname: 'ServerDown', fingerprint: listed.fingerprint, startsAt: listed.startsAt, labels };
    const asked = await h.engine.request(
      powerRequest({ serverId: '100002', source: 'alert', idempotencyKey: 'k2', requireApproval: true, alert }),
    );
    expect(asked.decision).toBe('awaiting_approval');
    await tick();
    expect(await silencesOf(asked.id, SERVER)).toEqual(['active']);
    await h.engine.withdraw((await h.journal.get(asked.id))!, 'ops');
    await tick();
    expect(await silencesOf(asked.id, SERVER)).toEqual(['expired']);
  });

  it('follows a ladder: each step silenced in turn, every silence expired once the episode is escalated', async () => {
    const SERVER = '100002';
    // The withdrawal test silenced this server under the same journal id (each test has its own journal).
    const earlier = new Set((await client.silences()).map((x) => x.id));
    const silencesOfStep = async (id: number) =>
      (await client.silences())
        .filter((x) => !earlier.has(x.id) && x.comment.includes(`journal entry ${id} `))
        .map((x) => x.state);
    const { labels, listed } = await fire(SERVER);
    const step: LadderStep = { action: 'powercycle', verifyWithinMs: 2 * MIN, requireApproval: false, cooldownMs: MIN };
    const h = await engineHarness(
      {
        principals: PRINCIPALS,
        rules: [rule({ alertname: 'ServerDown', action: 'powercycle', verifyWithinMs: 2 * MIN, steps: [step, step] })],
      },
      ':memory:',
      2000,
      { alertmanager: client },
    );
    h.clock.now = Date.now() - MIN;
    const tick = async () => {
      h.clock.now += VERIFY_EVERY_MS;
      await h.engine.tick();
    };
    const res = await remediationApp(h).inject({
      method: 'POST',
      url: '/api/v1/alertmanager',
      headers: { authorization: `Bearer ${TOKEN}` },
      payload: {
        version: '4',
        status: 'firing',
        alerts: [{ status: 'firing', labels, startsAt: listed.startsAt, fingerprint: listed.fingerprint }],
      },
    });
    const first = (res.json().results as Array<{ id: number; decision: string }>)[0]!;
    expect(first.decision).toBe('executed');
    await tick();
    expect(await silencesOfStep(first.id)).toEqual(['active']);
    // The first step does not help: the alert still fires in Alertmanager at its deadline.
    h.clock.now += 2 * MIN;
    await tick();
    const second = (await h.journal.list({ limit: 1 }))[0]!;
    expect([second.ladderStep, second.decision]).toEqual([1, 'executed']);
    await tick();
    expect(await silencesOfStep(first.id)).toEqual(['expired']);
    // The engine's clock is now ahead of Alertmanager's: the second step's silence starts in its future.
    expect((await silencesOfStep(second.id)).length).toBe(1);
    h.clock.now += 2 * MIN;
    await tick();
    await tick();
    const rows = (await h.journal.list({ limit: 10 })).reverse().map((r) => [r.ladderStep, r.decision, r.verification]);
    expect(rows).toEqual([
      [0, 'executed', 'ineffective'],
      [1, 'executed', 'ineffective'],
      [1, 'escalated', null],
    ]);
    expect(await silencesOfStep(second.id)).toEqual(['expired']);
    expect(h.sim.callsTo('/api/v1/dedicated/powercycle')).toHaveLength(2);
  });
  it.skipIf(amtool.skip)(
    'leaves a silence expired by hand with amtool expired for its entry, and says so once',
    async () => {
      const SERVER = '100003';
      // The ineffective test silenced this server under the same journal id (each test has its own journal).
      const earlier = new Set((await client.silences()).map((x) => x.id));
      const mine = async (id: number) =>
        (await client.silences())
          .filter((x) => !earlier.has(x.id) && x.comment.includes(`journal entry ${id} `))
          .map((x) => x.state);
      const { labels, listed } = await fire(SERVER);
      const { h, tick } = await harness();
      const alert = { alertname: 'ServerDown', fingerprint: listed.fingerprint, startsAt: listed.startsAt, labels };
      const decided = await h.engine.request(
        powerRequest({ serverId: SERVER, source: 'alert', idempotencyKey: 'k4', verifyWithinMs: 10 * MIN, alert }),
      );
      expect(decided.decision).toBe('executed');
      await tick();
      expect(await mine(decided.id)).toEqual(['active']);
      const silence = (await client.silences()).find((x) => !earlier.has(x.id) && x.state === 'active')!;
      // An on-call person takes it over: amtool, as they would.
      await promisify(execFile)(
        amtool.skip ? 'amtool' : amtool.path,
        ['silence', 'expire', `--alertmanager.url=${am.url}`, silence.id],
        {
          timeout: 15_000,
        },
      );
      expect(await mine(decided.id)).toEqual(['expired']);
      // Still verifying, yet the daemon does not silence it again, run after run.
      await tick();
      await tick();
      expect((await h.journal.get(decided.id))?.verification).toBe('verifying');
      expect(await mine(decided.id)).toEqual(['expired']);
      const said = h.log.lines.filter((l) => l.includes('was expired by someone'));
      expect(said).toHaveLength(1);
      expect(JSON.parse(said[0]!)).toMatchObject({ journal_id: decided.id, silence_id: silence.id, by: 'someone' });
      // The alert is no longer muted: it pages.
      await eventually('the alert to be unmuted', async () =>
        (await client.alerts()).some((a) => a.labels.server_id === SERVER && a.silencedBy.length === 0)
          ? true
          : undefined,
      );
    },
  );
});
