import bcrypt from 'bcryptjs';
import { describe, expect, it } from 'vitest';
import { engineHarness, remediationApp, rule, TOKEN } from '../../helpers/remediation.js';

const PASSWORD = 'correct horse battery staple';
const HASH = bcrypt.hashSync(PASSWORD, 4);
const bearer = { authorization: `Bearer ${TOKEN}` };
const basic = (user: string, password: string) => ({
  authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`,
});

async function setup(remediation: Parameters<typeof engineHarness>[0] = {}) {
  const h = await engineHarness({
    basicAuthUsers: { alertmanager: HASH },
    rules: [
      rule({
        alertname: 'BaremetalIpUnderAttack',
        action: 'firewall_state',
        matchers: { severity: 'critical' },
        holdMs: 300_000,
      }),
      rule({ alertname: 'BaremetalServerUnreachable', action: 'powercycle' }),
    ],
    ...remediation,
  });
  const app = remediationApp(h);
  return { ...h, app };
}

const alert = (labels: Record<string, string>, status: 'firing' | 'resolved' = 'firing', fingerprint = 'f1') => ({
  status,
  labels,
  annotations: {},
  startsAt: '2026-11-21T11:59:00Z',
  endsAt: status === 'firing' ? '0001-01-01T00:00:00Z' : '2026-11-21T12:10:00Z',
  fingerprint,
});
const payload = (...alerts: object[]) => ({
  version: '4',
  status: 'firing',
  receiver: 'baremetal',
  groupKey: '{}:{}',
  alerts,
});
const attack = (status: 'firing' | 'resolved' = 'firing') =>
  alert({ alertname: 'BaremetalIpUnderAttack', severity: 'critical', server_id: '100001', ip: '198.18.0.1' }, status);

describe('authentication', () => {
  it.each([
    { name: 'no credentials', headers: {}, status: 401, message: 'credentials required: bearer token or basic auth' },
    { name: 'a wrong token', headers: { authorization: 'Bearer nope' }, status: 401, message: 'invalid credentials' },
    { name: 'a wrong password', headers: basic('alertmanager', 'nope'), status: 401, message: 'invalid credentials' },
    { name: 'an unknown user', headers: basic('mallory', PASSWORD), status: 401, message: 'invalid credentials' },
    { name: 'the right token', headers: bearer, status: 200, message: undefined },
    { name: 'the right basic-auth pair', headers: basic('alertmanager', PASSWORD), status: 200, message: undefined },
  ])('$name → $status', async ({ headers, status, message }) => {
    const { app } = await setup();
    const res = await app.inject({ method: 'GET', url: '/api/v1/actions', headers });
    expect(res.statusCode).toBe(status);
    if (message) {
      expect(res.json()).toMatchObject({ statusCode: 401, code: 'BM_ERR_UNAUTHORIZED', message });
      expect(res.headers['www-authenticate']).toContain('Bearer');
    }
  });

  it('answers 403 on every action endpoint when no credentials are configured, and keeps /metrics open', async () => {
    const { app } = await setup({ bearerTokens: [], basicAuthUsers: {} });
    for (const [method, url] of [
      ['POST', '/api/v1/alertmanager'],
      ['POST', '/api/v1/actions/powercycle'],
      ['GET', '/api/v1/actions'],
      ['GET', '/api/v1/servers/100001/console.jnlp'],
    ] as const) {
      const res = await app.inject({ method, url, headers: bearer, ...(method === 'POST' ? { payload: {} } : {}) });
      expect(res.statusCode, url).toBe(403);
      expect(res.json().code).toBe('BM_ERR_FORBIDDEN');
    }
    expect((await app.inject('/metrics')).statusCode).toBe(200);
  });
});

describe('POST /api/v1/alertmanager', () => {
  it('matches each alert of the group separately and answers 200 whatever the decisions', async () => {
    const { app, sim } = await setup();
    const res = await app.inject({
      method: 'POST',
      url: '/api/v1/alertmanager',
      headers: bearer,
      payload: payload(
        attack(),
        alert({ alertname: 'BaremetalServerUnreachable', server_id: '999' }, 'firing', 'f2'),
        alert(
          { alertname: 'BaremetalIpUnderAttack', severity: 'warning', server_id: '100001', ip: '198.18.0.2' },
          'firing',
          'f3',
        ),
        alert({ alertname: 'SomethingElse' }, 'firing', 'f4'),
      ),
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({
      status: 'accepted',
      alerts: 4,
      results: [
        { fingerprint: 'f1', action: 'firewall_state', server_id: '100001', ip: '198.18.0.1', decision: 'executed' },
        { fingerprint: 'f2', action: 'powercycle', server_id: '999', decision: 'denied_unknown_target' },
      ],
    });
    expect(res.json().results).toHaveLength(2);
    expect(sim.callsTo('/api/v1/dedicated/firewall/state')).toHaveLength(1);
  });

  it.each([
    { maxAlerts: 1000, alerts: 1001 },
    { maxAlerts: 2, alerts: 3 },
  ])(
    'refuses a delivery of $alerts alerts above remediation.max_alerts ($maxAlerts): 400 naming the key, nothing done',
    async ({ maxAlerts, alerts }) => {
      const { app, sim } = await setup({ maxAlerts });
      const many = Array.from({ length: alerts }, (_, i) => ({ ...attack(), fingerprint: `f${i}` }));
      const res = await app.inject({
        method: 'POST',
        url: '/api/v1/alertmanager',
        headers: bearer,
        payload: payload(...many),
      });
      expect(res.statusCode).toBe(400);
      expect(res.json()).toMatchObject({
        code: 'BM_ERR_BAD_REQUEST',
        message: `${alerts} alerts in one delivery, above remediation.max_alerts (${maxAlerts}); nothing was done: set max_alerts on Alertmanager's webhook_config at or below it`,
      });
      expect(sim.callsTo('/api/v1/dedicated/firewall/state')).toHaveLength(0);
    },
  );

  it('accepts a delivery of remediation.max_alerts alerts, more than the old fixed limit of 1000', async () => {
    const { app } = await setup({ maxAlerts: 1500 });
    const many = Array.from({ length: 1500 }, (_, i) => alert({ alertname: 'SomethingElse' }, 'firing', `f${i}`));
    const res = await app.inject({
      method: 'POST',
      url: '/api/v1/alertmanager',
      headers: bearer,
      payload: payload(...many),
    });
    expect(res.statusCode).toBe(200);
    expect(res.json()).toMatchObject({ status: 'accepted', alerts: 1500 });
  });

  it('acts once on the same alert delivered twice (a second Alertmanager, a repeat)', async () => {
    const { app, sim } = await setup();
    for (let i = 0; i < 3; i++)
      await app.inject({ method: 'POST', url: '/api/v1/alertmanager', headers: bearer, payload: payload(attack()) });
    expect(sim.callsTo('/api/v1/dedicated/firewall/state')).toHaveLength(1);
    const decisions = (await app.inject({ url: '/api/v1/actions', headers: bearer }))
      .json()
      .actions.map((a: { decision: string }) => a.decision);
    expect(decisions).toEqual(['duplicate', 'duplicate', 'executed']);
  });

  it.each([
    { name: 'malformed JSON', body: '{"version": "4", ', status: 400, message: /JSON/i },
    {
      name: 'a wrong version',
      body: JSON.stringify({ ...payload(attack()), version: '3' }),
      status: 400,
      message: /body\/version must be equal to constant/,
    },
    {
      name: 'alerts missing',
      body: JSON.stringify({ version: '4', status: 'firing' }),
      status: 400,
      message: /must have required property 'alerts'/,
    },
    {
      name: 'an alert without fingerprint',
      body: JSON.stringify(payload({ ...attack(), fingerprint: undefined })),
      status: 400,
      message: /body\/alerts\/0 must have required property 'fingerprint'/,
    },
    {
      name: 'a label the rule needs',
      body: JSON.stringify(
        payload(
          attack(),
          alert({ alertname: 'BaremetalIpUnderAttack', severity: 'critical', server_id: '100001' }, 'firing', 'f9'),
        ),
      ),
      status: 400,
      message: /^alerts\[1\]\.labels\.ip: required by the firewall_state rule for BaremetalIpUnderAttack$/,
    },
    {
      name: 'a label name Prometheus would not allow',
      body: JSON.stringify(
        payload(attack(), alert({ alertname: 'ServerDown', 'server-id': '100001' }, 'firing', 'f9')),
      ),
      status: 400,
      message: /^body\/alerts\/1\/labels: "server-id" is not a label name \(\^\[a-zA-Z_\]\[a-zA-Z0-9_\]\*\$\)$/,
    },
    {
      name: 'a body over 1 MiB',
      body: JSON.stringify({ ...payload(attack()), pad: 'x'.repeat(1024 * 1024) }),
      status: 413,
      message: /too large/i,
    },
  ])('answers $status with a JSON error for $name, acting on nothing', async ({ body, status, message }) => {
    const { app, sim } = await setup();
    const res = await app.inject({
      method: 'POST',
      url: '/api/v1/alertmanager',
      headers: { ...bearer, 'content-type': 'application/json' },
      payload: body,
    });
    expect(res.statusCode).toBe(status);
    expect(res.json()).toMatchObject({ statusCode: status, message: expect.stringMatching(message) });
    expect(sim.calls).toEqual([]);
  });

  it('answers 503 when the journal cannot be written, so Alertmanager retries', async () => {
    const { app, journal, sim } = await setup();
    journal.close();
    const res = await app.inject({
      method: 'POST',
      url: '/api/v1/alertmanager',
      headers: bearer,
      payload: payload(attack()),
    });
    expect(res.statusCode).toBe(503);
    expect(res.json()).toMatchObject({ code: 'BM_ERR_JOURNAL' });
    expect(sim.calls).toEqual([]);
  });
});

