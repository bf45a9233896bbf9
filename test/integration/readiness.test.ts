/** /readyz means working: ready once the first servers and firewall polls succeeded at least partly. */
import { describe, expect, it } from 'vitest';
import { startHarness } from '../helpers/daemon.js';

const KEY = 'readiness-key-8d2f4a61';

describe('readiness', () => {
  it.each([
    {
      // The firewall poll has nothing to poll without a server list and no services: it does not fail.
      name: 'a wrong API key → 503 naming the servers poll and the 401',
      key: 'wrong-key-0000000000',
      status: 503,
      reasons: [/^the servers poll has not succeeded yet: .*401/],
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
});
