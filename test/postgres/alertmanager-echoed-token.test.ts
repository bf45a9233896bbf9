/**
 * A text the daemon takes from Alertmanager is scrubbed before it reaches a journal row, a reply or a log line
 * (issue 49): a proxy in front of Alertmanager answers 401 with the bearer token echoed back (plainly, and as
 * JSON writes it); the outage gate denies the power action — `denied_blocked`, saying Alertmanager cannot be
 * read — and the token is in no row, reply or log line, in any of its spellings. On both store backends.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { AlertmanagerClient } from '../../src/alertmanager/client.js';
import type { Principal } from '../../src/config/types.js';
import { type LabelMatcher, parseMatcher } from '../../src/config/matchers.js';
import { secretForms } from '../../src/scrub.js';
import { captureLogger } from '../helpers/logger.js';
import { engineHarness, remediationApp, rule, SAFETY_WITHOUT_ATTACK_GUARD } from '../helpers/remediation.js';
import { backends } from '../helpers/store-backends.js';

const AM_TOKEN = 'am-api-token/0123456789+abcdef';
const WEBHOOK = 'alertmanager-token-0123456789abcdef';
const PRINCIPALS: Principal[] = [{ name: 'alertmanager', bearerToken: WEBHOOK, roles: ['webhook'] }];
const GATE = [parseMatcher('alertname = "DatacenterOutage"') as LabelMatcher];

/** A proxy that refuses every request with a 401 whose body echoes the Authorization header it got. */
async function echoingProxy(): Promise<{ url: string; server: Server }> {
  const server = createServer((req, res) => {
    const header = req.headers.authorization ?? '';
    res.writeHead(401, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: `invalid credentials: ${header}`, plain: header }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server };
}

for (const backend of backends()) {
  describe.skipIf(backend.skip)(`a token Alertmanager's proxy echoes (${backend.name})`, () => {
    const closing: Array<() => Promise<void>> = [];
    afterEach(async () => {
      for (const close of closing.splice(0)) await close();
    });

    it('is in no journal row, reply or log line', async () => {
      const proxy = await echoingProxy();
      closing.push(() => new Promise<void>((resolve) => proxy.server.close(() => resolve())));
      const clientLog = captureLogger('debug');
      const client = new AlertmanagerClient({
        config: {
          url: proxy.url,
          timeoutMs: 5000,
          maxResponseBytes: 1 << 20,
          silenceWhileHandled: false,
          authorization: { type: 'Bearer', credentials: AM_TOKEN },
          tls: { insecureSkipVerify: false },
        },
        logger: clientLog.logger,
      });
      closing.push(() => client.close());
      const db = await backend.fresh();
      const h = await engineHarness(
        {
          principals: PRINCIPALS,
          safety: { ...SAFETY_WITHOUT_ATTACK_GUARD, blockWhileFiring: GATE },
          rules: [rule({ alertname: 'ServerDown', action: 'powercycle', verifyWithinMs: 600_000 })],
        },
        await db.open(),
        2000,
        { alertmanager: client },
      );
      const app = remediationApp(h);
      const res = await app.inject({
        method: 'POST',
        url: '/api/v1/alertmanager',
        headers: { authorization: `Bearer ${WEBHOOK}` },
        payload: {
          version: '4',
          status: 'firing',
          alerts: [
            {
              status: 'firing',
              labels: { alertname: 'ServerDown', server_id: '100001' },
              startsAt: '2026-11-21T11:58:00Z',
              fingerprint: 'fp',
            },
          ],
        },
      });
      expect(res.statusCode).toBe(200);
      const [result] = res.json().results as Array<{ decision: string; message: string }>;
      expect(result!.decision).toBe('denied_blocked');
      // What Alertmanager said is kept, its token not.
      expect(result!.message).toContain('401');
      expect(result!.message).toContain('[REDACTED]');
      // The verifier and the silence keeper read it too.
      h.clock.now += 60_000;
      await h.engine.tick();
      const rows = JSON.stringify(await h.journal.list({ limit: 100 }));
      const lines = [...h.log.lines, ...clientLog.lines].join('\n');
      expect(clientLog.lines.some((l) => l.includes('Alertmanager cannot be read'))).toBe(true);
      for (const form of secretForms(AM_TOKEN)) {
        expect(res.body).not.toContain(form);
        expect(rows).not.toContain(form);
        expect(lines).not.toContain(form);
      }
      expect(h.sim.callsTo('/api/v1/dedicated/powercycle')).toHaveLength(0);
    });
  });
}