describe('operator endpoints', () => {
  it('power-cycles through the guards and lists the journal newest first, filterable', async () => {
    const { app, sim } = await setup();
    const first = await app.inject({
      method: 'POST',
      url: '/api/v1/actions/powercycle',
      headers: bearer,
      payload: { server_id: '100002' },
    });
    expect(first.json()).toMatchObject({ action: 'powercycle', server_id: '100002', decision: 'executed' });
    await app.inject({
      method: 'POST',
      url: '/api/v1/actions/firewall-sensitivity',
      headers: bearer,
      payload: { server_id: '100001', ip: '198.18.0.2', sensitivity: 'high' },
    });
    await app.inject({
      method: 'POST',
      url: '/api/v1/actions/powercycle',
      headers: bearer,
      payload: { server_id: '100002' },
    });
    expect(sim.state.firewallSetting('198.18.0.2').sensitivity).toBe('high');
    const all = (await app.inject({ url: '/api/v1/actions', headers: bearer })).json().actions;
    expect(all.map((a: { action: string; decision: string }) => `${a.action}:${a.decision}`)).toEqual([
      'powercycle:cooldown',
      'firewall_sensitivity:executed',
      'powercycle:executed',
    ]);
    const filtered = (await app.inject({ url: '/api/v1/actions?action=powercycle&limit=1', headers: bearer })).json()
      .actions;
    expect(filtered).toEqual([
      expect.objectContaining({ action: 'powercycle', decision: 'cooldown', source: 'operator' }),
    ]);
    expect(
      (await app.inject({ url: '/api/v1/actions?server_id=100001', headers: bearer })).json().actions,
    ).toHaveLength(1);
  });

  it('acts once per Idempotency-Key', async () => {
    const { app, sim } = await setup();
    for (let i = 0; i < 2; i++) {
      await app.inject({
        method: 'POST',
        url: '/api/v1/actions/poweroff',
        headers: { ...bearer, 'idempotency-key': 'ticket-42' },
        payload: { server_id: '100003' },
      });
    }
    expect(sim.callsTo('/api/v1/dedicated/poweroff')).toHaveLength(1);
  });

  it.each([
    { url: '/api/v1/actions/powercycle', payload: {}, message: "body must have required property 'server_id'" },
    {
      url: '/api/v1/actions/powercycle',
      payload: { server_id: '1', priority: 'high' },
      message: 'body must NOT have additional properties',
    },
    {
      url: '/api/v1/actions/firewall-state',
      payload: { server_id: '100001', ip: '198.18.0.1', state: 2 },
      message: 'body/state must be equal to one of the allowed values',
    },
    {
      url: '/api/v1/actions/firewall-state',
      payload: { server_id: '100001', ip: 'not-an-ip', state: 1 },
      message: 'body/ip must match format "ipv4"',
    },
    {
      url: '/api/v1/actions/firewall-sensitivity',
      payload: { server_id: '100001', ip: '198.18.0.1', sensitivity: 'max' },
      message: 'body/sensitivity must be equal to one of the allowed values',
    },
  ])('rejects $payload at $url', async ({ url, payload: body, message }) => {
    const { app, sim } = await setup();
    const res = await app.inject({ method: 'POST', url, headers: bearer, payload: body });
    expect(res.statusCode).toBe(400);
    expect(res.json().message).toContain(message);
    expect(sim.calls).toEqual([]);
  });

  it('serves the console descriptor as a download', async () => {
    const { app } = await setup();
    const res = await app.inject({ url: '/api/v1/servers/100001/console.jnlp', headers: bearer });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/octet-stream');
    expect(res.headers['content-disposition']).toBe('attachment; filename="console-100001.jnlp"');
    expect(res.body).toContain('<jnlp');
  });
});

describe('baremetal_alerts_received_total', () => {
  it.each([
    { name: 'an alert a rule matches', alerts: [attack()], expected: { 'firing/true': 1 } },
    {
      name: 'an alert no rule matches',
      alerts: [alert({ alertname: 'SomethingElse', server_id: '100001' })],
      expected: { 'firing/false': 1 },
    },
    {
      name: 'one of each, resolved',
      alerts: [attack('resolved'), alert({ alertname: 'SomethingElse' }, 'resolved', 'f2')],
      expected: { 'resolved/true': 1, 'resolved/false': 1 },
    },
  ])('counts $name by status and matched', async ({ alerts, expected }) => {
    const { app, registry } = await setup();
    const res = await app.inject({
      method: 'POST',
      url: '/api/v1/alertmanager',
      headers: bearer,
      payload: payload(...alerts),
    });
    expect(res.statusCode).toBe(200);
    const counted = Object.fromEntries(
      (await registry.getSingleMetric('baremetal_alerts_received_total')!.get()).values.map((v) => [
        `${v.labels.status}/${v.labels.matched}`,
        v.value,
      ]),
    );
    expect(counted).toEqual(expected);
  });
});
