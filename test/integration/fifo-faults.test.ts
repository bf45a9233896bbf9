/**
 * Reads that never block the loop (issue 28): a FIFO that nobody writes, where the daemon expects a key file
 * or a graph image, fails that read (with the path named, after the reader's deadline) or is skipped; the
 * event loop and libuv's thread pool stay free, so /healthz, other graphs and gzip scrapes are answered.
 */
import { spawnSync } from 'node:child_process';
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { describe, expect, it } from 'vitest';
import { READ_TIMEOUT_MS } from '../../src/read-bounded-file.js';
import { runCli } from '../helpers/cli.js';
import { accountOf, HARNESS_KEY, startHarness } from '../helpers/daemon.js';
import { tempDir } from '../helpers/tmp.js';

/** Replaces `path` with a named pipe that nobody opens for writing. */
function fifo(path: string): string {
  rmSync(path, { force: true });
  expect(spawnSync('mkfifo', [path]).status).toBe(0);
  return path;
}

/** `text` matched literally in a RegExp. */
const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
const reason = `a pipe not written and closed within ${READ_TIMEOUT_MS / 1000} s`;

describe('a FIFO nobody writes', () => {
  it(
    'as upstream.api_key_file on reload: the reload fails naming the path, the old config stays, /healthz answers meanwhile',
    async () => {
      const h = await startHarness({
        env: {},
        simulator: { servers: 1, attackRate: 0 },
        configFile: true,
        config: ({ stateDir }) => {
          writeFileSync(join(stateDir, 'api-key'), HARNESS_KEY);
          return { upstream: { api_key_file: join(stateDir, 'api-key') } };
        },
        daemon: { initialPolls: false },
      });
      const keyFile = fifo(join(h.stateDir, 'api-key'));
      const reloading = h.daemon.reload();
      // The reload waits on the pipe without holding the event loop.
      const health = await h.daemon.app.inject('/healthz');
      const result = await reloading;
      await accountOf(h.daemon, 'default').polls.run('servers');
      const reloadMetric = await h.daemon.registry.getSingleMetric('baremetal_config_last_reload_successful')!.get();
      expect({
        health: health.statusCode,
        result,
        reloadSuccessful: reloadMetric.values[0]?.value,
        // The key in force is still the old one: the poll after the failed reload is authenticated.
        serversAfter: accountOf(h.daemon, 'default').state.inventory.size,
      }).toEqual({
        health: 200,
        result: {
          ok: false,
          invalid: true,
          // The position of the key in the JSON the harness wrote: line 1, some column.
          problems: [
            expect.stringMatching(
              new RegExp(
                `^${escapeRegExp(`${h.configFile}`)}:1:\\d+: ${escapeRegExp(`upstream.api_key_file: cannot read ${keyFile} (${reason})`)}$`,
              ),
            ),
          ],
        },
        reloadSuccessful: 0,
        serversAfter: 1,
      });
    },
    READ_TIMEOUT_MS * 4,
  );

  it(
    'as upstream.api_key_file for check-config: exit 1, naming the path',
    async () => {
      const dir = tempDir();
      const keyFile = fifo(join(dir, 'api-key'));
      const config = join(dir, 'config.yml');
      writeFileSync(config, `upstream: { base_url: "https://api.example.com", api_key_file: ${keyFile} }\n`);
      const result = await runCli(['check-config', config], { BAREMETAL_API_KEY: '' });
      expect({ code: result.code, stderr: result.stderr }).toEqual({
        code: 1,
        stderr: `${config}: invalid configuration:\n  ${config}:1:50: upstream.api_key_file: cannot read ${keyFile} (${reason})\n`,
      });
    },
    READ_TIMEOUT_MS * 4,
  );

  it('in place of a graph image: six requests for it are 404, then other graphs and a gzip scrape are served', async () => {
    const h = await startHarness({
      simulator: { servers: 2, attackRate: 0 },
      config: { graphs: { types: ['port_bits'], scales: ['day'] } },
      daemon: { initialPolls: false },
    });
    const runtime = accountOf(h.daemon, 'default');
    await runtime.polls.run('servers');
    await runtime.polls.run('graphs');
    const [held, other] = runtime.graphStore.list();
    fifo(join(h.stateDir, 'graphs/default/dedicated', held!.serverId, 'port_bits-day.png'));
    const url = (serverId: string) => `/graphs/dedicated/${serverId}/port_bits/day.png`;
    // More requests than libuv has pool threads (4): none of them may hold one.
    const onFifo = await Promise.all(Array.from({ length: 6 }, () => h.daemon.app.inject(url(held!.serverId))));
    const normal = await h.daemon.app.inject(url(other!.serverId));
    const gzip = await h.daemon.app.inject({ url: '/metrics', headers: { 'accept-encoding': 'gzip' } });
    expect({
      onFifo: onFifo.map((r) => r.statusCode),
      normal: normal.statusCode,
      gzip: gzip.statusCode,
      scrape: gunzipSync(gzip.rawPayload).toString().includes('baremetal_graph_images'),
      logged: h.log.lines.filter((l) => l.includes('graph image file skipped')).length > 0,
    }).toEqual({ onFifo: [404, 404, 404, 404, 404, 404], normal: 200, gzip: 200, scrape: true, logged: true });
  });
});
