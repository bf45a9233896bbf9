import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Daemon } from '../../src/daemon/start.js';
import type { Simulator } from '../../src/simulator/server.js';
import { accountOf, startHarness } from '../helpers/daemon.js';
import { TOKEN } from '../helpers/remediation.js';

const NOW = Date.UTC(2026, 10, 21, 12, 0, 0);
const KEY = 'key-reload-0123456789';
const COLOCATION = '/api/v1/colocation/firewall';
const POWERCYCLE = '/api/v1/dedicated/powercycle';

/** The config file (JSON is YAML) with `overrides` over a base: one account on `sim`, one rule. */
function configText(sim: Simulator, dir: string, overrides: Record<string, unknown> = {}, baseUrl = sim.url): string {
  return JSON.stringify({
    upstream: { base_url: baseUrl, api_key: KEY, retries: 0 },
    web: { listen_address: '127.0.0.1:0' },
    state_dir: dir,
    services: { colocation_ids: ['colo-1'], transit_ids: [] },
    remediation: {
      dry_run: false,
      auth: { bearer_token_files: [join(dir, 'token')] },
      rules: [{ alertname: 'ServerDown', action: 'powercycle' }],
    },
    ...overrides,
  });
}

async function setUp() {
  const h = await startHarness({
    key: KEY,
    simulator: { servers: 2, colocations: 3, transits: 0, attackRate: 0, seed: 5 },
    remediationAuth: true,
    configFile: true,
    env: {},
    config: ({ sims, stateDir }) => JSON.parse(configText(sims.get('default')!, stateDir)),
    daemon: { now: () => NOW, initialPolls: false },
  });
  const { sim, daemon, stateDir: dir } = h;
  const file = h.configFile!;
  await accountOf(daemon, 'default').polls.run('servers');
  const write = (overrides: Record<string, unknown>, baseUrl?: string) =>
    writeFileSync(file, configText(sim, dir, overrides, baseUrl));
  return { sim, daemon, write, lines: h.log.lines, file, dir };
}

const gauge = async (daemon: Daemon, name: string) =>
  (await daemon.registry.getSingleMetric(name)!.get()).values[0]?.value;

const webhook = (daemon: Daemon, alertname: string) =>
  daemon.app.inject({
    method: 'POST',
    url: '/api/v1/alertmanager',
    headers: { authorization: `Bearer ${TOKEN}` },
    payload: {
      version: '4',
      status: 'firing',
      alerts: [
        {
          status: 'firing',
          labels: { alertname, server_id: '100001' },
          startsAt: '2026-11-21T12:00:00Z',
          fingerprint: `f-${alertname}`,
        },
      ],
    },
  });

