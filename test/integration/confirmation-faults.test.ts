import { afterEach, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../src/simulator/server.js';
import { runCli } from '../helpers/cli.js';
import { startHarness } from '../helpers/daemon.js';
import { POWERCYCLE_REMEDIATION, TOKEN, unreachableAlert } from '../helpers/remediation.js';

/** the simulator of a CLI row (the daemon rows use the harness's) */
let sim: Simulator | undefined;
afterEach(async () => {
  await sim?.close();
  sim = undefined;
});

const auth = { authorization: `Bearer ${TOKEN}` };
const STATE = '/api/v1/dedicated/firewall/state';

async function start() {
  const h = await startHarness({
    key: 'k',
    simulator: { servers: 3, attackRate: 0 },
    remediationAuth: true,
    config: { upstream: { timeout: '500ms' }, remediation: POWERCYCLE_REMEDIATION },
  });
  await h.daemon.ready;
  return { daemon: h.daemon, sim: h.sim };
}

const alert = unreachableAlert('2026-11-21T11:59:00Z', 'c0ffee0123456789');

describe('the daemon reads an action reply by §7', () => {
  it.each([
    {
      name: 'an alert → powercycle confirmed as {error: false} → executed, journaled success',
      url: '/api/v1/alertmanager',
      payload: alert,
      path: '/api/v1/dedicated/powercycle',
      pick: (body: { results: Array<{ decision: string; message: string }> }) => body.results[0]!,
      message: 'Power cycle initiated.',
    },
    {
      name: 'operator poweroff confirmed as {error: false} → executed',
      url: '/api/v1/actions/poweroff',
      payload: { server_id: '100001' },
      path: '/api/v1/dedicated/poweroff',
      pick: (body: { decision: string; message: string }) => body,
      message: 'Power off initiated.',
    },
    {
      name: 'operator firewall sensitivity confirmed as {error: false} → executed',
      url: '/api/v1/actions/firewall-sensitivity',
      payload: { server_id: '100001', ip: '198.18.0.1', sensitivity: 'high' },
      path: '/api/v1/dedicated/firewall/sensitivity',
      pick: (body: { decision: string; message: string }) => body,
      message: 'IP 198.18.0.1 was updated.',
    },
  ])('$name', async ({ url, payload, path, pick, message }) => {
    const { daemon: d, sim: s } = await start();
    s.setFaults({ mode: 'error_false', paths: [path] });
    const res = await d.app.inject({ method: 'POST', url, headers: auth, payload });
    expect(res.statusCode).toBe(200);
    expect(pick(res.json())).toMatchObject({ decision: 'executed', message });
    expect((await d.store.list({ limit: 1 }))[0]).toMatchObject({
      decision: 'executed',
      upstreamOutcome: 'success',
      message,
    });
    expect(s.callsTo(path)).toHaveLength(1);
  });

  it('firewall state confirmed as {error: false} → executed, applied, nothing left pending to retry', async () => {
    const { daemon: d, sim: s } = await start();
    s.setFaults({ mode: 'error_false', paths: [STATE] });
    const res = await d.app.inject({
      method: 'POST',
      url: '/api/v1/actions/firewall-state',
      headers: auth,
      payload: { server_id: '100001', ip: '198.18.0.1', state: '1' },
    });
    expect(res.json()).toMatchObject({ decision: 'executed' });
    expect(await d.store.desired('default', '100001', '198.18.0.1')).toMatchObject({
      pending: false,
      desiredState: '1',
      appliedState: '1',
    });
    expect(s.callsTo(STATE)).toHaveLength(1);
  });

  it.each([
    { mode: 'success_false' as const, message: 'The request could not be completed.' },
    { mode: 'error_true' as const, message: 'An unexpected error occurred.' },
  ])('a refusal as $mode stays failed with the API message', async ({ mode, message }) => {
    const { daemon: d, sim: s } = await start();
    s.setFaults({ mode, paths: ['/api/v1/dedicated/poweroff'] });
    const res = await d.app.inject({
      method: 'POST',
      url: '/api/v1/actions/poweroff',
      headers: auth,
      payload: { server_id: '100001' },
    });
    expect(res.json()).toMatchObject({ decision: 'failed', message: expect.stringContaining(message) });
    expect((await d.store.list({ limit: 1 }))[0]).toMatchObject({
      decision: 'failed',
      upstreamOutcome: 'BM_ERR_API',
    });
  });
  it('a reply that says neither (not JSON, or not an object) → unknown: the API may have acted', async () => {
    const { daemon: d, sim: s } = await start();
    s.setFaults({ malformedRate: 1, paths: ['/api/v1/dedicated/poweroff'] });
    const res = await d.app.inject({
      method: 'POST',
      url: '/api/v1/actions/poweroff',
      headers: auth,
      payload: { server_id: '100001' },
    });
    expect(res.json()).toMatchObject({ decision: 'unknown', message: expect.stringContaining('invalid reply') });
    expect((await d.store.list({ limit: 1 }))[0]).toMatchObject({
      decision: 'unknown',
      upstreamOutcome: 'BM_ERR_INVALID_REPLY',
    });
  });
});

describe('the CLI reads {error: false} as a confirmation', () => {
  it.each([
    {
      name: 'api ptr set',
      args: ['ptr', 'set', '100002', '198.18.0.3', 'mail.example.org'],
      path: '/api/v1/dedicated/dns',
    },
    {
      name: 'api cancellation … delete',
      args: ['cancellation', '100002', 'delete'],
      path: '/api/v1/reseller/billing/cancellation',
    },
    { name: 'api power on', args: ['power', 'on', '100002'], path: '/api/v1/dedicated/poweron' },
    {
      name: 'api firewall sensitivity',
      args: ['firewall', 'sensitivity', '100002', '198.18.0.3', 'low'],
      path: '/api/v1/dedicated/firewall/sensitivity',
    },
  ])('$name exits 0 with the API message', async ({ args, path }) => {
    sim = await startSimulator({ apiKey: 'k', servers: 3, attackRate: 0 });
    sim.setFaults({ mode: 'error_false', paths: [path] });
    const r = await runCli(['api', ...args, '--yes', '--output', 'json'], {
      BAREMETAL_API_URL: sim.url,
      BAREMETAL_API_KEY: 'k',
    });
    expect([r.code, r.stderr]).toEqual([0, '']);
    expect(JSON.parse(r.stdout)).toMatchObject({ success: true, message: expect.stringMatching(/\S/) });
    expect(sim.callsTo(path)).toHaveLength(1);
  });
});
