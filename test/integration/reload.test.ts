import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../../src/config/load.js';
import { startDaemon, type Daemon } from '../../src/daemon.js';
import { startSimulator, type Simulator } from '../../src/simulator/server.js';
import { captureLogger } from '../helpers/logger.js';
import { TOKEN } from '../helpers/remediation.js';
import { tempDir } from '../helpers/tmp.js';

const NOW = Date.UTC(2026, 10, 21, 12, 0, 0);
const KEY = 'key-reload-0123456789';
const COLOCATION = '/api/v1/colocation/firewall';
const POWERCYCLE = '/api/v1/dedicated/powercycle';
const sims: Simulator[] = [];
const daemons: Daemon[] = [];
afterEach(async () => {
  for (const d of daemons.splice(0)) await d.stop();
  for (const s of sims.splice(0)) await s.close();
});

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
  const sim = await startSimulator({ apiKey: KEY, servers: 2, colocations: 3, transits: 0, attackRate: 0, seed: 5 });
  sims.push(sim);
  const dir = tempDir();
  writeFileSync(join(dir, 'token'), TOKEN);
  const file = join(dir, 'config.yml');
  writeFileSync(file, configText(sim, dir));
  const capture = captureLogger('debug');
  const daemon = await startDaemon(loadConfig(file, {}), {
    logger: capture.logger,
    now: () => NOW,
    schedule: false,
    initialPolls: false,
    listen: false,
    retryMinDelayMs: 1,
    reloadConfig: () => loadConfig(file, {}),
  });
  daemons.push(daemon);
  await daemon.poller.run('servers');
  const write = (overrides: Record<string, unknown>, baseUrl?: string) =>
    writeFileSync(file, configText(sim, dir, overrides, baseUrl));
  return { sim, daemon, write, lines: capture.lines, file, dir };
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
    await daemon.poller.run('firewall');
    write({ services: { colocation_ids: ['colo-2', 'colo-3'], transit_ids: [] } });
    expect(await daemon.reload()).toEqual({ ok: true, needsRestart: [] });
    const before = sim.callsTo(COLOCATION).length;
    await daemon.poller.run('firewall');
    const polled = sim
      .callsTo(COLOCATION)
      .slice(before)
      .map((c) => c.params.colocation_id)
      .sort();
    expect(polled).toEqual(['colo-2', 'colo-3']);
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
    // The old rule still acts.
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
    await daemon.poller.run('servers');
    expect(await gauge(daemon, 'baremetal_config_last_reload_successful')).toBe(1);
    expect(sim.callsTo('/api/v1/dedicated').length).toBeGreaterThan(1);
  });
});
