/**
 * The provider's API key rotated without a restart: `upstream.api_key_file` replaced as Kubernetes replaces a
 * Secret (a new directory, the `..data` symlink renamed over the old one), then a reload or the file watcher;
 * the simulator records which key each request sent. An empty or missing file keeps the old key and fails
 * the reload, naming the file and never a key.
 */
import { mkdirSync, renameSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import type { Daemon } from '../../src/daemon/start.js';
import { REDACTED } from '../../src/scrub.js';
import { startSimulator } from '../../src/simulator/server.js';
import { ApiKey } from '../../src/upstream/api-key.js';
import { UpstreamClient } from '../../src/upstream/client.js';
import { listServers } from '../../src/upstream/dedicated.js';
import { accountOf, startHarness } from '../helpers/daemon.js';
import { eventually } from '../helpers/processes.js';
import { tempDir } from '../helpers/tmp.js';

const OLD = 'old-key-0123456789abcdef';
const NEW = 'new-key-fedcba9876543210';

/**
 * A Secret volume as the kubelet writes it: `<dir>/api-key` → `..data/api-key`, `..data` → `..<version>`.
 * `rotate(key)` writes the next version and renames a new `..data` link over the old one (atomic).
 */
function secretVolume(key: string) {
  const dir = tempDir();
  let version = 0;
  const write = (text: string) => {
    const name = `..v${++version}`;
    mkdirSync(join(dir, name));
    writeFileSync(join(dir, name, 'api-key'), text);
    symlinkSync(name, join(dir, '..data_tmp'));
    renameSync(join(dir, '..data_tmp'), join(dir, '..data'));
  };
  write(key);
  symlinkSync(join('..data', 'api-key'), join(dir, 'api-key'));
  return { file: join(dir, 'api-key'), rotate: write, dir };
}

const gauge = async (daemon: Daemon, name: string) =>
  (await daemon.registry.getSingleMetric(name)!.get()).values[0]?.value;

async function setUp(keyFileIntervalMs?: number) {
  const volume = secretVolume(OLD);
  const h = await startHarness({
    key: OLD,
    simulator: { servers: 2, attackRate: 0 },
    configFile: true,
    // No BAREMETAL_API_KEY: the key comes from the file.
    env: {},
    config: { upstream: { api_key_file: volume.file } },
    daemon: { initialPolls: false, ...(keyFileIntervalMs !== undefined ? { keyFileIntervalMs } : {}) },
  });
  const poll = () => accountOf(h.daemon, 'default').polls.run('servers');
  await poll();
  // The provider issued a new key; the old one stays valid until it is revoked.
  h.sim.setApiKeys([OLD, NEW]);
  return { ...h, volume, poll };
}

/** The ids of the keys the requests sent since call number `from` (0: OLD, 1: NEW). */
const keysSince = (calls: Array<{ keyId: number | undefined }>, from: number) =>
  new Set(calls.slice(from).map((c) => c.keyId));

describe('API key rotation', () => {
  it('uses the new key from the next request after a reload, and never the old one again', async () => {
    const { daemon, sim, volume, poll, log } = await setUp();
    expect(keysSince(sim.calls, 0)).toEqual(new Set([0]));
    volume.rotate(NEW);
    expect(await daemon.reload()).toEqual({ ok: true, needsRestart: [] });
    const rotatedAt = sim.calls.length;
    await poll();
    await poll();
    expect(sim.calls.length).toBeGreaterThan(rotatedAt);
    expect(keysSince(sim.calls, rotatedAt)).toEqual(new Set([1]));
    // The provider revokes the old key: nothing fails, nothing sent it.
    sim.setApiKeys([NEW]);
    await poll();
    expect(keysSince(sim.calls, rotatedAt)).toEqual(new Set([1]));
    expect(await gauge(daemon, 'baremetal_config_last_reload_successful')).toBe(1);
    expect(log.lines.some((l) => l.includes('API key reloaded from its file'))).toBe(true);
    expect(log.lines.join('\n')).not.toContain(NEW);
    expect(log.lines.join('\n')).not.toContain(OLD);
  });

  it('scrubs both the old and the new key from what the upstream sends back', async () => {
    const { daemon, sim, volume } = await setUp();
    volume.rotate(NEW);
    await daemon.reload();
    const { client } = accountOf(daemon, 'default');
    expect(client.scrub(`echo ${OLD} and ${NEW}`)).toBe(`echo ${REDACTED} and ${REDACTED}`);
    sim.setApiKeys([NEW]);
  });

  it.each([
    { name: 'an empty file', replace: (v: ReturnType<typeof secretVolume>) => v.rotate('\n'), problem: 'is empty' },
    {
      name: 'a missing file',
      replace: (v: ReturnType<typeof secretVolume>) => rmSync(join(v.dir, '..data')),
      problem: 'cannot read',
    },
  ])('keeps the old key and fails the reload on $name, naming the file', async ({ replace, problem }) => {
    const { daemon, sim, volume, poll, log } = await setUp();
    replace(volume);
    const result = await daemon.reload();
    expect(result).toMatchObject({ ok: false, invalid: true });
    expect(result.ok ? [] : result.problems).toEqual([expect.stringContaining(`upstream.api_key_file:`)]);
    expect(JSON.stringify(result)).toContain(volume.file);
    expect(JSON.stringify(result)).toContain(problem);
    expect(await gauge(daemon, 'baremetal_config_last_reload_successful')).toBe(0);
    const before = sim.calls.length;
    await poll();
    expect(keysSince(sim.calls, before)).toEqual(new Set([0]));
    expect(log.lines.join('\n')).not.toContain(OLD);
  });

  it('re-reads the file when it changes, without a reload', async () => {
    const { daemon, sim, volume, poll, log } = await setUp(20);
    volume.rotate(NEW);
    await eventually('the watcher reads the new key', async () =>
      log.lines.some((l) => l.includes('API key reloaded from its file')) ? true : undefined,
    );
    const rotatedAt = sim.calls.length;
    await poll();
    expect(keysSince(sim.calls, rotatedAt)).toEqual(new Set([1]));
    // Emptied in place: the watcher keeps the key and reports the failed reload.
    volume.rotate('');
    await eventually('the watcher reports the empty file', async () =>
      log.lines.some((l) => l.includes('API key file reload failed')) ? true : undefined,
    );
    expect(await gauge(daemon, 'baremetal_config_last_reload_successful')).toBe(0);
    const line = log.lines.find((l) => l.includes('API key file reload failed'))!;
    expect(JSON.parse(line)).toMatchObject({ file: volume.file, problem: `file ${volume.file} is empty` });
    const before = sim.calls.length;
    await poll();
    expect(keysSince(sim.calls, before)).toEqual(new Set([1]));
  });

  it('lets a request in flight finish with the old key; the next one sends the new key', async () => {
    const sim = await startSimulator({ apiKey: OLD, servers: 2, attackRate: 0, faults: { latencyMs: 300 } });
    const key = new ApiKey(OLD);
    const client = new UpstreamClient({ baseUrl: sim.url, apiKey: key, timeoutMs: 5000, concurrency: 2, retries: 0 });
    try {
      sim.setApiKeys([OLD, NEW]);
      const inFlight = listServers(client);
      await eventually('the first request arrives', async () => (sim.calls.length === 1 ? true : undefined));
      expect(key.set(NEW)).toBe(true);
      // Revoking the old key now would fail the request in flight: the provider keeps both valid a while.
      expect((await inFlight).servers.length).toBe(2);
      await listServers(client);
      expect(sim.calls.map((c) => c.keyId)).toEqual([0, 1]);
    } finally {
      await client.close();
      await sim.close();
    }
  });
});
