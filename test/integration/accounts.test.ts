import { describe, expect, it } from 'vitest';
import { configProblems } from '../helpers/config-problems.js';
import { buildConfig } from '../../src/config/load.js';
import { initialPolls } from '../../src/daemon/accounts.js';
import type { Daemon } from '../../src/daemon/start.js';
import { ACCOUNT_METRICS } from '../../src/metrics/definitions.js';
import { accountOf, startHarness } from '../helpers/daemon.js';
import { TOKEN } from '../helpers/remediation.js';

const NOW = Date.UTC(2026, 10, 21, 12, 0, 0);
/** Each account's simulator: no services, no attacks, the fixed clock. */
const upstream = (servers: number) => ({
  servers,
  colocations: 0,
  transits: 0,
  attackRate: 0,
  seed: 3,
  now: () => NOW,
});
const daemonOptions = { now: () => NOW, initialPolls: false };

const value = async (daemon: Daemon, name: string, labels: Record<string, string>) => {
  const { values } = await daemon.registry.getSingleMetric(name)!.get();
  return values.find((v) =>
    Object.entries(labels).every(([k, l]) => String((v.labels as Record<string, unknown>)[k]) === l),
  )?.value;
};

describe('several accounts', () => {
  it.each([
    { name: 'both keys good: each account its own series', badKey: false, upB: 1 },
    { name: 'a bad key on one account leaves the other green', badKey: true, upB: 0 },
  ])('$name', async ({ badKey, upB }) => {
    const { daemon } = await startHarness({
      key: 'key-0123456789',
      accounts: { main: upstream(3), 'reseller-eu': upstream(5) },
      // The second account's key as configured: the simulator's, or a wrong one.
      config: ({ sims }) => ({
        accounts: [
          { name: 'main', base_url: sims.get('main')!.url, api_key: 'key-0123456789-main', retries: 0 },
          {
            name: 'reseller-eu',
            base_url: sims.get('reseller-eu')!.url,
            api_key: badKey ? 'wrong-key-000000' : 'key-0123456789-reseller-eu',
            retries: 0,
          },
        ],
      }),
      daemon: daemonOptions,
    });
    for (const account of daemon.accounts.values()) await account.polls.run('servers');
    expect({
      serversMain: await value(daemon, 'baremetal_servers', { account: 'main' }),
      serversB: await value(daemon, 'baremetal_servers', { account: 'reseller-eu' }),
      upMain: await value(daemon, 'baremetal_api_up', { account: 'main' }),
      upB: await value(daemon, 'baremetal_api_up', { account: 'reseller-eu' }),
    }).toEqual({ serversMain: 3, serversB: badKey ? 0 : 5, upMain: 1, upB });
  });

  describe('remediation targets are (account, server_id)', () => {
    const POWERCYCLE = '/api/v1/dedicated/powercycle';
    const alert = (labels: Record<string, string>) => ({
      version: '4',
      status: 'firing',
      alerts: [
        {
          status: 'firing',
          labels: { alertname: 'ServerDown', server_id: '100001', ...labels },
          startsAt: '2026-11-21T12:00:00Z',
          fingerprint: 'f1',
        },
      ],
    });
    const configured = '(configured: main, reseller-eu)';

    it.each([
      {
        name: 'an alert naming reseller-eu power-cycles server 100001 of reseller-eu only',
        url: '/api/v1/alertmanager',
        payload: alert({ account: 'reseller-eu' }),
        status: 200,
        message: undefined,
        calls: { main: 0, reseller: 1 },
      },
      {
        name: 'an alert without the account label is refused: nothing acts',
        url: '/api/v1/alertmanager',
        payload: alert({}),
        status: 400,
        message: `alerts[0].labels.account: required by the powercycle rule for ServerDown with several accounts ${configured}`,
        calls: { main: 0, reseller: 0 },
      },
      {
        name: 'an alert naming an unknown account is refused',
        url: '/api/v1/alertmanager',
        payload: alert({ account: 'other' }),
        status: 400,
        message: `alerts[0].labels.account: unknown account "other" ${configured}`,
        calls: { main: 0, reseller: 0 },
      },
      {
        name: 'an operator call naming reseller-eu reaches reseller-eu only',
        url: '/api/v1/actions/powercycle',
        payload: { account: 'reseller-eu', server_id: '100001' },
        status: 200,
        message: undefined,
        calls: { main: 0, reseller: 1 },
      },
      {
        name: 'an operator call without account is refused',
        url: '/api/v1/actions/powercycle',
        payload: { server_id: '100001' },
        status: 400,
        message: `body/account: required with several accounts ${configured}`,
        calls: { main: 0, reseller: 0 },
      },
      {
        name: 'an operator call naming an unknown account is refused',
        url: '/api/v1/actions/powercycle',
        payload: { account: 'other', server_id: '100001' },
        status: 400,
        message: `body/account: unknown account "other" ${configured}`,
        calls: { main: 0, reseller: 0 },
      },
    ])('$name', async ({ url, payload, status, message, calls }) => {
      const { daemon, sims } = await startHarness({
        accounts: { main: upstream(3), 'reseller-eu': upstream(3) },
        remediationAuth: true,
        config: { remediation: { dry_run: false, rules: [{ alertname: 'ServerDown', action: 'powercycle' }] } },
        daemon: daemonOptions,
      });
      const [a, b] = [sims.get('main')!, sims.get('reseller-eu')!];
      // The firewall histories too: a power action needs the server's attack state (remediation.safety).
      for (const account of daemon.accounts.values()) {
        await account.polls.run('servers');
        await account.polls.run('firewall');
      }
      const res = await daemon.app.inject({
        method: 'POST',
        url,
        payload,
        headers: { authorization: `Bearer ${TOKEN}` },
      });
      expect({
        status: res.statusCode,
        message: status === 200 ? undefined : res.json().message,
        calls: { main: a.callsTo(POWERCYCLE).length, reseller: b.callsTo(POWERCYCLE).length },
      }).toEqual({ status, message, calls });
      if (status === 200)
        expect((await daemon.store.list({ limit: 1 }))[0]).toMatchObject({
          account: 'reseller-eu',
          serverId: '100001',
          decision: 'executed',
        });
    });
  });

  it('every series of an account metric names a configured account, after a poll cycle and a decision', async () => {
    const { daemon } = await startHarness({
      accounts: { main: upstream(3), 'reseller-eu': upstream(3) },
      remediationAuth: true,
      config: {
        remediation: {
          dry_run: false,
          rules: [{ alertname: 'ServerDown', action: 'powercycle', verify_within: '5m' }],
        },
      },
      daemon: daemonOptions,
    });
    for (const account of daemon.accounts.values()) await initialPolls(account, () => false);
    const res = await daemon.app.inject({
      method: 'POST',
      url: '/api/v1/actions/powercycle',
      payload: { account: 'reseller-eu', server_id: '100001' },
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(res.statusCode).toBe(200);
    const names = new Set(ACCOUNT_METRICS.map((key) => (daemon.metrics[key] as unknown as { name: string }).name));
    const family = (sample: string) => {
      const name = sample.slice(0, sample.search(/[{ ]/));
      return names.has(name) ? name : name.replace(/_(bucket|sum|count)$/, '');
    };
    const samples = (await daemon.exposition.render())
      .bytes('text')
      .toString()
      .split('\n')
      .filter((line) => line !== '' && !line.startsWith('#') && names.has(family(line)));
    expect(samples.filter((line) => !/^[a-z_]+\{(.*,)?account="(main|reseller-eu)"[,}]/.test(line))).toEqual([]);
    // Those the calls above set (prom-client's, each call naming the account) and the zero-first ones; the
    // interval gauges are set when a schedule starts, which this daemon's does not (no initial polls).
    expect([...new Set(samples.map(family))].sort()).toEqual(
      expect.arrayContaining([
        'baremetal_action_budget_remaining',
        'baremetal_action_pending',
        'baremetal_action_requests_total',
        'baremetal_api_request_duration_seconds',
        'baremetal_api_requests_total',
        'baremetal_api_up',
        'baremetal_firewall_events_dropped_total',
        'baremetal_graph_images',
        'baremetal_poll_duration_seconds',
        'baremetal_poll_items_cancelled',
        'baremetal_poll_items_failed',
        'baremetal_poll_items_pending',
        'baremetal_poll_last_success_timestamp_seconds',
        'baremetal_poll_runs_total',
        'baremetal_remediation_circuit_open',
        'baremetal_remediation_recovery_seconds',
        'baremetal_remediation_verifications_total',
        'baremetal_server_records_skipped',
        'baremetal_servers',
      ]),
    );
  });

  it('a restart does not count again the events counted before; a new event counts once', async () => {
    const h = await startHarness({ simulator: upstream(2), daemon: daemonOptions });
    const { sim } = h;
    const events = [
      { id: 'e1', ip: '198.18.0.1' },
      { id: 'e2', ip: '198.18.0.1' },
    ];
    sim.state.injectEvents('dedicated', '100001', events);
    const total = (d: Daemon) =>
      value(d, 'baremetal_firewall_attack_events_total', {
        account: 'default',
        service_id: '100001',
        ip: '198.18.0.1',
      });

    const first = h.daemon;
    await accountOf(first, 'default').polls.run('servers');
    await accountOf(first, 'default').polls.run('firewall');
    // A new series: at 0 first, its 2 events added at the next poll (docs/metrics-counters.md).
    const born = await total(first);
    await accountOf(first, 'default').polls.run('firewall');
    expect({ born, next: await total(first) }).toEqual({ born: 0, next: 2 });

    // The same config and state_dir.
    const second = await h.start();
    await accountOf(second, 'default').polls.run('servers');
    await accountOf(second, 'default').polls.run('firewall');
    const afterRestart = await total(second);
    sim.state.injectEvents('dedicated', '100001', [{ id: 'e3', ip: '198.18.0.1' }]);
    await accountOf(second, 'default').polls.run('firewall');
    expect({ afterRestart, afterNewEvent: await total(second) }).toEqual({ afterRestart: 0, afterNewEvent: 1 });
  });
});

describe('account config errors', () => {
  it.each([
    {
      name: 'both forms',
      raw: {
        upstream: { base_url: 'https://a.test', api_key: 'k' },
        accounts: [{ name: 'a', base_url: 'https://a.test', api_key: 'k' }],
      },
      lines: ['upstream: not allowed together with accounts (give each account its upstream keys)'],
    },
    {
      name: 'duplicate names',
      raw: {
        accounts: [
          { name: 'a', base_url: 'https://a.test', api_key: 'k' },
          { name: 'a', base_url: 'https://b.test', api_key: 'k' },
        ],
      },
      lines: ['accounts[1].name: duplicate account name "a"'],
    },
    {
      name: 'a bad name',
      raw: { accounts: [{ name: 'Bad Name', base_url: 'https://a.test', api_key: 'k' }] },
      lines: ['accounts[0].name: must match pattern "^[a-z0-9_-]{1,32}$"'],
    },
    {
      name: 'a missing key',
      raw: { accounts: [{ name: 'a', base_url: 'https://a.test' }] },
      lines: ['accounts[0].api_key: required (set accounts[0].api_key_file)'],
    },
  ])('$name → one line per problem', ({ raw, lines }) => {
    const problems = configProblems(() => buildConfig(raw, { BAREMETAL_API_KEY: 'env-key' }));
    for (const line of lines) expect(problems).toContain(line);
    expect(problems).toHaveLength(lines.length);
  });
});
