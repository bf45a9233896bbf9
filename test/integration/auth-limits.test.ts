/**
 * `web.auth_limits` from the config file reaches the daemon's app (daemon/parts.ts → buildApp), and its
 * refusals are counted in the daemon's registry (`baremetal_http_auth_refusals_total`).
 */
import bcrypt from 'bcryptjs';
import { describe, expect, it } from 'vitest';
import { startHarness } from '../helpers/daemon.js';
import { seriesValue } from '../helpers/metrics.js';

const PASSWORD = 'scrape-password-0123';
const HASH = bcrypt.hashSync(PASSWORD, 4);
const basic = (password: string) => `Basic ${Buffer.from(`prometheus:${password}`).toString('base64')}`;

describe('web.auth_limits in the daemon', () => {
  it('refuses the second wrong password of an address with 429 when the burst is 1, and counts it', async () => {
    const h = await startHarness({
      simulator: { servers: 1, attackRate: 0 },
      config: {
        web: {
          auth: { basic_auth_users: { prometheus: HASH } },
          // A refill slower than the test: two checks on a loaded machine may take longer than the default 2 s.
          auth_limits: { wrong_password_burst: 1, wrong_password_refill: '1h' },
        },
      },
      daemon: { initialPolls: false },
    });
    const statuses = [];
    for (const password of ['wrong-1', 'wrong-2']) {
      const res = await h.daemon.app.inject({ url: '/metrics', headers: { authorization: basic(password) } });
      statuses.push(res.statusCode);
    }
    expect(statuses).toEqual([401, 429]);
    const count = (reason: string) => seriesValue(h.daemon.registry, 'baremetal_http_auth_refusals_total', { reason });
    expect([await count('wrong_passwords'), await count('in_flight'), await count('busy')]).toEqual([1, 0, 0]);
  });
});
