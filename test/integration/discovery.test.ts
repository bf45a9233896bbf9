/**
 * `GET /api/v1/discovery` (Prometheus HTTP SD) and the scope / collector switches, against the simulator:
 * the payload, filters, errors, auth, 503 before the first server list; an excluded server costs no
 * per-server request, makes no series, is no target and cannot be remediated; a switched-off collector
 * makes no request, has no series and is not waited for by /readyz.
 */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { accountOf, startHarness } from '../helpers/daemon.js';
import { TOKEN } from '../helpers/remediation.js';
import { byCodeUnits } from '../../src/order.js';

const NOW = Date.UTC(2026, 10, 23, 12, 0, 0);
const sim = { servers: 4, colocations: 0, transits: 0, attackRate: 0, seed: 5, now: () => NOW };
const AUTH = { authorization: `Bearer ${TOKEN}` };
const webAuth = ({ stateDir }: { stateDir: string }) => ({
  web: { auth: { bearer_token_files: [join(stateDir, 'token')] } },
});

async function discover(daemon: { app: import('fastify').FastifyInstance }, query = '') {
  const reply = await daemon.app.inject({ url: `/api/v1/discovery${query}`, headers: AUTH });
  return { status: reply.statusCode, type: reply.headers['content-type'], body: reply.json() };
}

describe('GET /api/v1/discovery', () => {
  it('answers 503 until the first server list, then one target group per server with its meta labels', async () => {
    const h = await startHarness({
      simulator: sim,
      remediationAuth: true,
      config: webAuth,
      daemon: { now: () => NOW, initialPolls: false },
    });
    const before = await discover(h.daemon);
    expect({ status: before.status, code: before.body.code }).toEqual({ status: 503, code: 'BM_ERR_NOT_READY' });

    h.sim.state.servers.get('100003')!.cancellation = 'immediate';
    await accountOf(h.daemon, 'default').polls.run('servers');
    const { status, type, body } = await discover(h.daemon);
    const expected = [...h.sim.state.servers.values()]
      .sort((a, b) => byCodeUnits(a.serverId, b.serverId))
      .map((server) => ({
        targets: [server.ips[0]],
        labels: {
          __meta_baremetal_account: 'default',
          __meta_baremetal_server_id: server.serverId,
          __meta_baremetal_hostname: server.hostname,
          __meta_baremetal_location: server.location,
          __meta_baremetal_status: 'online',
          __meta_baremetal_cancellation: server.cancellation === 'none' ? '' : server.cancellation,
          __meta_baremetal_ip: server.ips[0],
          __meta_baremetal_ips: server.ips.join(','),
        },
      }));
    expect({ status, type, body }).toEqual({ status: 200, type: 'application/json; charset=utf-8', body: expected });
    expect(expected).toHaveLength(4);
    expect(expected.map((group) => group.labels.__meta_baremetal_cancellation)).toEqual(['', '', 'immediate', '']);

    // port: ip:port; filters are exact and repeatable.
    const withPort = await discover(h.daemon, '?port=9100');
    expect(withPort.body.map((g: { targets: string[] }) => g.targets[0])).toEqual(
      expected.map((g) => `${g.targets[0]}:9100`),
    );
    const location = expected[0]!.labels.__meta_baremetal_location;
    const byLocation = await discover(h.daemon, `?location=${encodeURIComponent(location)}`);
    expect(byLocation.body).toEqual(expected.filter((g) => g.labels.__meta_baremetal_location === location));
    const twoIds = await discover(h.daemon, '?status=online&status=offline&account=default');
    expect(twoIds.body).toEqual(expected);
    expect((await discover(h.daemon, '?account=other')).body).toEqual([]);
    expect((await discover(h.daemon, '?status=offline')).body).toEqual([]);

    // A powered-off server shows its status after the next list.
    h.sim.state.servers.get('100002')!.power = 'off';
    await accountOf(h.daemon, 'default').polls.run('servers');
    const offline = await discover(h.daemon, '?status=offline');
    expect(offline.body.map((g: { labels: Record<string, string> }) => g.labels.__meta_baremetal_server_id)).toEqual([
      '100002',
    ]);
  });

  it('refuses a bad query with the usual error shape, and asks for the /metrics credentials', async () => {
    const h = await startHarness({
      simulator: sim,
      remediationAuth: true,
      config: webAuth,
      daemon: { now: () => NOW, initialPolls: false },
    });
    await accountOf(h.daemon, 'default').polls.run('servers');
    const cases = {
      '?port=0': 'port must be a whole number from 1 to 65535 (got "0")',
      '?port=65536': 'port must be a whole number from 1 to 65535 (got "65536")',
      '?port=9100.5': 'port must be a whole number from 1 to 65535 (got "9100.5")',
      '?port=': 'port must be a whole number from 1 to 65535 (got "")',
      '?port=1&port=2': 'port must be given once',
      '?role=robot': 'unknown query parameter "role": expected port, account, location, status',
      '?location=': 'location must be a non-empty text of at most 256 characters',
    };
    const replies: Record<string, unknown> = {};
    for (const query of Object.keys(cases)) replies[query] = (await discover(h.daemon, query)).body;
    expect(replies).toEqual(
      Object.fromEntries(
        Object.entries(cases).map(([query, message]) => [
          query,
          { statusCode: 400, code: 'BM_ERR_BAD_REQUEST', error: 'Bad Request', message },
        ]),
      ),
    );
    const open = await h.daemon.app.inject({ url: '/api/v1/discovery' });
    const wrong = await h.daemon.app.inject({
      url: '/api/v1/discovery',
      headers: { authorization: 'Bearer not-the-token-0000000' },
    });
    expect([open.statusCode, wrong.statusCode]).toEqual([401, 401]);
  });
});

