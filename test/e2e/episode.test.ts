/**
 * An alert episode as Debian's Alertmanager delivers it (issue 49, "How it is tested"): alerts are posted to
 * Alertmanager's v2 API with their startsAt/endsAt, and Alertmanager itself sends the firing and resolved
 * notifications to the daemon's webhook (group_wait/group_interval 1s, repeat_interval 2s). The upstream is the
 * simulator; what reached the API is counted there. Each test has an alertname (and a rule) and servers of its own.
 * On both state-store backends (the daemon's journal on SQLite, then on Debian's PostgreSQL).
 *
 * Two unclustered Alertmanagers both notify the daemon (as alertmanager.test.ts runs them): Alertmanager sends a
 * group's notifications one at a time and waits for the reply, so a resolved notification can only arrive during
 * a held power call through the Alertmanager whose own notification is not the one holding the call.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Daemon } from '../../src/daemon/start.js';
import type { Simulator } from '../../src/simulator/server.js';
import { VERIFY_EVERY_MS } from '../../src/remediation/verify.js';
import type { JournalEntry } from '../../src/store/rows.js';
import { startAlertmanager } from '../helpers/alertmanager.js';
import { requireBinary } from '../helpers/binaries.js';
import { accountOf, startHarness, type Harness } from '../helpers/daemon.js';
import { eventually, type startProcess } from '../helpers/processes.js';
import { backends } from '../helpers/store-backends.js';
import { tempDir } from '../helpers/tmp.js';

const alertmanager = requireBinary('/usr/bin/prometheus-alertmanager', 'prometheus-alertmanager');
const POWERCYCLE = '/api/v1/dedicated/powercycle';
const token = (name: string) => `${name}-token-0123456789abcdef`;
/** remediation.approval_timeout: long enough for a resolution to arrive first, short enough to wait for. */
const APPROVAL_TIMEOUT_S = 6;
/** How long a test waits for one thing Alertmanager and the daemon do together. */
const WAIT_MS = 30_000;

