/**
 * The command line's conventions, as an amtool user expects them (issue 51), on the built CLI: `--help` and
 * usage errors (exit 2) of a few commands (test/unit/cli/conventions.test.ts walks every command in process);
 * `check-config --config.file`; a closed pipe ends the command quietly; the daemon's address, token file and
 * output format come from the flag, else the environment, else the CLI config file, against a loopback server
 * that records what the CLI sends.
 */
import { spawn } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CLI, requireBuiltCli, runCli } from '../helpers/cli.js';
import { tempDir } from '../helpers/tmp.js';

/** A home with no CLI config file and no daemon settings in the environment, so that only the test's count. */
const cleanEnv = (home: string): Record<string, string> => ({
  HOME: home,
  XDG_CONFIG_HOME: join(home, '.config'),
  BAREMETAL_DAEMON_URL: '',
  BAREMETAL_TOKEN_FILE: '',
  BAREMETAL_TOKEN: '',
  BAREMETAL_OUTPUT: '',
});

describe('the built CLI', () => {
  it.each([
    ['simulate', '--help'],
    ['check-config', '-h'],
    ['remediation', '--help'],
    ['actions', 'list', '-h'],
  ])('answers %s %s with its usage, exit 0', async (...args) => {
    const res = await runCli(args, cleanEnv(tempDir()));
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/^Usage:/);
    expect(res.stderr).toBe('');
  });

  it.each([
    { args: ['remediation', 'replay', 'nogate.yml'], says: "Unexpected argument 'nogate.yml'" },
    { args: ['simulate', '--help-me'], says: "Unknown option '--help-me'" },
    { args: ['check-config'], says: 'exactly one FILE' },
  ])('exits 2 on a usage error: $args', async ({ args, says }) => {
    const res = await runCli(args, cleanEnv(tempDir()));
    expect(res.code).toBe(2);
    expect(res.stderr).toContain(says);
  });

  it('check-config takes --config.file as run does', async () => {
    const dir = tempDir();
    const file = join(dir, 'config.yml');
    writeFileSync(file, 'upstream:\n  base_url: https://api.example.net\n  api_key: k\n');
    const positional = await runCli(['check-config', file]);
    const flag = await runCli(['check-config', `--config.file=${file}`]);
    expect(positional.code).toBe(0);
    expect(flag).toEqual(positional);
    expect(flag.stdout).toContain(`${file}: valid`);
  });
});

