/**
 * An alert whose labels are longer than a journal row keeps (store/rows.ts MAX_LABELS_JSON, 4096 characters as
 * JSON) is still one episode (issue 49), on both state-store backends: its rows keep the SHA-256 of its labels,
 * its own resolved delivery verifies what it did, one whose long label differs by one character does nothing,
 * the daemon logs the bound once per delivery, and replay lists it as not replayable.
 */
import { describe, expect, it } from 'vitest';
import { history } from '../../src/cli/replay-history.js';
import type { Principal } from '../../src/config/types.js';
import { LABELS_DIGEST_KEY, MAX_LABELS_JSON } from '../../src/store/rows.js';
import { captureLogger } from '../helpers/logger.js';
import { seriesValue } from '../helpers/metrics.js';
import { engineHarness, remediationApp, rule } from '../helpers/remediation.js';
import { backends } from '../helpers/store-backends.js';

const TOKEN = 'alertmanager-token-0123456789abcdef';
const PRINCIPALS: Principal[] = [{ name: 'alertmanager', bearerToken: TOKEN, roles: ['webhook'] }];
const MIN = 60_000;
const T0 = Date.UTC(2026, 10, 21, 12);

for (const backend of backends()) {
  describe.skipIf(backend.skip)(`an alert with labels longer than a row keeps (${backend.name})`, () => {
    it('is matched by the digest of its full labels: its own resolution verifies, another does nothing', async () => {
      const db = await backend.fresh();
      const rules = [rule({ alertname: 'ServerDown', action: 'powercycle', verifyWithinMs: 10 * MIN })];
      const h = await engineHarness({ principals: PRINCIPALS, rules }, await db.open());
      const log = captureLogger();
      const app = remediationApp(h, log.logger);
      const long = 'x'.repeat(MAX_LABELS_JSON);
      const labels = { alertname: 'ServerDown', server_id: '100001', description: long };
      const deliver = async (status: 'firing' | 'resolved', l: Record<string, string>) => {
        const res = await app.inject({
          method: 'POST',
          url: '/api/v1/alertmanager',
          headers: { authorization: `Bearer ${TOKEN}` },
          payload: {
            version: '4',
            status,
            alerts: [{ status, labels: l, startsAt: new Date(T0).toISOString(), fingerprint: 'fp-long' }],
          },
        });
        expect(res.statusCode).toBe(200);
      };
      h.clock.now = T0;
      await deliver('firing', labels);
      const [acted] = await h.journal.list({ limit: 10 });
      expect([acted!.decision, acted!.verification]).toEqual(['executed', 'verifying']);
      expect(JSON.parse(acted!.labels!)).toEqual({ [LABELS_DIGEST_KEY]: expect.stringMatching(/^[0-9a-f]{64}$/) });
      // The same long labels but for one character: another alert, it settles nothing.
      h.clock.now = T0 + MIN;
      await deliver('resolved', { ...labels, description: `${long.slice(1)}y` });
      expect((await h.journal.get(acted!.id))!.verification).toBe('verifying');
      // Its own resolved delivery: verified, the resolution journaled under the same digest.
      h.clock.now = T0 + 2 * MIN;
      await deliver('resolved', labels);
      const row = (await h.journal.get(acted!.id))!;
      expect(row.verification).toBe('verified');
      const rows = (await h.journal.list({ limit: 10 })).reverse();
      expect(rows.map((r) => [r.decision, r.labels === acted!.labels])).toEqual([
        ['executed', true],
        // The other alert's resolution (nothing of it pending), under its own digest.
        ['resolved', false],
        ['resolved', true],
      ]);
      const warned = log.lines.filter((l) => l.includes(`alert labels longer than ${MAX_LABELS_JSON} characters`));
      // Each of the three deliveries (the other alert's too).
      expect(warned).toHaveLength(3);
      // Replay cannot decide it again: no labels to decide on, listed as not replayable.
      const { events } = history(rows);
      expect(events.filter((e) => e.kind === 'delivery').map((e) => e.kind === 'delivery' && e.delivery.alert)).toEqual(
        [undefined, undefined, undefined],
      );
    });

    it('warns once per alert delivered, whatever the rules that match it, its long alertname cut', async () => {
      const db = await backend.fresh();
      // The alertname is the long label; two rules match it.
      const alertname = `ServerDown${'x'.repeat(MAX_LABELS_JSON)}`;
      const rules = [
        rule({ alertname, action: 'powercycle', verifyWithinMs: 10 * MIN }),
        rule({ alertname, action: 'poweroff', verifyWithinMs: 10 * MIN }),
      ];
      const h = await engineHarness({ principals: PRINCIPALS, rules }, await db.open());
      const log = captureLogger();
      const app = remediationApp(h, log.logger);
      h.clock.now = T0;
      for (const status of ['firing', 'resolved'] as const) {
        const res = await app.inject({
          method: 'POST',
          url: '/api/v1/alertmanager',
          headers: { authorization: `Bearer ${TOKEN}` },
          payload: {
            version: '4',
            status,
            alerts: [
              {
                status,
                labels: { alertname, server_id: '100001' },
                startsAt: new Date(T0).toISOString(),
                fingerprint: 'fp-long',
              },
            ],
          },
        });
        expect(res.json().results).toHaveLength(status === 'firing' ? 2 : 0);
      }
      const warned = log.lines.filter((l) => l.includes(`alert labels longer than ${MAX_LABELS_JSON} characters`));
      expect(warned).toHaveLength(2);
      for (const line of warned) {
        expect(JSON.parse(line).alertname).toBe(`${alertname.slice(0, 200)}… (${alertname.length} characters)`);
        expect(line.length).toBeLessThan(2000);
      }
      expect(await seriesValue(h.registry, 'baremetal_alerts_labels_too_long_total', { status: 'firing' })).toBe(1);
      expect(await seriesValue(h.registry, 'baremetal_alerts_labels_too_long_total', { status: 'resolved' })).toBe(1);
    });
  });
}
