/**
 * `baremetal-exporter api …` end to end: the built CLI as a child process against one simulator. Every
 * command's output is compared with the simulator's state, and the simulator's record of calls shows the
 * exact form parameters sent — or that nothing was sent (validation, --dry-run, refusals).
 */
import { userInfo } from 'node:os';
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { Journal } from '../../src/store/sqlite/journal.js';
import { startSimulator, type Simulator } from '../../src/simulator/server.js';
import { LOCATIONS, OPERATING_SYSTEMS } from '../../src/simulator/state.js';
import { CLI, runCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';

const KEY = 'cli-api-key-4b8e1f0c9d7a';
let sim: Simulator;
const outputs: string[] = [];
const dir = tempDir('bmx-cli-api-', 'all');

beforeAll(async () => {
  sim = await startSimulator({
    apiKey: KEY,
    servers: 4,
    colocations: 1,
    transits: 1,
    attackRate: 0.5,
    now: () => Date.parse('2026-01-01T12:00:00Z'),
  });
});
afterAll(async () => {
  await sim.close();
});
beforeEach(() => {
  sim.calls.length = 0;
  sim.setFaults({});
});

async function api(args: string[], env: Record<string, string> = {}) {
  const result = await runCli(['api', ...args], { BAREMETAL_API_URL: sim.url, BAREMETAL_API_KEY: KEY, ...env });
  outputs.push(result.stdout, result.stderr);
  return result;
}
const json = async (args: string[]) => {
  const r = await api([...args, '--output', 'json']);
  expect(r.stderr).toBe('');
  expect(r.code).toBe(0);
  return JSON.parse(r.stdout) as unknown;
};
const server = (id: string) => sim.state.servers.get(id)!;

describe('reads: output compared with the simulator', () => {
  it('servers list (table and json), servers show', async () => {
    // A scheduled cancellation is part of the record (issue 32); none is ''.
    server('100002').cancellation = 'immediate';
    const expected = [...sim.state.servers.values()].map((s) => ({
      serverId: s.serverId,
      hostname: s.hostname,
      ip: s.ips[0],
      ips: s.ips,
      os: s.os,
      processor: s.processor,
      memory: s.memory,
      location: s.location,
      status: 'online',
      cancellation: s.cancellation === 'none' ? '' : s.cancellation,
    }));
    expect(await json(['servers', 'list'])).toEqual(expected);
    const table = await api(['servers', 'list']);
    expect(table.stdout.split('\n')[0]).toMatch(/^SERVER_ID\s+HOSTNAME\s+IP\s+OS\s+LOCATION\s+STATUS$/);
    for (const s of expected)
      expect(table.stdout).toMatch(
        new RegExp(`^${s.serverId}\\s+${s.hostname}\\s+${s.ip}\\s+${s.os}\\s+${s.location}\\s+online$`, 'm'),
      );
    expect(await json(['servers', 'show', '100002'])).toEqual(expected[1]);
    expect(sim.callsTo('/api/v1/dedicated').map((c) => c.params)).toEqual([{}, {}, { server_id: '100002' }]);
    expect(expected.map((s) => s.cancellation)).toEqual(['', 'immediate', '', '']);
    expect((await api(['servers', 'show', '100002'])).stdout).toMatch(/^cancellation: +immediate$/m);
    server('100002').cancellation = 'none';
    expect((await api(['servers', 'show', '100002'])).stdout).toMatch(/^cancellation: +none scheduled$/m);
  });

  it.each([
    {
      name: 'os list',
      args: ['os', 'list'],
      path: '/api/v1/dedicated/provision/os_ids',
      expected: OPERATING_SYSTEMS.map((o) => ({
        id: o.id,
        name: o.name,
        arch: o.arch,
        type: o.type,
        pricePerCore: o.price_per_core,
      })),
    },
    { name: 'locations list', args: ['locations', 'list'], path: '/api/v1/reseller/locations', expected: LOCATIONS },
  ])('$name', async ({ args, path, expected }) => {
    expect(await json(args)).toEqual(expected);
    expect(sim.callsTo(path)).toHaveLength(1);
  });

  it.each([
    {
      name: 'dedicated, one IP',
      args: ['dedicated', '100001', '--ip', '198.18.0.1', '--scale', 'week'],
      path: '/api/v1/dedicated/firewall',
      params: { server_id: '100001', ip: '198.18.0.1', scale: 'week' },
      service: 'dedicated/100001',
    },
    {
      name: 'colocation, default scale',
      args: ['colocation', 'colo-1'],
      path: '/api/v1/colocation/firewall',
      params: { colocation_id: 'colo-1', scale: 'day' },
      service: 'colocation/colo-1',
    },
    {
      name: 'transit, hour',
      args: ['transit', 'transit-1', '--scale', 'hour'],
      path: '/api/v1/transit/firewall',
      params: { transit_id: 'transit-1', scale: 'hour' },
      service: 'transit/transit-1',
    },
  ])('firewall history $name', async ({ args, path, params, service }) => {
    const events = (await json(['firewall', 'history', ...args])) as Array<{ id: string }>;
    expect(sim.callsTo(path).map((c) => c.params)).toEqual([params]);
    const svc = sim.state.service(service.split('/')[0] as 'dedicated', service.split('/')[1]!) ?? {
      serviceType: 'dedicated' as const,
      serviceId: '100001',
      ips: server('100001').ips,
    };
    const windows = { hour: 3600, day: 86400, week: 604800 } as const;
    const expected = sim.state.history(
      svc,
      windows[params.scale as keyof typeof windows],
      'ip' in params ? params.ip : undefined,
    );
    expect(events.map((e) => e.id)).toEqual(expected.map((e) => e.id));
    expect(events.length).toBeGreaterThan(0);
  });

  it('console and graph to files (0600), graph as json', async () => {
    const jnlp = join(dir, 'console.jnlp');
    expect((await api(['console', '100003', '--out', jnlp])).code).toBe(0);
    expect(readFileSync(jnlp, 'utf8')).toMatch(/<jnlp[\s\S]*KVM console 100003/);
    expect(statSync(jnlp).mode & 0o777).toBe(0o600);
    const png = join(dir, 'graph.png');
    expect((await api(['graph', '100003', '--type', 'port_bits', '--scale', 'week', '--out', png])).code).toBe(0);
    expect(readFileSync(png).subarray(1, 4).toString()).toBe('PNG');
    const viaJson = (await json(['graph', '100003', '--type', 'port_errors', '--scale', 'day'])) as {
      base64: string;
      bytes: number;
    };
    expect(Buffer.from(viaJson.base64, 'base64').length).toBe(viaJson.bytes);
    expect(sim.callsTo('/api/v1/dedicated/graphs').map((c) => c.params)).toEqual([
      { server_id: '100003', type: 'port_bits', scale: 'week' },
      { server_id: '100003', type: 'port_errors', scale: 'day' },
    ]);
    expect(sim.callsTo('/api/v1/dedicated/console').map((c) => c.params)).toEqual([{ server_id: '100003' }]);
  });
});

describe('writes with --yes: exact parameters, and the simulator changed', () => {
  it.each<{ name: string; args: string[]; path: string; params: Record<string, string>; check: () => void }>([
    {
      name: 'power off',
      args: ['power', 'off', '100004', '--yes'],
      path: '/api/v1/dedicated/poweroff',
      params: { server_id: '100004' },
      check: () => expect(server('100004').power).toBe('off'),
    },
    {
      name: 'power on',
      args: ['power', 'on', '100004'],
      path: '/api/v1/dedicated/poweron',
      params: { server_id: '100004' },
      check: () => expect(server('100004').power).toBe('on'),
    },
    {
      name: 'power cycle',
      args: ['power', 'cycle', '100004', '--yes'],
      path: '/api/v1/dedicated/powercycle',
      params: { server_id: '100004' },
      check: () => expect(server('100004').power).toBe('on'),
    },
    {
      name: 'ptr set',
      args: ['ptr', 'set', '100004', '198.18.0.7', 'mail.example.org'],
      path: '/api/v1/dedicated/dns',
      params: { server_id: '100004', ip: '198.18.0.7', type: 'ptr', content: 'mail.example.org' },
      check: () => undefined,
    },
    {
      name: 'firewall sensitivity',
      args: ['firewall', 'sensitivity', '100004', '198.18.0.7', 'high'],
      path: '/api/v1/dedicated/firewall/sensitivity',
      params: { server_id: '100004', ip: '198.18.0.7', sensitivity: 'high' },
      check: () => expect(sim.state.firewall.get('198.18.0.7')?.sensitivity).toBe('high'),
    },
    {
      name: 'firewall state',
      args: ['firewall', 'state', '100004', '198.18.0.8', '1'],
      path: '/api/v1/dedicated/firewall/state',
      params: { server_id: '100004', ip: '198.18.0.8', state: '1' },
      check: () => expect(sim.state.firewall.get('198.18.0.8')?.state).toBe('1'),
    },
    {
      name: 'cancellation end',
      args: ['cancellation', '100004', 'end', '--yes'],
      path: '/api/v1/reseller/billing/cancellation',
      params: { server_id: '100004', type: 'end' },
      check: () => expect(server('100004').cancellation).toBe('end'),
    },
    {
      name: 'cancellation delete',
      args: ['cancellation', '100004', 'delete'],
      path: '/api/v1/reseller/billing/cancellation',
      params: { server_id: '100004', type: 'delete' },
      check: () => expect(server('100004').cancellation).toBe('none'),
    },
  ])('$name', async ({ args, path, params, check }) => {
    const out = (await json(args)) as { success: boolean; message: string };
    expect(out.success).toBe(true);
    expect(out.message).not.toBe('');
    expect(sim.calls.map((c) => [c.path, c.params])).toEqual([[path, params]]);
    check();
  });
});

describe('nothing is sent', () => {
  const script = join(dir, 'broken.sh');
  writeFileSync(script, 'echo start\nif true; then\n  echo x\n');
  it.each([
    {
      name: 'a post-install script bash -n rejects',
      args: ['provision', '100001', '--os', '1', '--post-install', script, '--yes', '--show-password'],
      err: /bash -n rejects the script: .*line \d+: syntax error/,
    },
    { name: 'an unknown option', args: ['servers', 'list', '--colour'], err: /Unknown option '--colour'/ },
  ])('exit 2 for $name', async ({ args, err }) => {
    const r = await api(args);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(err);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(sim.calls).toEqual([]);
  });

  it.each([
    { name: 'power off', args: ['power', 'off', '100001'] },
    { name: 'provision', args: ['provision', '100001', '--os', '1', '--show-password'] },
    { name: 'cancellation immediate', args: ['cancellation', '100001', 'immediate'] },
  ])('exit 3 without a TTY and without --yes: $name', async ({ args }) => {
    const r = await api(args);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(
      /^baremetal-exporter api: refusing to .* without confirmation: no terminal to ask on; pass --yes to confirm\n$/,
    );
    expect(sim.calls.filter((c) => c.path !== '/api/v1/dedicated/provision/os_ids')).toEqual([]);
  });

  const ok = join(dir, 'ok.sh');
  writeFileSync(ok, '#!/bin/bash\necho provisioned\n');
  it.each([
    // A valid script: the request carries it verbatim; the password file is not created.
    {
      name: 'provision',
      args: ['provision', '100001', '--os', '2', '--post-install', ok, '--password-file', join(dir, 'never.pw')],
      path: '/api/v1/dedicated/provision',
      params: { server_id: '100001', osid: '2', post_installation: '#!/bin/bash\necho provisioned\n' },
    },
    {
      name: 'cancellation',
      args: ['cancellation', '100001', 'immediate'],
      path: '/api/v1/reseller/billing/cancellation',
      params: { server_id: '100001', type: 'immediate' },
    },
  ])('--dry-run prints the request and sends nothing: $name', async ({ args, path, params }) => {
    const out = await json([...args, '--dry-run']);
    expect(out).toEqual({ dryRun: true, operation: expect.any(String), method: 'POST', path, params });
    const table = await api([...args, '--dry-run']);
    expect(table.stdout).toContain(`dry run: nothing sent; would send`);
    expect(table.stdout).toContain(`POST ${path}`);
    expect(sim.calls).toEqual([]);
    expect(existsSync(join(dir, 'never.pw'))).toBe(false);
  });
});

describe('provision and its root password', () => {
  it('writes the password to a new 0600 file, keeps it out of the output, and never overwrites the file', async () => {
    const pw = join(dir, 'root.pw');
    const out = (await json(['provision', '100002', '--os', '3', '--password-file', pw, '--yes'])) as Record<
      string,
      unknown
    >;
    expect(out).toEqual({ action: 'provision', serverId: '100002', osid: '3', success: true, passwordFile: pw });
    expect(readFileSync(pw, 'utf8')).toBe('sim-100002-3-pw\n');
    expect(statSync(pw).mode & 0o777).toBe(0o600);
    expect(sim.calls.map((c) => [c.path, c.params])).toEqual([
      ['/api/v1/dedicated/provision/os_ids', {}],
      ['/api/v1/dedicated/provision', { server_id: '100002', osid: '3' }],
    ]);
    sim.calls.length = 0;
    const again = await api(['provision', '100002', '--os', '3', '--password-file', pw, '--yes']);
    expect(again.code).toBe(3);
    expect(again.stderr).toMatch(/--password-file .* exists; refusing to overwrite it \(nothing was sent\)/);
    expect(readFileSync(pw, 'utf8')).toBe('sim-100002-3-pw\n');
    expect(sim.calls).toEqual([]);
  });

  it.each([
    { name: 'without a place for it: refused before sending', args: [], code: 3, calls: 0, password: false },
    { name: 'with --show-password: in the JSON', args: ['--show-password'], code: 0, calls: 2, password: true },
  ])('on a non-TTY $name', async ({ args, code, calls, password }) => {
    const r = await api(['provision', '100003', '--os', '1', '--yes', '--output', 'json', ...args]);
    expect(r.code).toBe(code);
    expect(r.stdout.includes('sim-100003-1-pw')).toBe(password);
    expect(sim.calls).toHaveLength(calls);
  });

  it('checks the OS id against the OS list before provisioning', async () => {
    const r = await api(['provision', '100003', '--os', '42', '--yes', '--show-password']);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/--os 42 is not in the API's OS list \(1, 2, 3, 4, 5\)/);
    expect(sim.calls.map((c) => c.path)).toEqual(['/api/v1/dedicated/provision/os_ids']);
  });
});

/** Runs the CLI on a pseudo-terminal (util-linux `script`), typing `answer` once the prompt shows. */
function onTty(args: string[], answer: string): Promise<{ code: number | null; output: string }> {
  const command = [process.execPath, CLI, 'api', ...args].map((a) => `'${a}'`).join(' ');
  const child = spawn('script', ['-qfec', command, '/dev/null'], {
    env: { ...process.env, BAREMETAL_API_URL: sim.url, BAREMETAL_API_KEY: KEY },
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  let output = '';
  let typed = false;
  const onData = (d: Buffer) => {
    output += String(d);
    if (!typed && output.includes('to confirm: ')) {
      typed = true;
      child.stdin.write(`${answer}\r`);
    }
  };
  child.stdout.on('data', onData);
  child.stderr.on('data', onData);
  return new Promise((resolve) =>
    child.on('exit', (code) => {
      outputs.push(output);
      resolve({ code, output });
    }),
  );
}

describe('confirmation on a terminal', () => {
  it.each([
    {
      name: 'the server id confirms',
      answer: '100001',
      code: 0,
      sent: 1,
      out: /poweroff 100001: Power off initiated\./,
    },
    {
      name: 'anything else refuses',
      answer: '100002',
      code: 3,
      sent: 0,
      out: /not confirmed \(the answer did not match the server id\); nothing was sent/,
    },
  ])('$name', async ({ answer, code, sent, out }) => {
    const r = await onTty(['power', 'off', '100001'], answer);
    expect(r.output).toContain('This will power off server 100001.');
    expect(r.output).toMatch(out);
    expect(r.code).toBe(code);
    expect(sim.callsTo('/api/v1/dedicated/poweroff')).toHaveLength(sent);
  });

  it('provision on a terminal shows the password once', async () => {
    const r = await onTty(['provision', '100004', '--os', '5'], '100004');
    expect(r.code).toBe(0);
    expect(r.output.split('sim-100004-5-pw')).toHaveLength(2);
  });
});

describe('errors and the journal', () => {
  it('an API error is one line with operation, status and message; exit 1', async () => {
    const r = await api(['servers', 'show', '999999']);
    expect(r.code).toBe(1);
    expect(r.stderr).toBe(
      'baremetal-exporter api: get_server [POST] "/api/v1/dedicated": 404 API error: Server not found.\n',
    );
  });

  it('a key the API echoes back is scrubbed', async () => {
    sim.setFaults({ mode: 'echo_key' });
    const r = await api(['os', 'list']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('[REDACTED]');
  });

  it('firewall state inside the 2-minute window: refused with the next possible time from the journal; writes journaled as cli', async () => {
    const state = join(dir, 'state');
    Journal.open(join(state, 'journal.db')).close();
    const config = join(dir, 'config.yml');
    writeFileSync(config, `upstream: { base_url: "${sim.url}" }\nstate_dir: ${state}\n`);
    const withConfig = (args: string[]) =>
      runCli(['api', ...args, '--config.file', config], { BAREMETAL_API_URL: '', BAREMETAL_API_KEY: KEY }).then((r) => {
        outputs.push(r.stdout, r.stderr);
        return r;
      });
    expect((await withConfig(['firewall', 'state', '100003', '198.18.0.5', '1'])).code).toBe(0);
    const refusal = await withConfig(['firewall', 'state', '100003', '198.18.0.5', '0']);
    const journal = Journal.open(join(state, 'journal.db'));
    const rows = journal.list({ limit: 10 });
    journal.close();
    expect(rows.map((r) => [r.source, r.action, r.serverId, r.ip, r.value, r.decision])).toEqual([
      ['cli', 'firewall_state', '100003', '198.18.0.5', '0', 'failed'],
      ['cli', 'firewall_state', '100003', '198.18.0.5', '1', 'executed'],
    ]);
    // The row names who ran the command: its login name.
    expect(rows.map((r) => r.principal)).toEqual([`cli:${userInfo().username}`, `cli:${userInfo().username}`]);
    expect(refusal.code).toBe(1);
    expect(refusal.stderr).toContain('already updated in the last 2 minutes');
    expect(refusal.stderr).toContain(
      `the next change is possible at ${new Date(rows[1]!.createdAt + 120_000).toISOString()} (in `,
    );
    expect(refusal.stderr).toContain('--wait waits and retries once');
  });

  it('no output of any command carries the key', () => {
    expect(outputs.length).toBeGreaterThan(40);
    for (const text of outputs) expect(text).not.toContain(KEY);
  });
});