describe('a closed pipe', () => {
  it('ends the command quietly: no EPIPE stack', async () => {
    requireBuiltCli();
    const dir = tempDir();
    const file = join(dir, 'config.yml');
    writeFileSync(file, 'upstream:\n  base_url: https://api.example.net\n  api_key: k\n');
    // The reader has gone before the CLI writes its first line (`check-config … | head -0`).
    const child = spawn(process.execPath, [CLI, 'check-config', file], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.destroy();
    let stderr = '';
    child.stderr.on('data', (d) => (stderr += String(d)));
    const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
    expect(stderr).toBe('');
    expect(code).toBe(0);
  });
});

describe('the daemon, the token and the output: flag, then environment, then config file', () => {
  let server: Server;
  let url: string;
  const seen: IncomingHttpHeaders[] = [];
  beforeAll(async () => {
    server = createServer((req, res) => {
      seen.push(req.headers);
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ actions: [] }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  /** A home whose CLI config file says `config`, a token file for each source, and the CLI run there. */
  function setUp(config: string) {
    const home = tempDir();
    mkdirSync(join(home, '.config', 'baremetal-exporter'), { recursive: true });
    for (const who of ['flag', 'env', 'file']) writeFileSync(join(home, `${who}.token`), `${who}-token-8c1d\n`);
    writeFileSync(join(home, '.config', 'baremetal-exporter', 'cli.yml'), config);
    const run = async (args: string[], env: Record<string, string> = {}) => {
      const before = seen.length;
      const res = await runCli(['actions', 'list', ...args], { ...cleanEnv(home), ...env });
      return { ...res, authorization: seen.slice(before).map((h) => h.authorization) };
    };
    return { home, run };
  }

  it('reads the config file alone (a token file relative to it)', async () => {
    const { run } = setUp(`daemon.url: ${url}\ntoken.file: ../../file.token\noutput: json\n`);
    const res = await run([]);
    expect(res.code).toBe(0);
    expect(JSON.parse(res.stdout)).toEqual({ actions: [] });
    expect(res.authorization).toEqual(['Bearer file-token-8c1d']);
  });

  it('the environment outranks the config file', async () => {
    const { home, run } = setUp(`daemon.url: http://127.0.0.1:1\ntoken.file: ../../file.token\noutput: json\n`);
    const res = await run([], {
      BAREMETAL_DAEMON_URL: url,
      BAREMETAL_TOKEN_FILE: join(home, 'env.token'),
      BAREMETAL_OUTPUT: 'yaml',
    });
    expect(res.code).toBe(0);
    expect(res.stdout).toBe('actions: []\n');
    expect(res.authorization).toEqual(['Bearer env-token-8c1d']);
    // The token itself in BAREMETAL_TOKEN outranks the config file's token file too.
    expect((await run([], { BAREMETAL_DAEMON_URL: url, BAREMETAL_TOKEN: 'raw-token-77' })).authorization).toEqual([
      'Bearer raw-token-77',
    ]);
  });

  it('a flag outranks both', async () => {
    const { home, run } = setUp(`daemon.url: http://127.0.0.1:1\ntoken.file: ../../file.token\noutput: json\n`);
    const res = await run([`--daemon.url=${url}`, `--token.file=${join(home, 'flag.token')}`, '-o', 'table'], {
      BAREMETAL_DAEMON_URL: 'http://127.0.0.1:2',
      BAREMETAL_TOKEN_FILE: join(home, 'env.token'),
      BAREMETAL_OUTPUT: 'yaml',
    });
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/^ID\s+CREATED/);
    expect(res.authorization).toEqual(['Bearer flag-token-8c1d']);
  });

  it('names where a wrong value came from, and refuses two token variables at once', async () => {
    const { home, run } = setUp(`daemon.url: ${url}\noutput: xml\n`);
    const fromFile = await run([]);
    expect(fromFile.code).toBe(2);
    expect(fromFile.stderr).toMatch(/cli\.yml:2: output: must be one of table, json, yaml/);
    const fromEnv = await run([], { BAREMETAL_OUTPUT: 'csv' });
    expect(fromEnv.code).toBe(2);
    expect(fromEnv.stderr).toContain('BAREMETAL_OUTPUT: must be one of');
    const both = await run([], { BAREMETAL_TOKEN_FILE: join(home, 'env.token'), BAREMETAL_TOKEN: 'raw' });
    expect(both.code).toBe(2);
    expect(both.stderr).toContain('BAREMETAL_TOKEN_FILE and BAREMETAL_TOKEN are both set');
    expect(fromFile.authorization.length + fromEnv.authorization.length + both.authorization.length).toBe(0);
  });

  it.each([
    {
      name: 'an unknown key',
      config: 'daemon.url: http://x\ndaemon_url: http://y\n',
      says: 'cli.yml:2: unknown key "daemon_url"',
    },
    { name: 'a number', config: 'output: 1\n', says: 'cli.yml:1: output: must be a non-empty string' },
    {
      name: 'a list',
      config: 'daemon.url:\n  - http://x\n',
      says: 'cli.yml:1: daemon.url: must be a non-empty string',
    },
    { name: 'not a mapping', config: '- a\n', says: 'must be a mapping' },
    { name: 'a duplicate key', config: 'output: json\noutput: yaml\n', says: 'cli.yml:2: (yaml)' },
  ])('refuses a config file with $name (exit 2, nothing sent)', async ({ config, says }) => {
    const { run } = setUp(config);
    const res = await run([]);
    expect(res.code).toBe(2);
    expect(res.stderr).toContain(says);
    expect(res.authorization).toEqual([]);
  });
});

describe('what actions prints, for people and scripts', () => {
  const LONG = `a message longer than a table cell: ${'x'.repeat(80)} end`;
  const TOKEN = 'person-token-3a9c5e7b1d';
  const ROW = {
    id: 7,
    account: 'default',
    createdAt: '2026-11-21T12:00:00.123Z',
    completedAt: '2026-11-21T12:00:01.456Z',
    source: 'alert',
    action: 'powercycle',
    serverId: '100001',
    ip: null,
    value: null,
    decision: 'executed',
    principal: 'alertmanager',
    approver: 'bob',
    reason: null,
    message: LONG,
    verification: 'ineffective',
    approvedAt: Date.UTC(2026, 10, 21, 11, 59),
    approvedAtIso: new Date(Date.UTC(2026, 10, 21, 11, 59)).toISOString(),
    verifiedAt: Date.UTC(2026, 10, 21, 12, 15),
    verifiedAtIso: new Date(Date.UTC(2026, 10, 21, 12, 15)).toISOString(),
    labels: '{"alertname":"BaremetalServerUnreachable"}',
    alertLabels: { alertname: 'BaremetalServerUnreachable' },
    verificationEvidence: 'its alert not known resolved at its deadline 2026-11-21T12:15:00.000Z (verify_within 900s)',
    gate: { read: 'none_firing' },
  };
  let server: Server;
  let url: string;
  const asked: string[] = [];
  beforeAll(async () => {
    server = createServer((req, res) => {
      asked.push(req.url ?? '');
      res.setHeader('content-type', 'application/json');
      if (req.url?.startsWith('/api/v1/actions/7/approve')) {
        // A daemon (or a proxy in front of it) that echoes the caller's token: the CLI never prints it.
        res.statusCode = 409;
        res.end(JSON.stringify({ statusCode: 409, code: 'BM_ERR_CONFLICT', message: `seen ${TOKEN} here` }));
      } else if (req.url?.startsWith('/api/v1/actions/7')) res.end(JSON.stringify(ROW));
      else res.end(JSON.stringify({ actions: [ROW] }));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  const actions = (args: string[]) =>
    runCli(['actions', ...args, `--daemon.url=${url}`], { ...cleanEnv(tempDir()), BAREMETAL_TOKEN: TOKEN });

  it('lists the verification outcome, times in ISO-8601, and filters by it', async () => {
    const res = await actions(['list', '--verification', 'ineffective']);
    expect(res.code).toBe(0);
    expect(asked.at(-1)).toBe('/api/v1/actions?verification=ineffective');
    const [head, line] = res.stdout.split('\n');
    expect(head).toMatch(/\bDECISION\s+VERIFICATION\s+PRINCIPAL\b/);
    expect(line).toMatch(/^7\s+2026-11-21T12:00:00Z\s+default\s+100001\s+powercycle\s+executed\s+ineffective\s+/);
    const wrong = await actions(['list', '--verification', 'helped']);
    expect(wrong.code).toBe(2);
    expect(wrong.stderr).toContain('--verification: one of verifying, verified, ineffective');
  });

  it('-o extended shows every column, nothing cut', async () => {
    const table = await actions(['list']);
    expect(table.stdout).not.toContain(LONG);
    const wide = await actions(['list', '-o', 'extended']);
    expect(wide.code).toBe(0);
    expect(wide.stdout).toMatch(/\bCOMPLETED\b.*\bSOURCE\b.*\bMESSAGE\b/);
    expect(wide.stdout).toContain(LONG);
    expect(wide.stdout).toContain('2026-11-21T12:00:01Z');
  });

  it('shows one entry with every time in ISO-8601 and the labels as an object', async () => {
    const res = await actions(['show', '7']);
    expect(res.code).toBe(0);
    expect(res.stdout).toMatch(/^approvedAt:\s+2026-11-21T11:59:00\.000Z$/m);
    expect(res.stdout).toMatch(/^verifiedAt:\s+2026-11-21T12:15:00\.000Z$/m);
    expect(res.stdout).toMatch(/^alertLabels:\s+\{"alertname":"BaremetalServerUnreachable"\}$/m);
    // What the outage gate read and what the verification settled on, beside the other fields.
    expect(res.stdout).toMatch(/^gate:\s+\{"read":"none_firing"\}$/m);
    expect(res.stdout).toMatch(
      /^verificationEvidence:\s+its alert not known resolved at its deadline 2026-11-21T12:15:00\.000Z \(verify_within 900s\)$/m,
    );
    expect(res.stdout).not.toMatch(/AtIso|^labels:/m);
    expect(res.stdout).not.toMatch(/\b1\d{12}\b/);
  });

  it("scrubs the caller's token from what the daemon says", async () => {
    const res = await actions(['approve', '7', '-o', 'json']);
    expect(res.code).toBe(1);
    expect(res.stdout + res.stderr).not.toContain(TOKEN);
    expect(res.stderr).toContain('seen [REDACTED] here');
  });
});
