import { describe, expect, it } from 'vitest';
import { ID_PATTERN } from '../../../src/http/schemas.js';
import { engineHarness, remediationApp, rule, TOKEN } from '../../helpers/remediation.js';

const bearer = { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' };

async function setup() {
  const h = await engineHarness({
    rules: [
      rule({ alertname: 'BaremetalIpUnderAttack', action: 'firewall_state' }),
      rule({ alertname: 'BaremetalServerUnreachable', action: 'powercycle' }),
    ],
  });
  const app = remediationApp(h);
  return { ...h, app };
}

const alert = (labels: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  status: 'firing',
  labels: { alertname: 'BaremetalServerUnreachable', ...labels },
  annotations: {},
  startsAt: '2026-11-21T11:59:00Z',
  fingerprint: 'f1',
  ...extra,
});
const webhook = (...alerts: object[]) => ({
  version: '4',
  status: 'firing',
  receiver: 'baremetal',
  groupKey: '{}:{}',
  alerts,
});

describe('the identifier shape', () => {
  it.each(['100001', 'colo-1', 'transit-1', 'a', 'srv.ams1:2_b', 'x'.repeat(64)])('accepts %j', (id) => {
    expect(new RegExp(ID_PATTERN).test(id)).toBe(true);
  });
  it.each(['', ' 100001', '100001 ', '-1', '.hidden', '../etc', 'a/b', 'a b', 'x'.repeat(65), 'ünïcode', 'a\nb'])(
    'refuses %j',
    (id) => {
      expect(new RegExp(ID_PATTERN).test(id)).toBe(false);
    },
  );
});

