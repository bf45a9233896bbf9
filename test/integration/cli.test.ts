import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { Journal } from '../../src/store/sqlite/journal.js';
import type { Simulator } from '../../src/simulator/server.js';
import { makeTestPki } from '../helpers/certs.js';
import { runCli, spawnCli } from '../helpers/cli.js';
import { startDaemonProcess } from '../helpers/daemon.js';
import { eventually, freePort } from '../helpers/processes.js';
import { TOKEN } from '../helpers/remediation.js';
import { tempDir } from '../helpers/tmp.js';

/** the simulator of the `run` under test (the harness closes it) */
let sim: Simulator | undefined;
/** the `demo` child of a test, killed after it */
let stopChild: (() => void) | undefined;
afterEach(() => {
  stopChild?.();
  sim = stopChild = undefined;
});

describe('check-config', () => {
  it.each([
    {
      name: 'a good file',
      yaml: 'upstream: { base_url: "https://api.provider.test", api_key: k }\n',
      code: 0,
      out: /valid — API https:\/\/api.provider.test \(key from yaml\)[\s\S]*warning: the API key sits in the config file/,
    },
    {
      name: 'a bad file',
      yaml: 'upstream: { base_url: "http://api.provider.test", timeout: never, api_key: k }\nweb: { listen_address: nope }\n',
      code: 1,
      out: /upstream\.timeout: must be a duration[\s\S]*web\.listen_address: must be "host:port"[\s\S]*upstream\.base_url: refusing plain-HTTP/,
    },
    { name: 'unknown keys', yaml: 'upstreams: {}\n', code: 1, out: /upstreams: unknown key/ },
    {
      name: 'a problem: the file, line and column of its key in front',
      yaml: 'upstream:\n  base_url: "https://api.provider.test"\n  api_key: k\n  timeout: never\n',
      code: 1,
      out: /\n {2}\S*config\.yml:4:3: upstream\.timeout: must be a duration/,
    },
    {
      name: 'power rules armed without the attack guard: a warning, exit 0',
      yaml: 'upstream: { base_url: "https://api.provider.test", api_key: k }\nremediation: { dry_run: false, safety: { deny_power_when_attacked: false }, rules: [{ alertname: ServerDown, action: powercycle }] }\n',
      code: 0,
      out: /\nwarning: remediation\.safety\.deny_power_when_attacked: false while power rules act \(dry_run false: rules\[0\]\)/,
    },
    {
      name: 'a breaker larger than a scope named by id: a warning, exit 0',
      yaml: 'upstream: { base_url: "https://api.provider.test", api_key: k }\nservers: { include: [{ id: "100001" }, { id: "100002" }] }\n',
      code: 0,
      out: /\nwarning: remediation\.safety\.circuit_breaker: max_servers 3 \(max_fraction 0\.01\) allows 3 servers per window, and the scope holds at most 2 \(servers\.include names them by id\): the breaker can never open\n/,
    },
    {
      name: 'a scope and switched-off collectors',
      yaml: 'upstream: { base_url: "https://api.provider.test", api_key: k }\nservers: { include: [{ location: fra1 }, { hostname: "web-[0-9]+" }], exclude: [{ id: "7" }] }\ncollectors: { graphs: false, catalog: false }\n',
      code: 0,
      out: /scope: servers matching location fra1 or hostname web-\[0-9\]\+ except id 7\ncollectors switched off: graphs, catalog\n/,
    },
    {
      name: 'a base_url with a password in its userinfo (printed redacted)',
      yaml: 'upstream: { base_url: "https://ops:userinfo-pa55@api.provider.test/", api_key: k }\n',
      code: 0,
      out: /^(?![\s\S]*userinfo-pa55)[\s\S]*valid — API https:\/\/\*\*\*@api\.provider\.test \(key from yaml\)/,
    },
    {
      name: 'a bad hostname regex',
      yaml: 'upstream: { base_url: "https://api.provider.test", api_key: k }\nservers: { exclude: [{ hostname: "web-(" }] }\n',
      code: 1,
      out: /servers\.exclude\[0\]\.hostname: not a valid RE2 regular expression: error parsing regexp: missing closing \)/,
    },
    {
      name: 'a hostname pattern that would escape the whole-hostname match',
      yaml: 'upstream: { base_url: "https://api.provider.test", api_key: k }\nservers: { include: [{ hostname: "web)|(?:.*" }] }\n',
      code: 1,
      out: /servers\.include\[0\]\.hostname: not a valid RE2 regular expression: error parsing regexp: unexpected \)/,
    },
    {
      name: 'RE2 syntax: a case-insensitive hostname pattern',
      yaml: 'upstream: { base_url: "https://api.provider.test", api_key: k }\nservers: { include: [{ hostname: "(?i)WEB-[0-9]+" }] }\n',
      code: 0,
      out: /scope: servers matching hostname \(\?i\)WEB-\[0-9\]\+\n/,
    },
  ])('$name → exit $code', async ({ yaml, code, out }) => {
    const file = join(tempDir(), 'config.yml');
    writeFileSync(file, yaml);
    const result = await runCli(['check-config', file], { BAREMETAL_API_KEY: '' });
    expect(result.code).toBe(code);
    expect(result.stdout + result.stderr).toMatch(out);
  });
});

