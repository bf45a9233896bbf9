/**
 * Every upstream call settles by its deadline (issue 38), against the simulator: the two-line key that stopped
 * every poll until a restart, reproduced with the client alone (19 concurrent reads on 16 slots, retries on)
 * and through the daemon (the key file refused when read, the other account untouched, the next valid key
 * used at once); an operator's action whose transport never answers ends `unknown`, and a row left
 * `executing` by a crash is `unknown` after a restart.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Agent, Dispatcher } from 'undici';
import { describe, expect, it } from 'vitest';
import { UpstreamRequestError } from '../../src/errors.js';
import { startSimulator } from '../../src/simulator/server.js';
import { ApiKey } from '../../src/upstream/api-key.js';
import { UpstreamClient } from '../../src/upstream/client.js';
import { listServers, powerOn } from '../../src/upstream/dedicated.js';
import { accountOf, startHarness } from '../helpers/daemon.js';
import { seriesValue } from '../helpers/metrics.js';
import { eventually } from '../helpers/processes.js';
import { POWERCYCLE_REMEDIATION, TOKEN } from '../helpers/remediation.js';

const KEY = 'sim-key-000000000001';
const TWO_LINES = `${KEY}\nsecond-line\n`;

describe('a key with a second line (issue 38)', () => {
  it('fails every call at once and leaves the client usable: 19 concurrent reads on 16 slots, 2 retries each', async () => {
    const sim = await startSimulator({ apiKey: KEY, servers: 3, attackRate: 0 });
    // What the file rule now refuses, put in force directly: the client must not depend on that rule.
    const key = new ApiKey(KEY);
    const client = new UpstreamClient({
      baseUrl: sim.url,
      apiKey: key,
      timeoutMs: 2000,
      concurrency: 16,
      maxRequestsPerSecond: 10,
      retries: 2,
      retryMinDelayMs: 1,
    });
    try {
      key.set(TWO_LINES.trimEnd());
      const reads = await Promise.allSettled(Array.from({ length: 19 }, () => listServers(client)));
      expect(reads.map((r) => (r.status === 'rejected' ? (r.reason as Error).constructor.name : 'fulfilled'))).toEqual(
        Array(19).fill(UpstreamRequestError.name),
      );
      const write = await powerOn(client, '100001').catch((error: unknown) => error);
      expect(write).toBeInstanceOf(UpstreamRequestError);
      // Refused before it left: a write's outcome is certain (failed), not unknown.
      expect((write as UpstreamRequestError).outcomeUnknown).toBe(false);
      expect(JSON.stringify([reads, String(write)])).not.toContain('second-line');
      expect([client.activeCount, client.pendingCount]).toEqual([0, 0]);
      expect(sim.calls).toHaveLength(0);
      // The valid key written back is used by the very next request.
      key.set(KEY);
      expect((await listServers(client)).servers).toHaveLength(3);
    } finally {
      await client.close();
      await sim.close();
    }
  });

  it('is refused when the key file is read; the other account keeps polling; a valid key is used at once', async () => {
    const h = await startHarness({
      key: KEY,
      accounts: { main: { servers: 2, attackRate: 0 }, other: { servers: 3, attackRate: 0 } },
      configFile: true,
      env: {},
      config: ({ sims, stateDir }) => {
        writeFileSync(join(stateDir, 'main-key'), `${KEY}-main\n`, { flag: 'a' });
        return {
          accounts: [
            { name: 'main', base_url: sims.get('main')!.url, api_key_file: join(stateDir, 'main-key') },
            { name: 'other', base_url: sims.get('other')!.url, api_key: `${KEY}-other` },
          ],
        };
      },
      daemon: { initialPolls: false, keyFileIntervalMs: 20 },
    });
    const { daemon, log, stateDir, sims } = h;
    const file = join(stateDir, 'main-key');
    const poll = async (account: string) => accountOf(daemon, account).polls.run('servers');
    expect(await poll('main')).toBe('success');
    // An editor or a bad secret template leaves a second line: the watcher refuses it.
    writeFileSync(file, `${KEY}-main\nsecond-line\n`);
    const refused = await eventually('the watcher refuses the file', async () =>
      log.lines.find((l) => l.includes('API key file reload failed')),
    );
    expect(JSON.parse(refused)).toMatchObject({
      account: 'main',
      file,
      problem: `file ${file} holds a line break at character ${KEY.length + 6} of the key (a key file holds the key on one line)`,
    });
    // So is a reload, naming the key and the file.
    const reload = await daemon.reload();
    expect(reload).toMatchObject({ ok: false, invalid: true });
    expect(JSON.stringify(reload)).toContain(`accounts[0].api_key_file: file ${file} holds a line break`);
    expect(await seriesValue(daemon.registry, 'baremetal_config_last_reload_successful', {})).toBe(0);
    // The key in force stays: both accounts poll.
    expect([await poll('main'), await poll('other'), await poll('main')]).toEqual(['success', 'success', 'success']);
    expect(log.lines.join('\n')).not.toContain('second-line');
    // The provider's new key, written back valid, is sent by the next request.
    sims.get('main')!.setApiKeys([`${KEY}-main`, 'sim-key-rotated-0002']);
    writeFileSync(file, 'sim-key-rotated-0002\r\n');
    await eventually('the watcher takes the valid key', async () =>
      log.lines.some((l) => l.includes('API key reloaded from its file')) ? true : undefined,
    );
    const before = sims.get('main')!.calls.length;
    expect(await poll('main')).toBe('success');
    expect(
      sims
        .get('main')!
        .calls.slice(before)
        .map((c) => c.keyId),
    ).toEqual([1]);
  });
});

/** A transport that holds every request to `path` and never settles it, as undici's wedged pool did. */
class HoldingTransport extends Dispatcher {
  held = 0;
  constructor(
    readonly inner: Agent,
    readonly path: string,
  ) {
    super();
  }
  override dispatch(options: Dispatcher.DispatchOptions, handler: Dispatcher.DispatchHandler): boolean {
    if (options.path.endsWith(this.path)) {
      this.held++;
      return true;
    }
    return this.inner.dispatch(options, handler);
  }
  override close(): Promise<void> {
    return this.inner.close();
  }
  override destroy(): Promise<void> {
    return this.inner.destroy();
  }
}

