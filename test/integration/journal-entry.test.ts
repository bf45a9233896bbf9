/**
 * `GET /api/v1/actions/{id}`: one journal entry as the list shows it (times ISO-8601), 404 for none, for the
 * reader role — what `baremetal-exporter actions show ID` reads.
 */
import { describe, expect, it } from 'vitest';
import { engineHarness, powerRequest, remediationApp, TOKEN } from '../helpers/remediation.js';

describe('GET /api/v1/actions/{id}', () => {
  it('answers one entry as the list does, and 404 for none', async () => {
    const h = await engineHarness();
    const app = remediationApp(h);
    const decided = await h.engine.request(powerRequest({ reason: 'hung' }));
    const get = (id: string) =>
      app.inject({ method: 'GET', url: `/api/v1/actions/${id}`, headers: { authorization: `Bearer ${TOKEN}` } });
    const one = await get(String(decided.id));
    expect(one.statusCode).toBe(200);
    const list = await app.inject({
      method: 'GET',
      url: '/api/v1/actions?limit=1',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(one.json()).toEqual(list.json().actions[0]);
    expect(one.json()).toMatchObject({ id: decided.id, decision: 'executed', reason: 'hung' });
    expect(one.json().createdAt).toMatch(/^\d{4}-\d{2}-\d{2}T/);
    const none = await get('999999');
    expect([none.statusCode, none.json().message]).toEqual([404, 'no journal entry 999999']);
    expect((await get('0')).statusCode).toBe(400);
    const anonymous = await app.inject({ method: 'GET', url: `/api/v1/actions/${decided.id}` });
    expect(anonymous.statusCode).toBe(401);
  });
});