/**
 * `run` as a process (the harness's): `web` keys over the harness's, the simulator slow (1.5 s) on
 * `simLatencyPaths`, `flags(port)` after `--config.file`. Its state_dir (`dir`) holds config.yml and journal.db.
 * The simulator has no random attacks: with them a server is under attack for some minutes now and then (server
 * 100002, seed 1: about 2 % of the wall-clock time), and the attack guard then rightly denies its power actions.
 */
async function startRun(
  web: Record<string, unknown> = {},
  env: Record<string, string> = {},
  simLatencyPaths: string[] = [],
  flags: (port: number) => string[] = () => [],
) {
  const h = await startDaemonProcess({
    key: 'cli-key-7f3a9c2e5b',
    simulator: { servers: 3, attackRate: 0 },
    remediationAuth: true,
    config: { web, log_level: 'debug', remediation: { dry_run: false } },
  });
  sim = h.sim;
  if (simLatencyPaths.length) h.sim.setFaults({ latencyMs: 1500, paths: simLatencyPaths });
  const run = h.spawn(flags(h.port), env);
  return { dir: h.stateDir, port: h.port, run, sim: h.sim };
}

describe('run', () => {
  it.each([
    {
      name: '--log.format=json',
      flags: ['--log.format=json'],
      line: /^\{"level":"info","time":"\d{4}-\d\d-\d\dT[^"]+Z","msg":"SIGTERM received, stopping"\}$/m,
    },
    {
      name: 'logfmt by default',
      flags: [],
      line: /^ts=\d{4}-\d\d-\d\dT\S+Z level=info msg="SIGTERM received, stopping"$/m,
    },
  ])(
    'flags override the file (--web.listen-address, --log.level); $name, the stop message included',
    async ({ flags, line }) => {
      // The flag's port is free when picked, but another process may bind it before the daemon does: the daemon
      // then exits naming EADDRINUSE, and the test picks another (at most 3 times); any other exit fails at once.
      let run: Awaited<ReturnType<typeof startRun>>['run'];
      for (let attempt = 1; ; attempt++) {
        const other = await freePort();
        ({ run } = await startRun({}, {}, [], () => [
          `--web.listen-address=127.0.0.1:${other}`,
          '--log.level=info',
          ...flags,
        ]));
        const started = run;
        const state = await eventually(`listening on the flag's port ${other}`, async () => {
          if (started.child.exitCode !== null) return 'exited';
          // Bounded: whoever else holds the port may never answer.
          const res = await request(`http://127.0.0.1:${other}/healthz`, { headersTimeout: 1000, bodyTimeout: 1000 });
          await res.body.dump();
          return res.statusCode === 200 ? 'listening' : undefined;
        }).catch((error: Error) => {
          throw new Error(`${error.message}; the daemon's log:\n${started.output()}`);
        });
        if (state === 'listening') break;
        if (attempt < 3 && started.output().includes('EADDRINUSE')) continue;
        throw new Error(`the daemon exited (${started.child.exitCode}) before listening:\n${started.output()}`);
      }
      run.child.kill('SIGTERM');
      expect(await run.exited).toBe(0);
      expect(run.output()).toMatch(line);
      expect(run.output()).not.toMatch(/level.{0,3}debug/);
    },
  );

  it('serves /metrics over TLS to a client trusting the CA, and refuses plain HTTP', async () => {
    const pki = makeTestPki();
    const dir = tempDir();
    writeFileSync(join(dir, 'cert.pem'), pki.cert);
    writeFileSync(join(dir, 'key.pem'), pki.key);
    const { port, run } = await startRun({
      tls: { cert_file: join(dir, 'cert.pem'), key_file: join(dir, 'key.pem') },
    });
    const trusting = new Agent({ connect: { ca: pki.ca } });
    const body = await eventually(`TLS /metrics (${run.output()})`, async () => {
      const res = await request(`https://127.0.0.1:${port}/metrics`, { dispatcher: trusting });
      const text = await res.body.text();
      return res.statusCode === 200 && text.includes('baremetal_servers{account="default"} 3') ? text : undefined;
    });
    expect(body).toContain('baremetal_api_up{account="default"} 1');
    await expect(request(`https://127.0.0.1:${port}/metrics`).then((r) => r.body.text())).rejects.toThrow(
      /certificate|self-signed|issuer/i,
    );
    const plain = await request(`http://127.0.0.1:${port}/metrics`).then(
      (r) => r.statusCode,
      () => 'refused',
    );
    expect(plain).not.toBe(200);
    await trusting.close();

    // A renewed certificate from another CA is served after SIGHUP, without a restart.
    const renewed = makeTestPki();
    writeFileSync(join(dir, 'cert.pem'), renewed.cert);
    writeFileSync(join(dir, 'key.pem'), renewed.key);
    run.child.kill('SIGHUP');
    const trustingRenewed = new Agent({ connect: { ca: renewed.ca } });
    await eventually(`the renewed certificate (${run.output()})`, async () => {
      const res = await request(`https://127.0.0.1:${port}/healthz`, { dispatcher: trustingRenewed });
      await res.body.text();
      return res.statusCode === 200 ? true : undefined;
    });
    // The log line and the TLS reply travel on different pipes: under load the reply may be read first.
    await eventually(
      `the reload log line (${run.output()})`,
      async () => (run.output().includes('TLS certificate reloaded') ? true : undefined),
      10_000,
    );
    await trustingRenewed.close();
  });

  it('answers /readyz 503 until the first servers and firewall polls finished, then 200', async () => {
    const { port, run } = await startRun({}, {}, ['/api/v1/dedicated/firewall']);
    const before = await eventually(`listening (${run.output()})`, async () =>
      request(`http://127.0.0.1:${port}/readyz`).then(
        (r) => r.body.json() as Promise<{ status: string; reasons?: string[] }>,
      ),
    );
    expect(before).toMatchObject({
      status: 'not ready',
      reasons: expect.arrayContaining(['the first firewall poll has not finished']),
    });
    await eventually('ready', async () =>
      (await request(`http://127.0.0.1:${port}/readyz`)).statusCode === 200 ? true : undefined,
    );
  });

  it('on SIGTERM lets an action in flight finish, completes its journal entry, and exits 0', async () => {
    const { port, run, dir } = await startRun({}, {}, ['/api/v1/dedicated/powercycle']);
    await eventually('ready', async () =>
      (await request(`http://127.0.0.1:${port}/readyz`)).statusCode === 200 ? true : undefined,
    );
    // What the attack guard decides a power action on: the server's own firewall history, read.
    await eventually('the firewall history of 100002 read', async () => {
      const text = await request(`http://127.0.0.1:${port}/metrics`).then((r) => r.body.text());
      return text.includes(
        'baremetal_firewall_history_up{account="default",service_type="dedicated",service_id="100002"} 1',
      )
        ? true
        : undefined;
    }).catch((error: Error) => {
      throw new Error(`${error.message}; the daemon's log:\n${run.output()}`);
    });
    const action = request(`http://127.0.0.1:${port}/api/v1/actions/powercycle`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ server_id: '100002' }),
    }).then(async (r) => ({ status: r.statusCode, body: (await r.body.json()) as { decision: string } }));
    const called = () => sim!.callsTo('/api/v1/dedicated/powercycle').length > 0;
    const why = (answer: unknown) => `the action: ${JSON.stringify(answer)}; the daemon's log:\n${run.output()}`;
    let answered: unknown = 'no answer yet';
    const reached = eventually('the call to reach the simulator', async () => (called() ? true : undefined)).catch(
      (error: Error) => {
        throw new Error(`${error.message}; ${why(answered)}`);
      },
    );
    // The simulator records a call before its 1.5 s delay: an answer with no call recorded (a denial, a 503) is
    // final, and no call will follow it. A failure after the call is left to the checks below.
    const answeredFirst = action.then(
      (answer) => {
        answered = answer;
        if (!called()) throw new Error(`the daemon answered without calling the simulator; ${why(answer)}`);
        return reached;
      },
      (error: unknown) => {
        answered = String(error);
        if (!called()) throw new Error(`the action failed before any call; ${why(answered)}`);
        return reached;
      },
    );
    await Promise.race([reached, answeredFirst]);
    run.child.kill('SIGTERM');
    expect(await action).toEqual({ status: 200, body: expect.objectContaining({ decision: 'executed' }) });
    expect(await run.exited).toBe(0);
    const journal = Journal.open(join(dir, 'journal.db'));
    expect(journal.list({ limit: 5 })).toEqual([
      expect.objectContaining({
        action: 'powercycle',
        decision: 'executed',
        upstreamOutcome: 'success',
        completedAt: expect.any(Number),
      }),
    ]);
    journal.close();
  });

  it('on SIGTERM during a slow-drip history reply cancels the poll and exits 0', async () => {
    const { run } = await startRun();
    sim!.setFaults({ mode: 'drip', dripIntervalMs: 2000, paths: ['/api/v1/dedicated/firewall'], ids: ['100002'] });
    await eventually('the dripping request', async () =>
      sim!.callsTo('/api/v1/dedicated/firewall', { server_id: '100002' }).length ? true : undefined,
    );
    run.child.kill('SIGTERM');
    expect(await run.exited).toBe(0);
    expect(run.output()).toContain('poll run cancelled: the daemon is stopping');
  });

  it('never prints the API key: logs, error replies and /metrics of a run with failures', async () => {
    const { port, run } = await startRun();
    sim!.setFaults({ errorRate: 0.4, htmlErrorRate: 0.2, malformedRate: 0.2 });
    // The first servers and firewall polls have ended, whether they worked or not (then /readyz names them).
    await eventually('the first polls', async () =>
      (await request(`http://127.0.0.1:${port}/readyz`).then((r) => r.body.text())).includes('has not finished')
        ? undefined
        : true,
    );
    const replies: string[] = [];
    for (const [method, path, body] of [
      ['GET', '/metrics', undefined],
      ['GET', '/graphs/dedicated/100001/port_bits/day.png?width=1', undefined],
      ['GET', '/api/v1/servers/100001/console.jnlp', undefined],
      ['POST', '/api/v1/actions/powercycle', '{"server_id":"100001"}'],
      ['POST', '/api/v1/alertmanager', '{"version":"3"}'],
      ['POST', '/api/v1/actions/firewall-state', '{"server_id":"100001","ip":"198.18.0.1","state":1}'],
    ] as const) {
      const res = await request(`http://127.0.0.1:${port}${path}`, {
        method,
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        ...(body ? { body } : {}),
      });
      replies.push(await res.body.text());
    }
    run.child.kill('SIGTERM');
    await run.exited;
    const everything = `${run.output()}\n${replies.join('\n')}`;
    expect(run.output()).toMatch(/level=(warn|error)/);
    expect(everything).not.toContain('cli-key-7f3a9c2e5b');
  });
});

