/**
 * Crashes: the built CLI as a real child process, killed with SIGKILL before, during and after an
 * upstream power cycle, then restarted on the same state_dir; and two daemons on one state_dir.
 */
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { startDaemonProcess, type RunProcess } from '../helpers/daemon.js';
import { eventually } from '../helpers/processes.js';
import { POWERCYCLE_REMEDIATION, TOKEN, unreachableAlert } from '../helpers/remediation.js';

const KEY = 'crash-key-4b7e1d09';
const POWERCYCLE = '/api/v1/dedicated/powercycle';

/** A daemon process on a fresh state_dir, live remediation with one powercycle rule. */
async function setup() {
  const h = await startDaemonProcess({
    key: KEY,
    simulator: { servers: 3, attackRate: 0 },
    remediationAuth: true,
    config: { upstream: { timeout: '30s' }, log_level: 'warn', remediation: POWERCYCLE_REMEDIATION },
  });
  const { sim, url: base, configFile: file } = h;
  const start = () => h.start();
  const kill = async (run: RunProcess) => {
    run.child.kill('SIGKILL');
    await run.exited;
  };
  const deliver = async (startsAt: string) => {
    const payload = unreachableAlert(startsAt, 'c0ffee0123456789');
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
  return { sim, file, start, kill, deliver, journal, spawn: h.spawn };
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
    const second = t.spawn();
    expect(await second.exited).not.toBe(0);
    const lines = second.output().trim().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain(`is locked by another baremetal-exporter (PID ${first.child.pid})`);
    expect(first.child.exitCode).toBeNull();
  });
});
