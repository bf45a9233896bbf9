/**
 * `runApi` in-process against the simulator: every validation failure exits 2 without a request, every
 * write's --dry-run prints its exact request and sends nothing, and --help works at every level. (The
 * built CLI as a child process is tested in test/integration/cli-api.test.ts.)
 */
import { PassThrough, Writable } from 'node:stream';
import { parse as parseYaml } from 'yaml';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { runApi } from '../../../src/cli/api/main.js';
import { LEAVES } from '../../../src/cli/api/commands.js';
import type { CliIo } from '../../../src/cli/api/context.js';
import { startSimulator, type Simulator } from '../../../src/simulator/server.js';

const KEY = 'unit-cli-key-0e9d8c7b';
let sim: Simulator;
beforeAll(async () => {
  sim = await startSimulator({ apiKey: KEY, servers: 2 });
});
afterAll(() => sim.close());
beforeEach(() => {
  sim.calls.length = 0;
});

function sink(): { stream: Writable; text: () => string } {
  let text = '';
  return {
    stream: new Writable({
      write: (chunk, _enc, done) => {
        text += String(chunk);
        done();
      },
    }),
    text: () => text,
  };
}

async function run(args: string[]) {
  const out = sink();
  const err = sink();
  const io: CliIo = {
    stdout: out.stream,
    stderr: err.stream,
    stdin: new PassThrough(),
    stdinIsTTY: false,
    stdoutIsTTY: false,
    env: { BAREMETAL_API_URL: sim.url, BAREMETAL_API_KEY: KEY },
    now: () => 0,
    sleep: async () => undefined,
  };
  const code = await runApi(args, io);
  expect(out.text() + err.text()).not.toContain(KEY);
  return { code, stdout: out.text(), stderr: err.text() };
}

describe('validation: exit 2, one line, nothing sent', () => {
  it.each([
    {
      name: 'an IP that is not one',
      args: ['ptr', 'set', '100001', '300.1.1.1', 'a.example.com'],
      err: /invalid parameter "ip"/,
    },
    {
      name: 'a PTR hostname without TLD',
      args: ['ptr', 'set', '100001', '198.18.0.1', 'localhost'],
      err: /"content": must be a fully valid hostname/,
    },
    {
      name: 'a sensitivity outside the enum',
      args: ['firewall', 'sensitivity', '100001', '198.18.0.1', 'extreme'],
      err: /must be one of low, medium, normal, high/,
    },
    { name: 'firewall state 2', args: ['firewall', 'state', '100001', '198.18.0.1', '2'], err: /must be one of 1, 0/ },
    {
      name: 'a cancellation type outside the enum',
      args: ['cancellation', '100001', 'later', '--yes'],
      err: /must be one of immediate, end, delete/,
    },
    {
      name: 'a graph type outside the enum',
      args: ['graph', '100001', '--type', 'port_bytes', '--scale', 'day', '--output', 'json'],
      err: /"type": must be one of/,
    },
    {
      name: 'a graph scale outside the enum',
      args: ['graph', '100001', '--type', 'port_bits', '--scale', 'year', '--output', 'json'],
      err: /"scale": must be one of day, week, month/,
    },
    {
      name: 'a firewall scale outside the enum',
      args: ['firewall', 'history', 'dedicated', '100001', '--scale', 'month'],
      err: /"scale": must be one of hour, day, week/,
    },
    {
      name: 'an unknown service type',
      args: ['firewall', 'history', 'vps', '1'],
      err: /service type must be one of dedicated, colocation, transit/,
    },
    { name: 'a missing --os', args: ['provision', '100001', '--yes'], err: /--os is required/ },
    {
      name: 'a missing post-install file',
      args: ['provision', '100001', '--os', '1', '--post-install', '/nonexistent.sh', '--yes'],
      err: /--post-install: cannot read \/nonexistent.sh \(ENOENT\)/,
    },
    {
      name: 'an empty server id',
      args: ['servers', 'show', ''],
      err: /SERVER_ID must be an id as the API gives them: .* \(got ""\)/,
    },
    {
      name: 'a server id with whitespace',
      args: ['power', 'on', '1 2'],
      err: /SERVER_ID must be an id as the API gives them: .* \(got "1 2"\)/,
    },
    { name: 'a missing argument', args: ['power', 'on'], err: /expected 1 argument/ },
    { name: 'an extra argument', args: ['servers', 'list', 'x'], err: /expected 0 argument/ },
    { name: 'an option of another command', args: ['power', 'on', '100001', '--wait'], err: /unknown option --wait/ },
    { name: 'an option without its value', args: ['graph', '100001', '--type'], err: /argument missing/ },
    {
      name: 'an unknown output format',
      args: ['servers', 'list', '--output', 'xml'],
      err: /--output must be one of table, json, yaml/,
    },
    { name: 'another account', args: ['servers', 'list', '--account', 'prod'], err: /unknown account "prod"/ },
    { name: 'an unknown command', args: ['volumes', 'list'], err: /unknown command "volumes"; one of servers, power/ },
    {
      name: 'a group without a command',
      args: ['firewall'],
      err: /api firewall: a command is required; one of history, sensitivity, state/,
    },
    { name: 'no command at all', args: [], err: /api: a command is required/ },
  ])('$name', async ({ args, err }) => {
    const r = await run(args);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(err);
    expect(r.stderr.endsWith('\n') && r.stderr.trim().split('\n').length === 1).toBe(true);
    expect(sim.calls).toEqual([]);
  });
});