describe('demo', () => {
  it('serves metrics and a graph on --port, its simulator on --simulator.port, and never prints the API key in logs, replies or /metrics', async () => {
    const key = 'demo-leak-check-4b1d8e6f0a';
    const port = await freePort();
    const simulatorPort = await freePort();
    const dir = tempDir();
    const demo = spawnCli(
      ['demo', '--port', String(port), '--simulator.port', String(simulatorPort)],
      { BAREMETAL_API_KEY: key },
      dir,
    );
    stopChild = () => demo.child.kill('SIGKILL');
    await eventually(`the demo banner (${demo.output()})`, async () =>
      demo.output().includes('Ctrl-C stops.') ? true : undefined,
    );
    const replies: string[] = [];
    for (const path of [
      '/metrics',
      '/graphs',
      '/graphs/dedicated/100001/port_bits/day.png?width=3',
      '/api/v1/actions',
      '/',
      '/readyz',
      '/nope',
    ]) {
      const res = await request(`http://127.0.0.1:${port}${path}`);
      replies.push(`${res.statusCode} ${await res.body.text()}`);
    }
    expect(replies[0]).toMatch(/^200 [\s\S]*baremetal_servers\{account="default"\} 12\n/);
    // The simulator listens where the flag said, and the banner says so.
    expect(demo.output()).toContain(`simulator (API):  http://127.0.0.1:${simulatorPort}`);
    expect((await request(`http://127.0.0.1:${simulatorPort}/`)).statusCode).toBeGreaterThan(0);
    expect(
      (await request(`http://127.0.0.1:${port}/graphs/dedicated/100001/port_bits/day.png`)).headers['content-type'],
    ).toBe('image/png');
    demo.child.kill('SIGTERM');
    expect(await demo.exited).toBe(0);
    // The demo logs logfmt, as `run` does by default (and as the README says).
    expect(demo.output()).toMatch(/^ts=\S+ level=info msg="poll finished" /m);
    expect(`${demo.output()}\n${replies.join('\n')}`).not.toContain(key);
  });
});

