import { MockAgent } from 'undici';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { AlertmanagerClient } from '../../../src/alertmanager/client.js';
import type { AlertmanagerConfig } from '../../../src/config/types.js';
import { AlertmanagerError } from '../../../src/errors.js';
import { captureLogger } from '../../helpers/logger.js';

const URL = 'http://am.test:9093';
const config = (over: Partial<AlertmanagerConfig> = {}): AlertmanagerConfig => ({
  url: URL,
  timeoutMs: 5000,
  maxResponseBytes: 4096,
  silenceWhileHandled: true,
  tls: { insecureSkipVerify: false },
  ...over,
});
const alert = {
  fingerprint: 'abc',
  labels: { alertname: 'Outage', dc: 'fra1' },
  startsAt: '2026-01-01T00:00:00Z',
  endsAt: '2026-01-01T01:00:00Z',
  status: { state: 'active', silencedBy: [], inhibitedBy: [] },
};

let agent: MockAgent;
beforeEach(() => {
  agent = new MockAgent();
  agent.disableNetConnect();
});
afterEach(() => agent.close());

const client = (over: Partial<AlertmanagerConfig> = {}) => {
  const outcomes: string[] = [];
  const { logger, lines } = captureLogger('info');
  const c = new AlertmanagerClient({
    config: config(over),
    logger,
    dispatcher: agent,
    onOutcome: (operation, ok) => outcomes.push(`${operation}:${ok}`),
  });
  return { c, outcomes, lines };
};

describe('AlertmanagerClient', () => {
  it.each([
    [
      'a bearer token',
      { authorization: { type: 'Bearer', credentials: 'tok-0123456789abcdef' } },
      'Bearer tok-0123456789abcdef',
    ],
    ['basic auth', { basicAuth: { username: 'u', password: 'p' } }, `Basic ${Buffer.from('u:p').toString('base64')}`],
  ])('reads the alerts with %s in the Authorization header', async (_name, over, header) => {
    agent
      .get(URL)
      .intercept({
        path: '/api/v2/alerts?active=true&silenced=true&inhibited=true&unprocessed=true',
        headers: { authorization: header },
      })
      .reply(200, [alert]);
    const { c, outcomes } = client(over);
    expect(await c.alerts()).toEqual([
      { fingerprint: 'abc', labels: alert.labels, startsAt: alert.startsAt, state: 'active', silencedBy: [] },
    ]);
    expect(outcomes).toEqual(['get_alerts:true']);
  });

  it("reads when Alertmanager started from /api/v2/status's uptime, and refuses one that is no time", async () => {
    const pool = agent.get(URL);
    pool
      .intercept({ path: '/api/v2/status' })
      .reply(200, { uptime: '2026-11-28T10:00:00.123Z', cluster: { status: 'disabled' } });
    pool.intercept({ path: '/api/v2/status' }).reply(200, { uptime: 'yesterday' });
    const { c, outcomes } = client();
    expect(await c.status()).toEqual({ startedAt: Date.parse('2026-11-28T10:00:00.123Z') });
    await expect(c.status()).rejects.toThrow(/uptime is not a time: "yesterday"/);
    expect(outcomes).toEqual(['get_status:true', 'get_status:false']);
  });

  it('creates a silence with its times in RFC 3339 and expires it', async () => {
    let posted: unknown;
    agent
      .get(URL)
      .intercept({ path: '/api/v2/silences', method: 'POST' })
      .reply(200, (opts) => {
        posted = JSON.parse(String(opts.body));
        return { silenceID: 'sil-1' };
      });
    agent.get(URL).intercept({ path: '/api/v2/silence/sil-1', method: 'DELETE' }).reply(200, '');
    const { c, outcomes } = client();
    const id = await c.createSilence({
      matchers: [{ name: 'alertname', value: 'Down', isRegex: false, isEqual: true }],
      startsAt: 0,
      endsAt: 60_000,
      createdBy: 'baremetal-exporter',
      comment: 'journal entry 7',
    });
    expect(id).toBe('sil-1');
    expect(posted).toMatchObject({ startsAt: '1970-01-01T00:00:00.000Z', endsAt: '1970-01-01T00:01:00.000Z' });
    await c.expireSilence(id);
    expect(outcomes).toEqual(['create_silence:true', 'expire_silence:true']);
  });

  it.each([
    [
      'a non-2xx status',
      (a: MockAgent) =>
        a
          .get(URL)
          .intercept({ path: /alerts/ })
          .reply(503, 'overloaded'),
      '503 overloaded',
    ],
    [
      'a reply larger than the cap',
      (a: MockAgent) =>
        a
          .get(URL)
          .intercept({ path: /alerts/ })
          .reply(200, 'x'.repeat(5000)),
      'max_response_bytes (4096)',
    ],
    [
      'a reply of another shape',
      (a: MockAgent) =>
        a
          .get(URL)
          .intercept({ path: /alerts/ })
          .reply(200, [{ labels: 1 }]),
      "reply not of API v2's shape",
    ],
    [
      'no connection',
      (a: MockAgent) =>
        a
          .get(URL)
          .intercept({ path: /alerts/ })
          .replyWithError(new Error('connect ECONNREFUSED')),
      'ECONNREFUSED',
    ],
  ])('fails with AlertmanagerError on %s, counted, logged once until it answers again', async (_name, setup, text) => {
    setup(agent);
    setup(agent);
    agent
      .get(URL)
      .intercept({ path: /alerts/ })
      .reply(200, []);
    const { c, outcomes, lines } = client({ authorization: { type: 'Bearer', credentials: 'never-shown-0123456789' } });
    for (let i = 0; i < 2; i++) {
      const error = await c.alerts().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(AlertmanagerError);
      expect((error as Error).message).toContain('[GET] "/api/v2/alerts"');
      expect((error as Error).message).toContain(text);
    }
    expect(await c.alerts()).toEqual([]);
    expect(outcomes).toEqual(['get_alerts:false', 'get_alerts:false', 'get_alerts:true']);
    expect(lines.filter((l) => l.includes('Alertmanager cannot be read'))).toHaveLength(1);
    expect(lines.filter((l) => l.includes('Alertmanager answers again'))).toHaveLength(1);
    expect(lines.join('\n')).not.toContain('never-shown');
  });
});