describe('--dry-run: the exact request, nothing sent', () => {
  it.each([
    {
      name: 'power cycle',
      args: ['power', 'cycle', '100001'],
      path: '/api/v1/dedicated/powercycle',
      params: { server_id: '100001' },
    },
    {
      name: 'power on',
      args: ['power', 'on', '100001'],
      path: '/api/v1/dedicated/poweron',
      params: { server_id: '100001' },
    },
    {
      name: 'power off',
      args: ['power', 'off', '100001'],
      path: '/api/v1/dedicated/poweroff',
      params: { server_id: '100001' },
    },
    {
      name: 'provision',
      args: ['provision', '100001', '--os', '2', '--show-password'],
      path: '/api/v1/dedicated/provision',
      params: { server_id: '100001', osid: '2' },
    },
    {
      name: 'ptr set',
      args: ['ptr', 'set', '100001', '198.18.0.1', 'a.example.com'],
      path: '/api/v1/dedicated/dns',
      params: { server_id: '100001', ip: '198.18.0.1', type: 'ptr', content: 'a.example.com' },
    },
    {
      name: 'firewall sensitivity',
      args: ['firewall', 'sensitivity', '100001', '198.18.0.1', 'low'],
      path: '/api/v1/dedicated/firewall/sensitivity',
      params: { server_id: '100001', ip: '198.18.0.1', sensitivity: 'low' },
    },
    {
      name: 'firewall state',
      args: ['firewall', 'state', '100001', '198.18.0.1', '0'],
      path: '/api/v1/dedicated/firewall/state',
      params: { server_id: '100001', ip: '198.18.0.1', state: '0' },
    },
    {
      name: 'cancellation end',
      args: ['cancellation', '100001', 'end'],
      path: '/api/v1/reseller/billing/cancellation',
      params: { server_id: '100001', type: 'end' },
    },
  ])('$name', async ({ args, path, params }) => {
    const r = await run([...args, '--dry-run', '--output', 'yaml']);
    expect(r.code).toBe(0);
    expect(parseYaml(r.stdout)).toEqual({ dryRun: true, operation: expect.any(String), method: 'POST', path, params });
    const table = await run([...args, '--dry-run']);
    expect(table.stdout).toMatch(new RegExp(`^dry run: nothing sent; would send \\w+: POST ${path}\\n`));
    expect(sim.calls).toEqual([]);
  });
});

describe('--help at every level, each with an example', () => {
  const groups = [
    ...new Set(LEAVES.flatMap((l) => l.path.slice(0, -1).map((_, i) => l.path.slice(0, i + 1).join(' ')))),
  ];
  it.each([
    { name: 'api', args: [] as string[] },
    ...groups.map((g) => ({ name: `api ${g}`, args: g.split(' ') })),
    ...LEAVES.map((l) => ({ name: `api ${l.path.join(' ')}`, args: l.path })),
  ])('$name --help', async ({ args }) => {
    const r = await run([...args, '--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^Usage: baremetal-exporter api /);
    expect(r.stdout).toMatch(/\nExample:\n {2}baremetal-exporter api \S+/);
    expect(sim.calls).toEqual([]);
  });
});
