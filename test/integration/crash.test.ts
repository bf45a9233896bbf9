/**
 * Crashes: the built CLI as a real child process, killed with SIGKILL before, during and after an
 * upstream power cycle, then restarted on the same state_dir; and two daemons on one state_dir.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../src/simulator/server.js';
import { requireBuiltCli, spawnCli } from '../helpers/cli.js';
import { eventually, freePort } from '../helpers/processes.js';
import { TOKEN } from '../helpers/remediation.js';
import { tempDir } from '../helpers/tmp.js';

const KEY = 'crash-key-4b7e1d09';
const POWERCYCLE = '/api/v1/dedicated/powercycle';

let sim: Simulator | undefined;
const children: Array<ReturnType<typeof spawnCli>> = [];
beforeAll(() => requireBuiltCli());
afterEach(async () => {
  for (const c of children.splice(0))
    if (c.child.exitCode === null && c.child.signalCode === null) c.child.kill('SIGKILL');
  await sim?.close();
  sim = undefined;
});

/** A config file for a daemon on a fresh state_dir; each start listens on a new port. */
async function setup() {
  sim = await startSimulator({ apiKey: KEY, servers: 3, attackRate: 0 });
  const dir = tempDir();
  writeFileSync(join(dir, 'token'), TOKEN);
  const file = join(dir, 'config.yml');
  const port = await freePort();
  writeFileSync(
    file,
    `upstream: { base_url: "${sim.url}", timeout: 30s, retries: 0 }
web: { listen_address: "127.0.0.1:${port}" }
state_dir: ${join(dir, 'state')}
log_level: warn
remediation:
  dry_run: false
  auth: { bearer_token_files: [${join(dir, 'token')}] }
  rules: [{ alertname: BaremetalServerUnreachable, action: powercycle, server_id_label: server_id, cooldown: 30m }]
`,
  );
  const base = `http://127.0.0.1:${port}`;
  const start = async () => {
    const run = spawnCli(['run', '--config', file], { BAREMETAL_API_KEY: KEY });
    children.push(run);
    await eventually(
      `the daemon to be ready:\n${run.output()}`,
      async () => ((await request(`${base}/readyz`)).statusCode === 200 ? true : undefined),
      30_000,
      100,
    );
    return run;
  };
  const kill = async (run: ReturnType<typeof spawnCli>) => {
    run.child.kill('SIGKILL');
    await run.exited;
  };
  const deliver = async (startsAt: string) => {
    const payload = {
      version: '4',
      status: 'firing',
      receiver: 'baremetal',
      alerts: [
        {
          status: 'firing',
          labels: { alertname: 'BaremetalServerUnreachable', server_id: '100002' },
          annotations: {},
          startsAt,
          endsAt: '0001-01-01T00:00:00Z',
          fingerprint: 'c0ffee0123456789',
        },
      ],
    };
    const res = await request(`${base}/api/v1/alertmanager`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify(payload),
    });
    const body = (await res.body.json()) as { results: Array<{ decision: string }> };
    return body.results[0]!.decision;
  };
  const journal = async () => {
    const res = await request(`${base}/api/v1/actions?action=powercycle`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    return ((await res.body.json()) as { actions: Array<{ decision: string }> }).actions.map((a) => a.decision);
  };
  return { sim, file, start, kill, deliver, journal };
}

const FIRST = '2026-11-21T10:00:00Z';
const LATER = '2026-11-21T10:00:10Z';

describe('SIGKILL around an upstream write, then a restart', () => {
  it.each([
    {
      name: 'before the write: the alert after the restart acts once',
      crash: async (t: Awaited<ReturnType<typeof setup>>) => {
        await t.kill(await t.start());
      },
      firstDecision: 'executed',
      redelivered: 'executed',
    },
    {
      name: 'during the write (the API acted, no reply yet): unknown, never sent again',
      crash: async (t: Awaited<ReturnType<typeof setup>>) => {
        t.sim.setFaults({ mode: 'act_then_hang', hangMs: 60_000, paths: [POWERCYCLE] });
        const run = await t.start();
        const pending = t.deliver(FIRST).catch(() => 'connection lost');
        await eventually(
          'the power cycle to reach the simulator',
          async () => (t.sim.callsTo(POWERCYCLE).length === 1 ? true : undefined),
          30_000,
          20,
        );
        await t.kill(run);
        expect(await pending).toBe('connection lost');
        t.sim.setFaults({});
      },
      firstDecision: 'unknown',
      redelivered: 'duplicate',
    },
    {
      name: 'after the write: the redelivered alert is a duplicate',
      crash: async (t: Awaited<ReturnType<typeof setup>>) => {
        const run = await t.start();
        expect(await t.deliver(FIRST)).toBe('executed');
        await t.kill(run);
      },
      firstDecision: 'executed',
      redelivered: 'duplicate',
    },
  ])('$name', async ({ crash, firstDecision, redelivered }) => {
    const t = await setup();
    await crash(t);
    await t.start();
    expect(await t.deliver(FIRST)).toBe(redelivered);
    // A new episode of the alert 10 s later: the cooldown holds, whatever the first call's outcome.
    expect(await t.deliver(LATER)).toBe('cooldown');
    const decisions = await t.journal();
    expect(decisions.at(-1)).toBe(firstDecision);
    expect(t.sim.callsTo(POWERCYCLE)).toHaveLength(1);
  });
});

describe('two daemons on one state_dir', () => {
  it("the second exits non-zero with one line naming the first one's PID", async () => {
    const t = await setup();
    const first = await t.start();
    const second = spawnCli(['run', '--config', t.file], { BAREMETAL_API_KEY: KEY });
    children.push(second);
    expect(await second.exited).not.toBe(0);
    const lines = second.output().trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`is locked by another baremetal-exporter (PID ${first.child.pid})`);
    expect(first.child.exitCode).toBeNull();
  });
});