describe('nothing stays executing', () => {
  it('an operator action whose call never settles answers unknown after the timeout; a crash leftover is unknown after a restart', async () => {
    const transport = new HoldingTransport(new Agent(), '/api/v1/dedicated/poweron');
    const h = await startHarness({
      key: KEY,
      simulator: { servers: 3, attackRate: 0 },
      remediationAuth: true,
      config: { upstream: { timeout: '500ms' }, remediation: POWERCYCLE_REMEDIATION },
      daemon: { dispatcher: transport },
    });
    const d = h.daemon;
    await d.ready;
    const res = await d.app.inject({
      method: 'POST',
      url: '/api/v1/actions/poweron',
      headers: { authorization: `Bearer ${TOKEN}` },
      payload: { server_id: '100001' },
    });
    expect([res.statusCode, transport.held], res.body).toEqual([200, 1]);
    expect(res.json()).toMatchObject({ decision: 'unknown', message: expect.stringContaining('timed out') });
    const rows = await d.store.list({ limit: 10 });
    expect(rows.map((r) => [r.action, r.decision])).toEqual([['poweron', 'unknown']]);
    expect(
      await seriesValue(d.registry, 'baremetal_api_requests_total', { operation: 'power_on', outcome: 'timeout' }),
    ).toBe(1);

    // A crash between the journal write and the reply: the row stays `executing` until the next start.
    const leftover = await d.store.insert({
      account: 'default',
      createdAt: Date.now(),
      source: 'operator',
      action: 'poweroff',
      serverId: '100002',
      ip: null,
      value: null,
      alertname: null,
      fingerprint: null,
      startsAt: null,
      decision: 'executing',
      principal: 'test',
    });
    const restarted = await h.start();
    await restarted.ready;
    const after = await restarted.store.list({ limit: 10 });
    expect(after.find((r) => r.id === leftover)).toMatchObject({ decision: 'unknown', upstreamOutcome: 'interrupted' });
    expect(after.some((r) => r.decision === ('executing' as string))).toBe(false);
  });
});