describe('no type coercion: wrong types are 400 and nothing acts', () => {
  it.each([
    {
      name: 'webhook label as a number',
      url: '/api/v1/alertmanager',
      body: webhook(alert({ server_id: 100001 })),
      message: 'body/alerts/0/labels/server_id must be string',
    },
    {
      name: 'webhook label as a boolean',
      url: '/api/v1/alertmanager',
      body: webhook(alert({ server_id: true })),
      message: 'body/alerts/0/labels/server_id must be string',
    },
    {
      name: 'webhook label as a nested object',
      url: '/api/v1/alertmanager',
      body: webhook(alert({ server_id: { id: '100001' } })),
      message: 'body/alerts/0/labels/server_id must be string',
    },
    {
      name: 'webhook label as an array',
      url: '/api/v1/alertmanager',
      body: webhook(alert({ server_id: ['100001'] })),
      message: 'body/alerts/0/labels/server_id must be string',
    },
    {
      name: 'webhook annotation as a number',
      url: '/api/v1/alertmanager',
      body: webhook(alert({ server_id: '100001' }, { annotations: { summary: 1 } })),
      message: 'body/alerts/0/annotations/summary must be string',
    },
    {
      name: 'webhook truncatedAlerts as a string',
      url: '/api/v1/alertmanager',
      body: { ...webhook(alert({ server_id: '100001' })), truncatedAlerts: '0' },
      message: 'body/truncatedAlerts must be integer',
    },
    {
      name: 'webhook body as an array',
      url: '/api/v1/alertmanager',
      body: [webhook(alert({ server_id: '100001' }))],
      message: 'body must be object',
    },
    {
      name: 'operator server_id as a number',
      url: '/api/v1/actions/powercycle',
      body: { server_id: 100001 },
      message: 'body/server_id must be string',
    },
    {
      name: 'operator server_id as a boolean',
      url: '/api/v1/actions/powercycle',
      body: { server_id: true },
      message: 'body/server_id must be string',
    },
    {
      name: 'operator server_id as a nested object',
      url: '/api/v1/actions/powercycle',
      body: { server_id: { id: '100001' } },
      message: 'body/server_id must be string',
    },
    {
      name: 'operator server_id as a one-item array',
      url: '/api/v1/actions/powercycle',
      body: { server_id: ['100001'] },
      message: 'body/server_id must be string',
    },
    {
      name: 'operator server_id of the wrong shape',
      url: '/api/v1/actions/powercycle',
      body: { server_id: '100001 ' },
      message: 'body/server_id must match pattern',
    },
    {
      name: 'operator body as an array',
      url: '/api/v1/actions/powercycle',
      body: ['100001'],
      message: 'body must be object',
    },
    {
      name: 'operator body as a string',
      url: '/api/v1/actions/powercycle',
      body: '"100001"',
      message: 'body must be object',
    },
    {
      name: 'operator body with an unknown field',
      url: '/api/v1/actions/powercycle',
      body: { server_id: '100001', force: true },
      message: 'body must NOT have additional properties',
    },
    {
      name: 'operator state as a boolean',
      url: '/api/v1/actions/firewall-state',
      body: { server_id: '100001', ip: '198.18.0.1', state: true },
      message: 'body/state must be equal to one of the allowed values',
    },
    {
      name: 'operator state with a leading zero',
      url: '/api/v1/actions/firewall-state',
      body: { server_id: '100001', ip: '198.18.0.1', state: '01' },
      message: 'body/state must be equal to one of the allowed values',
    },
    {
      name: 'operator state as an array',
      url: '/api/v1/actions/firewall-state',
      body: { server_id: '100001', ip: '198.18.0.1', state: [1] },
      message: 'body/state must be equal to one of the allowed values',
    },
    {
      name: 'operator ip as a number',
      url: '/api/v1/actions/firewall-state',
      body: { server_id: '100001', ip: 3323068417, state: '1' },
      message: 'body/ip must be string',
    },
  ])('$name → 400', async ({ url, body, message }) => {
    const { app, sim, journal } = await setup();
    const res = await app.inject({
      method: 'POST',
      url,
      headers: bearer,
      payload: typeof body === 'string' ? body : JSON.stringify(body),
    });
    expect(res.statusCode).toBe(400);
    expect(res.json()).toMatchObject({
      statusCode: 400,
      error: 'Bad Request',
      message: expect.stringContaining(message),
    });
    expect(sim.calls).toEqual([]);
    expect(await journal.list({ limit: 10 })).toEqual([]);
  });

  it.each([
    { name: 'state as the string "1"', state: '1', expected: '1' },
    { name: 'state as the number 0 (as the README documents)', state: 0, expected: '0' },
  ])('accepts $name', async ({ state, expected }) => {
    const { app, sim } = await setup();
    const res = await app.inject({
      method: 'POST',
      url: '/api/v1/actions/firewall-state',
      headers: bearer,
      payload: { server_id: '100001', ip: '198.18.0.1', state },
    });
    expect(res.json()).toMatchObject({ decision: 'executed' });
    expect(sim.callsTo('/api/v1/dedicated/firewall/state').map((c) => c.params.state)).toEqual([expected]);
  });

  it.each([
    { query: 'limit=0', message: 'limit must be a whole number from 1 to 1000 (got "0")' },
    { query: 'limit=1e2', message: 'limit must be a whole number from 1 to 1000 (got "1e2")' },
    { query: 'limit=Infinity', message: 'limit must be a whole number from 1 to 1000 (got "Infinity")' },
    { query: 'limit=1001', message: 'limit must be a whole number from 1 to 1000 (got "1001")' },
    { query: 'server_id=a%20b', message: 'querystring/server_id must match pattern' },
  ])('GET /api/v1/actions?$query → 400', async ({ query, message }) => {
    const { app } = await setup();
    const res = await app.inject({ url: `/api/v1/actions?${query}`, headers: bearer });
    expect(res.statusCode).toBe(400);
    expect(res.json().message).toContain(message);
  });

  it('converts a valid limit explicitly', async () => {
    const { app } = await setup();
    for (const id of ['100001', '100002', '100003'])
      await app.inject({ method: 'POST', url: '/api/v1/actions/poweron', headers: bearer, payload: { server_id: id } });
    expect((await app.inject({ url: '/api/v1/actions?limit=2', headers: bearer })).json().actions).toHaveLength(2);
    expect((await app.inject({ url: '/api/v1/actions', headers: bearer })).json().actions).toHaveLength(3);
  });
});