describe('Daemon.reload()', () => {
  it('polls a changed colocation list on the next firewall run', async () => {
    const { sim, daemon, write } = await setUp();
    await accountOf(daemon, 'default').polls.run('firewall');
    write({ services: { colocation_ids: ['colo-2', 'colo-3'], transit_ids: [] } });
    expect(await daemon.reload()).toEqual({ ok: true, needsRestart: [] });
    const before = sim.callsTo(COLOCATION).length;
    await accountOf(daemon, 'default').polls.run('firewall');
    const polled = sim
      .callsTo(COLOCATION)
      .slice(before)
      .map((c) => c.params.colocation_id)
      .sort();
    expect(polled).toEqual(['colo-2', 'colo-3']);
  });

  it('polls only the servers of a changed scope, and switched collectors at their next run', async () => {
    const { sim, daemon, write } = await setUp();
    const { polls } = accountOf(daemon, 'default');
    const targets = async () =>
      (await daemon.app.inject('/api/v1/discovery'))
        .json()
        .map((g: { labels: Record<string, string> }) => g.labels.__meta_baremetal_server_id);
    await polls.run('catalog');
    expect(await targets()).toEqual(['100001', '100002']);
    write({ servers: { exclude: [{ id: '100002' }] }, collectors: { catalog: false } });
    expect(await daemon.reload()).toEqual({ ok: true, needsRestart: [] });
    await polls.run('servers');
    const before = sim.calls.length;
    await polls.run('firewall');
    await polls.run('catalog');
    const calls = sim.calls.slice(before).map((c) => `${c.path} ${c.params.server_id ?? c.params.colocation_id ?? ''}`);
    expect({ targets: await targets(), calls: calls.sort() }).toEqual({
      targets: ['100001'],
      calls: [`${COLOCATION} colo-1`, '/api/v1/dedicated/firewall 100001'],
    });
    expect(await gauge(daemon, 'baremetal_catalog_locations')).toBeUndefined();
  });

  it('applies a changed scope at once: a newly excluded server is denied by name and left out of discovery', async () => {
    const { sim, daemon, write } = await setUp();
    const lists = () => sim.callsTo('/api/v1/dedicated').filter((c) => c.params.server_id === undefined).length;
    const before = lists();
    write({ servers: { exclude: [{ id: '100001' }, { hostname: 'srv100002\\.example\\.net' }] } });
    expect(await daemon.reload()).toEqual({ ok: true, needsRestart: [] });
    const denied = (await webhook(daemon, 'ServerDown')).json().results;
    const discovered = (await daemon.app.inject('/api/v1/discovery')).json();
    expect({ denied, discovered, lists: lists() - before, powercycles: sim.callsTo(POWERCYCLE).length }).toMatchObject({
      denied: [
        {
          server_id: '100001',
          decision: 'denied_unknown_target',
          message: 'server 100001 is out of scope (servers.include / servers.exclude): the daemon does not act on it',
        },
      ],
      discovered: [],
      lists: 0,
      powercycles: 0,
    });
    expect(await gauge(daemon, 'baremetal_servers')).toBe(0);
  });

  it('drops the series and images of a collector switched off at once: no run needed', async () => {
    const { daemon, write } = await setUp();
    const { polls, graphStore } = accountOf(daemon, 'default');
    await polls.run('graphs');
    const images = graphStore.list();
    expect(images.length).toBeGreaterThan(0);
    const held = images[0];
    const url = `/graphs/dedicated/${held!.serverId}/${held!.type}/${held!.scale}.png`;
    const graphSeries = async () =>
      (await daemon.registry.getSingleMetric('baremetal_graph_last_success_timestamp_seconds')!.get()).values.length;
    const before = {
      images: await gauge(daemon, 'baremetal_graph_images'),
      series: await graphSeries(),
      served: (await daemon.app.inject(url)).statusCode,
    };
    write({ collectors: { graphs: false } });
    expect(await daemon.reload()).toEqual({ ok: true, needsRestart: [] });
    expect({
      before,
      after: {
        images: await gauge(daemon, 'baremetal_graph_images'),
        series: await graphSeries(),
        served: (await daemon.app.inject(url)).statusCode,
      },
    }).toEqual({
      before: { images: images.length, series: images.length, served: 200 },
      after: { images: 0, series: 0, served: 404 },
    });
  });

  it('applies a changed rule to the next webhook', async () => {
    const { sim, daemon, write, dir } = await setUp();
    expect((await webhook(daemon, 'HostDown')).json().results).toEqual([]);
    expect(sim.callsTo(POWERCYCLE)).toHaveLength(0);
    write({
      remediation: {
        dry_run: false,
        auth: { bearer_token_files: [join(dir, 'token')] },
        rules: [{ alertname: 'HostDown', action: 'powercycle' }],
      },
    });
    expect(await daemon.reload()).toEqual({ ok: true, needsRestart: [] });
    // The attack state a power action needs (remediation.safety.deny_power_when_attacked).
    await accountOf(daemon, 'default').polls.run('firewall');
    const res = await webhook(daemon, 'HostDown');
    expect(res.json().results).toMatchObject([{ action: 'powercycle', server_id: '100001' }]);
    expect(sim.callsTo(POWERCYCLE)).toHaveLength(1);
  });

  it.each([
    {
      name: 'a YAML syntax error',
      text: 'base_url: [unclosed',
    },
    {
      name: 'a schedule that is no cron expression',
      overrides: { schedules: { firewall: 'every minute' } },
    },
  ])('refuses an invalid file ($name): the old config stays, the metric goes to 0', async ({ text, overrides }) => {
    const { sim, daemon, write, lines, file } = await setUp();
    if (text !== undefined) writeFileSync(file, text);
    else write(overrides!);
    const result = await daemon.reload();
    expect(result).toMatchObject({ ok: false, invalid: true });
    expect(await gauge(daemon, 'baremetal_config_last_reload_successful')).toBe(0);
    expect(
      lines.some((l) => l.includes('configuration reload failed; the previous configuration stays in force')),
    ).toBe(true);
    // The old rule still acts (with the attack state a power action needs).
    await accountOf(daemon, 'default').polls.run('firewall');
    expect((await webhook(daemon, 'ServerDown')).statusCode).toBe(200);
    expect(sim.callsTo(POWERCYCLE)).toHaveLength(1);
  });

  it('refuses a changed base_url with one log line, applies the rest', async () => {
    const { sim, daemon, write, lines } = await setUp();
    write({}, 'http://127.0.0.1:1');
    const result = await daemon.reload();
    expect(result).toEqual({ ok: true, needsRestart: ['accounts.default.upstream.base_url'] });
    const line = lines.find((l) => l.includes('need a restart'));
    expect(line).toContain('accounts.default.upstream.base_url');
    expect(line).not.toContain(KEY);
    // Still polling the old API.
    await accountOf(daemon, 'default').polls.run('servers');
    expect(await gauge(daemon, 'baremetal_config_last_reload_successful')).toBe(1);
    expect(sim.callsTo('/api/v1/dedicated').length).toBeGreaterThan(1);
  });
});
