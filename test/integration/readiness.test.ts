/** /readyz means working: ready once the first servers poll and the first firewall poll of the listed servers succeeded at least partly. */
import { describe, expect, it } from 'vitest';
import { startHarness } from '../helpers/daemon.js';
import { TOKEN } from '../helpers/remediation.js';

const KEY = 'readiness-key-8d2f4a61';

describe('readiness', () => {
  it.each([
    {
      // The firewall poll has nothing to poll without a server list and no services: it does not fail, and it
      // has not read any server's history either.
      name: 'a wrong API key → 503 naming the servers poll and the 401, and the firewall poll',
      key: 'wrong-key-0000000000',
      status: 503,
      reasons: [/^the servers poll has not succeeded yet: .*401/, /^the firewall poll waits for a server list$/],
    },
    { name: 'the right key → 200', key: KEY, status: 200, reasons: [] },
  ])('$name', async ({ key, status, reasons }) => {
    const { daemon } = await startHarness({
      key: KEY,
      simulator: { servers: 3, colocations: 0, transits: 0, seed: 3 },
      env: { BAREMETAL_API_KEY: key },
    });
    await daemon.ready;
    const res = await daemon.app.inject('/readyz');
    expect(res.statusCode).toBe(status);
    const body = res.json() as { reasons?: string[] };
    expect(body.reasons ?? []).toHaveLength(reasons.length);
    for (const [i, pattern] of reasons.entries()) expect(body.reasons![i]).toMatch(pattern);
    expect(res.body).not.toContain(key);
  });

  it('a firewall run that began before the first server list read no server: not ready until one after it', async () => {
    // A scheduled firewall tick during the first servers poll (its cron fired while the list was read) polls no
    // server: /readyz must not call the daemon ready on it, for a power action on a listed server could not
    // be decided yet (its attack state unknown: 503, `remediation.safety.deny_power_when_attacked`).
    const h = await startHarness({
      key: KEY,
      simulator: { servers: 3, colocations: 0, transits: 0, attackRate: 0 },
      remediationAuth: true,
      daemon: { initialPolls: false },
    });
    const { daemon } = h;
    const { polls } = h.account('default');
    const powercycle = () =>
      daemon.app.inject({
        method: 'POST',
        url: '/api/v1/actions/powercycle',
        headers: { authorization: `Bearer ${TOKEN}` },
        payload: { server_id: '100002' },
      });
    expect(await polls.run('firewall')).toBe('success');
    expect(await polls.run('servers')).toBe('success');
    const early = await daemon.app.inject('/readyz');
    expect({ status: early.statusCode, body: early.json() }).toEqual({
      status: 503,
      body: { status: 'not ready', reasons: ['the first firewall poll has not finished'] },
    });
    // What readiness is about: the power action cannot be decided yet.
    const undecided = await powercycle();
    expect(undecided.statusCode).toBe(503);
    expect(undecided.json().message).toMatch(/attack state of server 100002 not known here yet/);
    expect(await polls.run('firewall')).toBe('success');
    expect((await daemon.app.inject('/readyz')).statusCode).toBe(200);
    const decided = await powercycle();
    expect({ status: decided.statusCode, decision: decided.json().decision }).toEqual({
      status: 200,
      decision: 'dry_run',
    });
  });
});