describe('scope: servers.include / servers.exclude', () => {
  it('an excluded server costs no per-server request, makes no series, is no target and is not remediated', async () => {
    const h = await startHarness({
      simulator: sim,
      remediationAuth: true,
      config: (ctx) => ({
        ...webAuth(ctx),
        servers: { include: [{ hostname: 'srv10000[1-3]\\.example\\.net' }], exclude: [{ id: '100002' }] },
        graphs: { types: ['port_bits'], scales: ['day'] },
        remediation: { dry_run: false },
      }),
      daemon: { now: () => NOW, initialPolls: false },
    });
    const { polls } = accountOf(h.daemon, 'default');
    for (const job of ['servers', 'firewall', 'graphs'] as const) await polls.run(job);
    const perServer = (id: string) =>
      ['/api/v1/dedicated/firewall', '/api/v1/dedicated/graphs'].map(
        (path) => h.sim.callsTo(path, { server_id: id }).length,
      );
    expect({
      '100001': perServer('100001'),
      '100002': perServer('100002'),
      '100003': perServer('100003'),
      '100004': perServer('100004'),
    }).toEqual({ '100001': [1, 1], '100002': [0, 0], '100003': [1, 1], '100004': [0, 0] });

    await h.daemon.exposition.render();
    const metrics = (await h.daemon.app.inject({ url: '/metrics', headers: AUTH })).body;
    const idsInSeries = new Set([...metrics.matchAll(/server_id="(\d+)"/g)].map((m) => m[1]));
    expect([...idsInSeries].sort()).toEqual(['100001', '100003']);

    const targets = (await discover(h.daemon)).body.map(
      (g: { labels: Record<string, string> }) => g.labels.__meta_baremetal_server_id,
    );
    expect(targets).toEqual(['100001', '100003']);

    const action = await h.daemon.app.inject({
      method: 'POST',
      url: '/api/v1/actions/powercycle',
      headers: { ...AUTH, 'content-type': 'application/json' },
      payload: { server_id: '100002' },
    });
    expect({ status: action.statusCode, body: action.json() }).toMatchObject({
      body: {
        decision: 'denied_unknown_target',
        message: 'server 100002 is out of scope (servers.include / servers.exclude): the daemon does not act on it',
      },
    });
    expect(h.sim.callsTo('/api/v1/dedicated/powercycle')).toHaveLength(0);
  });
});

describe('collectors.* switches', () => {
  it('a switched-off collector makes no request, has no series, and /readyz does not wait for it', async () => {
    const h = await startHarness({
      simulator: { ...sim, colocations: 1 },
      config: (ctx) => ({
        ...webAuth(ctx),
        services: { colocation_ids: ['colo-1'] },
        collectors: { firewall: false, graphs: false, catalog: false },
      }),
      remediationAuth: true,
      daemon: { now: () => NOW, initialPolls: false },
    });
    const { polls } = accountOf(h.daemon, 'default');
    await polls.run('servers');
    // Ready after the server list alone: the firewall poll is off.
    const ready = await h.daemon.app.inject({ url: '/readyz' });
    expect(ready.statusCode).toBe(200);
    for (const job of ['firewall', 'graphs', 'catalog'] as const) await polls.run(job);
    const paths = [
      '/api/v1/dedicated/firewall',
      '/api/v1/colocation/firewall',
      '/api/v1/dedicated/graphs',
      '/api/v1/dedicated/provision/os_ids',
      '/api/v1/reseller/locations',
    ];
    expect(paths.map((path) => h.sim.callsTo(path).length)).toEqual([0, 0, 0, 0, 0]);
    expect(h.sim.callsTo('/api/v1/dedicated').length).toBe(1);

    await h.daemon.exposition.render();
    const metrics = (await h.daemon.app.inject({ url: '/metrics', headers: AUTH })).body;
    const names = [
      'baremetal_firewall_history_up',
      'baremetal_firewall_attack_events_total',
      'baremetal_graph_last_success_timestamp_seconds',
      'baremetal_catalog_operating_systems',
      'baremetal_catalog_locations',
    ];
    expect(names.filter((name) => new RegExp(`^${name}\\{`, 'm').test(metrics))).toEqual([]);
    expect(metrics).toMatch(/^baremetal_server_info\{/m);
  });
});