describe('run --web.telemetry-path', () => {
  it("serves the metrics at the flag's path, not at /metrics", async () => {
    const { port, run } = await startRun({}, {}, [], () => ['--web.telemetry-path=/exporter/metrics']);
    const moved = await eventually(`listening (${run.output()})`, async () =>
      request(`http://127.0.0.1:${port}/exporter/metrics`).then(
        async (r) => ({ status: r.statusCode, body: await r.body.text() }),
        () => undefined,
      ),
    );
    expect(moved.status).toBe(200);
    expect(moved.body).toContain('# TYPE baremetal_api_up gauge');
    const old = await request(`http://127.0.0.1:${port}/metrics`);
    await old.body.dump();
    expect(old.statusCode).toBe(404);
  });

  it.each([
    { path: 'metrics', problem: 'must start with "/"' },
    { path: '/readyz', problem: "collides with the daemon's other routes" },
  ])('refuses $path before starting: exit 2 naming the flag', async ({ path, problem }) => {
    const file = join(tempDir(), 'config.yml');
    writeFileSync(file, 'upstream: { base_url: "https://api.provider.test", api_key: k }\n');
    const result = await runCli(['run', `--config.file=${file}`, `--web.telemetry-path=${path}`]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`--web.telemetry-path: ${problem}`);
  });
});

