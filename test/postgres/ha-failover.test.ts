/**
 * Failover of real processes: two `baremetal-exporter run` on one PostgreSQL (Debian's, on loopback), the
 * simulator as upstream, polls every second. The leader is killed with SIGKILL while polling; the follower
 * reports `baremetal_leader 1` within a bounded number of probes (15 s worth) and polling resumes. The time
 * it took is printed (measured, not asserted).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../src/simulator/server.js';
import { startDaemonProcess, type DaemonProcess } from '../helpers/daemon.js';
import { requirePostgres, startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { eventually } from '../helpers/processes.js';
import { tempDir } from '../helpers/tmp.js';

const KEY = 'ha-failover-key-8d2e4b61';
const found = requirePostgres();
/** probes of the follower's /metrics after the kill, PROBE_MS apart: 15 s worth */
const PROBES = 150;
const PROBE_MS = 100;

describe.skipIf(found.skip)('leader failover between two processes (Debian postgresql on loopback)', () => {
  let server: TestPostgres;
  let sim: Simulator | undefined;
  const replicas: DaemonProcess[] = [];
  beforeAll(async () => {
    if (found.skip) return;
    server = await startPostgres(found.bin);
  }, 120_000);
  afterEach(async () => {
    // The replicas first, then the upstream they share.
    for (const replica of replicas.splice(0)) await replica.stop();
    await sim?.close();
  });
  afterAll(() => server?.stop());

  const metricsOf = async (base: string) => (await request(`${base}/metrics`)).body.text();
  const leaderOf = async (base: string) => /^baremetal_leader (\d)$/m.exec(await metricsOf(base))?.[1];
  const serverPolls = async (base: string) =>
    Number(
      /^baremetal_poll_runs_total\{[^}]*poll="servers"[^}]*outcome="success"[^}]*\} (\d+)$/m.exec(
        await metricsOf(base),
      )?.[1] ?? 0,
    );

  it('SIGKILL of the leader while polling: the follower leads within 15 s and polling resumes', async () => {
    const upstream = await startSimulator({ apiKey: KEY, servers: 3, colocations: 0, transits: 0, attackRate: 0 });
    sim = upstream;
    const dir = tempDir();
    const urlFile = join(dir, 'database-url');
    writeFileSync(urlFile, server.createDatabase('ha_failover'));
    /** A replica process on the shared simulator and database, with its own state_dir and port. */
    const start = async (name: string) => {
      const replica = await startDaemonProcess({
        key: KEY,
        upstream,
        config: {
          upstream: { timeout: '5s' },
          database: { url_file: urlFile },
          log_level: 'info',
          schedules: { servers: '* * * * * *', firewall: '* * * * * *', graphs: '*/5 * * * * *' },
        },
      });
      replicas.push(replica);
      return { run: await replica.start(), base: replica.url, name };
    };
    const a = await start('a');
    await eventually('a to lead and poll', async () =>
      (await leaderOf(a.base)) === '1' && (await serverPolls(a.base)) > 0 ? true : undefined,
    );
    const b = await start('b');
    expect(await leaderOf(b.base)).toBe('0');

    // Killed while polling: a poll runs every second.
    await eventually('a poll run in progress on a', async () =>
      sim!.callsTo('/api/v1/dedicated').length > 2 ? true : undefined,
    );
    const killedAt = Date.now();
    a.run.child.kill('SIGKILL');
    await a.run.exited;
    let probes = 0;
    while (probes < PROBES && (await leaderOf(b.base).catch(() => undefined)) !== '1') {
      probes++;
      await new Promise((r) => setTimeout(r, PROBE_MS));
    }
    const failoverMs = Date.now() - killedAt;
    console.log(`leader failover after SIGKILL: ${failoverMs} ms (${probes} probes of ${PROBE_MS} ms)`);
    expect(probes, `b never reported baremetal_leader 1:\n${b.run.output()}`).toBeLessThan(PROBES);

    const listed = sim.callsTo('/api/v1/dedicated').length;
    await eventually('b to poll', async () =>
      (await serverPolls(b.base)) > 0 && sim!.callsTo('/api/v1/dedicated').length > listed ? true : undefined,
    );
    expect(b.run.output()).toContain('elected leader');
    expect(a.run.output() + b.run.output()).not.toContain(server.password);
  }, 90_000);
});