for (const backend of backends())
  describe.skipIf(alertmanager.skip || backend.skip)(
    `an alert episode as Debian's Alertmanager delivers it (${backend.name})`,
    () => {
      let harness: Harness;
      let sim: Simulator;
      let daemon: Daemon;
      const managers: Array<ReturnType<typeof startProcess> & { url: string }> = [];

      /** Posts `alerts` to Alertmanager `m` (default the first) through its v2 API. */
      const post = async (alerts: object[], m = managers[0]!) => {
        const res = await request(`${m.url}/api/v2/alerts`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(alerts),
        });
        const text = await res.body.text();
        if (res.statusCode !== 200) throw new Error(`Alertmanager ${m.url} answered ${res.statusCode}: ${text}`);
      };
      const firing = (labels: Record<string, string>, startsAt: string) => ({ labels, annotations: {}, startsAt });
      /** The same alert, ended a second ago: Alertmanager sends it resolved at its next group_interval. */
      const resolved = (labels: Record<string, string>, startsAt: string) => ({
        ...firing(labels, startsAt),
        endsAt: new Date(Date.now() - 1000).toISOString(),
      });
      /** The journal rows of `alertname`, oldest first. */
      const rowsOf = async (alertname: string) =>
        (await daemon.store.list({ limit: 1000 })).filter((e) => e.alertname === alertname).reverse();
      /** Waits until a row of `alertname` satisfies `match`, and returns it. */
      const rowWhere = async (alertname: string, what: string, match: (e: JournalEntry) => boolean) => {
        try {
          return await eventually(`${alertname}: ${what}`, async () => (await rowsOf(alertname)).find(match), WAIT_MS);
        } catch (error) {
          // What the journal holds instead says why.
          const rows = (await rowsOf(alertname)).map((e) => `${e.id} ${e.serverId} ${e.decision}: ${e.message}`);
          throw new Error(`${String(error)}; the journal:\n${rows.join('\n')}`);
        }
      };
      const calls = (serverId: string) => sim.callsTo(POWERCYCLE, { server_id: serverId });

      beforeAll(async () => {
        const dir = tempDir('bmx-episode-', 'all');
        const file = (name: string) => {
          const path = join(dir, `${name}.token`);
          writeFileSync(path, `${token(name)}\n`);
          return path;
        };
        const db = await backend.fresh();
        harness = await startHarness({
          key: 'episode-key',
          ...(db.url !== undefined ? { databaseUrl: db.url } : {}),
          stateDir: join(dir, 'state'),
          simulator: { servers: 6, attackRate: 0 },
          logLevel: 'warn',
          daemon: { remediationTickMs: 200, schedule: true, listen: true },
          config: {
            schedules: {
              servers: '*/10 * * * * *',
              firewall: '*/10 * * * * *',
              graphs: '0 0 * * * *',
              catalog: '0 0 * * * *',
            },
            remediation: {
              dry_run: false,
              approval_timeout: `${APPROVAL_TIMEOUT_S}s`,
              // Five servers (one per test, two in one) get a power action within its window; the sixth would open it.
              safety: { circuit_breaker: { max_servers: 5 } },
              auth: {
                principals: [
                  { name: 'alertmanager', bearer_token_file: file('alertmanager'), roles: ['webhook'] },
                  { name: 'bob', bearer_token_file: file('bob'), roles: ['operator', 'reader'] },
                ],
              },
              rules: [
                { alertname: 'EpisodeApproval', action: 'powercycle', require_approval: true, verify_within: '5m' },
                {
                  alertname: 'EpisodeCall',
                  steps: [
                    { action: 'powercycle', verify_within: '3s' },
                    { action: 'powercycle', verify_within: '1m', cooldown: '1s' },
                  ],
                },
                { alertname: 'EpisodeLabels', action: 'powercycle', verify_within: '5m' },
                {
                  alertname: 'EpisodeLadder',
                  steps: [
                    { action: 'powercycle', verify_within: '2s' },
                    { action: 'powercycle', verify_within: '1m', cooldown: '1s', require_approval: true },
                  ],
                },
              ],
            },
          },
        });
        ({ sim, daemon } = harness);
        await daemon.ready;
        // A power action needs the servers' attack state (remediation.safety.deny_power_when_attacked): read it now.
        const { polls } = accountOf(daemon, 'default');
        for (const poll of ['servers', 'firewall'] as const)
          await eventually(`a ${poll} poll`, async () => ((await polls.run(poll)) === 'success' ? true : undefined));
        for (const name of ['am1', 'am2'])
          managers.push(
            await startAlertmanager(alertmanager.skip ? '' : alertmanager.path, {
              dir,
              name,
              webhookUrl: `${daemon.url}/api/v1/alertmanager`,
              tokenFile: join(dir, 'alertmanager.token'),
              route:
                '  receiver: baremetal\n  group_by: [alertname]\n  group_wait: 1s\n  group_interval: 1s\n  repeat_interval: 2s',
            }),
          );
      });

      afterAll(async () => {
        await Promise.all(managers.map((m) => m.stop()));
        await harness?.stop();
      });

      it('withdraws a request awaiting approval when the alert resolves; a later approval is a 409, nothing sent', async () => {
        const labels = { alertname: 'EpisodeApproval', server_id: '100001' };
        const startsAt = new Date().toISOString();
        await post([firing(labels, startsAt)]);
        const asked = await rowWhere(
          'EpisodeApproval',
          'a request awaiting approval',
          (e) => e.decision !== 'duplicate',
        );
        expect(asked).toMatchObject({ decision: 'awaiting_approval', serverId: '100001' });

        await post([resolved(labels, startsAt)]);
        const resolution = await rowWhere('EpisodeApproval', 'the resolution', (e) => e.decision === 'resolved');
        expect(resolution).toMatchObject({ principal: 'alertmanager', alertStatus: 'resolved', serverId: '100001' });
        expect(resolution.message).toContain(`withdrew what awaited approval (journal entry ${asked.id})`);
        // The resolution is journaled before the rows it ends (episode.ts), so the withdrawal may land a moment
        // after the resolution row is visible: wait for it rather than read once.
        const withdrawn = await rowWhere(
          'EpisodeApproval',
          'the request withdrawn',
          (e) => e.id === asked.id && e.decision !== 'awaiting_approval',
        );
        expect(withdrawn.decision).toBe('withdrawn');
        const when = /its alert resolved at (\S+) /.exec(withdrawn.message ?? '')?.[1];
        expect(when).toBeDefined();

        const res = await request(`${daemon.url}/api/v1/actions/${asked.id}/approve`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token('bob')}`, 'content-type': 'application/json' },
          body: '{}',
        });
        const body = (await res.body.json()) as { message: string };
        expect(res.statusCode).toBe(409);
        expect(body.message).toContain(`its alert resolved at ${when}`);
        expect(calls('100001')).toHaveLength(0);
        expect(await daemon.store.get(asked.id)).toMatchObject({ decision: 'withdrawn' });
      });

      it('keeps a resolution that arrives during the call: verified, and the ladder takes no next step', async () => {
        const labels = { alertname: 'EpisodeCall', server_id: '100002' };
        const startsAt = new Date().toISOString();
        // The API acts at once and holds its reply back (under upstream.timeout, 10s): the call is in flight.
        sim.setFaults({ mode: 'act_then_hang', hangMs: 5000, paths: [POWERCYCLE] });
        try {
          await Promise.all(managers.map((m) => post([firing(labels, startsAt)], m)));
          await eventually('the call to reach the API', async () => (calls('100002').length === 1 ? true : undefined));
          const inFlight = await rowWhere('EpisodeCall', 'the call in flight', (e) => e.decision === 'executing');
          // Both Alertmanagers send the alert resolved; the one whose notification is not holding the call delivers.
          await Promise.all(managers.map((m) => post([resolved(labels, startsAt)], m)));
          const resolution = await rowWhere('EpisodeCall', 'the resolution', (e) => e.decision === 'resolved');
          expect(resolution.message).toContain(
            `a call in flight (journal entry ${inFlight.id}) is verified when it completes`,
          );
          const done = await rowWhere(
            'EpisodeCall',
            'the call to complete',
            (e) => e.id === inFlight.id && e.decision !== 'executing',
          );
          expect(done).toMatchObject({ decision: 'executed', ladderStep: 0, verification: 'verified' });
        } finally {
          sim.setFaults({});
        }
        // Past step 1's verify_within (3s) and a whole verification pass after it (the leader's tick checks the
        // verifying rows every VERIFY_EVERY_MS), then one more tick: nothing climbs.
        const deadline = Date.now() + 3000 + VERIFY_EVERY_MS + 500;
        await eventually(
          'a verification pass after step 1 is past its verify_within',
          async () => (Date.now() > deadline ? true : undefined),
          deadline - Date.now() + WAIT_MS,
        );
        await accountOf(daemon, 'default').engine.tick();
        const rows = await rowsOf('EpisodeCall');
        expect(rows.filter((e) => e.ladderStep === 1)).toEqual([]);
        expect(rows.filter((e) => e.decision === 'executed')).toHaveLength(1);
        expect(calls('100002')).toHaveLength(1);
      });

      it("does not settle a server's episode with another server's resolved alert", async () => {
        const a = { alertname: 'EpisodeLabels', server_id: '100003' };
        const b = { alertname: 'EpisodeLabels', server_id: '100004' };
        const startsAt = new Date().toISOString();
        // One group (group_by: [alertname]): both servers in each notification.
        await post([firing(a, startsAt), firing(b, startsAt)]);
        const executed = async (serverId: string) =>
          rowWhere(
            'EpisodeLabels',
            `${serverId} verifying`,
            (e) => e.serverId === serverId && e.decision === 'executed',
          );
        const rowA = await executed('100003');
        const rowB = await executed('100004');
        expect(rowA.verification).toBe('verifying');

        // Alertmanager sends the group again: 100003 firing, 100004 resolved.
        await post([resolved(b, startsAt)]);
        await rowWhere('EpisodeLabels', '100004 verified', (e) => e.id === rowB.id && e.verification === 'verified');
        await accountOf(daemon, 'default').engine.tick();
        expect(await daemon.store.get(rowA.id)).toMatchObject({ decision: 'executed', verification: 'verifying' });
        expect((await rowsOf('EpisodeLabels')).filter((e) => e.decision === 'resolved').map((e) => e.serverId)).toEqual(
          ['100004'],
        );

        // Its own resolution does settle it.
        await post([resolved(a, startsAt)]);
        await rowWhere('EpisodeLabels', '100003 verified', (e) => e.id === rowA.id && e.verification === 'verified');
        expect(calls('100003')).toHaveLength(1);
        expect(calls('100004')).toHaveLength(1);
      });

      it("asks for a ladder's expired step again on the next delivery of the firing alert, not a duplicate", async () => {
        const labels = { alertname: 'EpisodeLadder', server_id: '100005' };
        await post([firing(labels, new Date().toISOString())]);
        const first = await rowWhere('EpisodeLadder', 'step 1', (e) => e.decision === 'executed');
        expect(first.ladderStep).toBe(0);
        // Still firing past its verify_within (2s): ineffective, and step 2 waits for an approval that never comes.
        const asked = await rowWhere('EpisodeLadder', 'step 2 asked', (e) => e.ladderStep === 1);
        expect(asked.decision).toBe('awaiting_approval');
        const expired = await rowWhere(
          'EpisodeLadder',
          'step 2 expired',
          (e) => e.id === asked.id && e.decision === 'expired',
        );
        expect(expired.completedAt).not.toBeNull();
        // Alertmanager repeats the still-firing alert every 2s: the repeat asks for step 2 again.
        const again = await rowWhere(
          'EpisodeLadder',
          'step 2 asked again',
          (e) => e.ladderStep === 1 && e.id > asked.id,
        );
        expect(again).toMatchObject({ decision: 'awaiting_approval', action: 'powercycle' });
        expect(again.reason).toMatch(/^step 2 of 2: step 1 \(powercycle, journal entry \d+\) was ineffective$/);
        // The first delivery journaled after the expiry is that ask: none was swallowed as a duplicate.
        const afterExpiry = (await rowsOf('EpisodeLadder')).filter((e) => e.createdAt > expired.completedAt!);
        expect(afterExpiry[0]?.id).toBe(again.id);
        expect(await daemon.store.get(first.id)).toMatchObject({ verification: 'ineffective' });
        expect(calls('100005')).toHaveLength(1);
      });
    },
  );