describe('run: configuration reload', () => {
  it.each([
    { name: 'without --web.enable-lifecycle POST /-/reload is 404', flags: [], status: 404 },
    { name: 'with --web.enable-lifecycle POST /-/reload is 200', flags: ['--web.enable-lifecycle'], status: 200 },
  ])('$name', async ({ flags, status }) => {
    const { port, run } = await startRun({}, {}, [], () => flags);
    const res = await eventually(`listening (${run.output()})`, async () =>
      request(`http://127.0.0.1:${port}/-/reload`, { method: 'POST' }).then(
        async (r) => ({ status: r.statusCode, body: await r.body.text() }),
        () => undefined,
      ),
    );
    expect(res.status).toBe(status);
    if (status === 200) expect(JSON.parse(res.body)).toEqual({ status: 'success', needs_restart: [] });
  });

  it("with --web.enable-lifecycle behind web.auth, POST /-/reload takes web.auth's credential, not a remediation one", async () => {
    const scrape = 'scrape-token-0123456789abcdef';
    const file = join(tempDir(), 'scrape-token');
    writeFileSync(file, scrape);
    const { port, run } = await startRun({ auth: { bearer_token_files: [file] } }, {}, [], () => [
      '--web.enable-lifecycle',
    ]);
    const post = (token: string) =>
      request(`http://127.0.0.1:${port}/-/reload`, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}` },
      }).then(
        async (r) => ({ status: r.statusCode, body: await r.body.text() }),
        () => undefined,
      );
    // The remediation credential (the deprecated shared token: every role, reader and operator included) reads,
    // and may not reload.
    const refused = await eventually(`listening (${run.output()})`, () => post(TOKEN));
    expect(refused.status).toBe(401);
    const metrics = await request(`http://127.0.0.1:${port}/metrics`, {
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(metrics.statusCode).toBe(200);
    await metrics.body.dump();
    const done = await post(scrape);
    expect(done?.status).toBe(200);
    expect(JSON.parse(done!.body)).toEqual({ status: 'success', needs_restart: [] });
    await eventually('the reload logged', async () =>
      run.output().includes('configuration reloaded') ? true : undefined,
    );
  });

  it('SIGHUP reloads the file: a valid one is applied, an invalid one is refused (metric 0)', async () => {
    const { dir, port, run } = await startRun();
    const file = join(dir, 'config.yml');
    await eventually(`listening (${run.output()})`, async () =>
      request(`http://127.0.0.1:${port}/healthz`).then(
        (r) => r.body.text(),
        () => undefined,
      ),
    );
    run.child.kill('SIGHUP');
    await eventually(`the reload log line (${run.output()})`, async () =>
      run.output().includes('configuration reloaded') ? true : undefined,
    );
    writeFileSync(file, 'upstream: { base_url: [unclosed\n');
    run.child.kill('SIGHUP');
    await eventually(`the refusal log line (${run.output()})`, async () =>
      run.output().includes('configuration reload failed') ? true : undefined,
    );
    const metrics = await eventually('the metric at 0', async () => {
      const text = await request(`http://127.0.0.1:${port}/metrics`).then((r) => r.body.text());
      return /^baremetal_config_last_reload_successful 0$/m.test(text) ? text : undefined;
    });
    // The start's load stays the last success.
    expect(metrics).toMatch(/^baremetal_config_last_reload_success_timestamp_seconds \d/m);
  });
});
