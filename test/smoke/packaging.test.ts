/**
 * First contact and packaging (issue 12): what a new user meets. The version line, the one-line refusal of an
 * older Node, the systemd unit, `npm ci && npm run demo` in a fresh copy with the machine's Node 20 first on
 * PATH, and the packed tarball installed globally. The heavy cases are bounded (timeouts, SIGKILL of their
 * process groups) and work in temporary directories removed afterwards.
 */
import { execFileSync } from 'node:child_process';
import { accessSync, constants, cpSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { beforeAll, describe, expect, it } from 'vitest';
import { CLI, requireBuiltCli, runCli } from '../helpers/cli.js';
import { eventually, freePort } from '../helpers/processes.js';
import {
  bodyOf,
  NODE_NEEDED,
  PKG,
  ROOT,
  runCommand,
  startGroup,
  stockEnv,
  systemOldNode,
  testDir,
} from '../helpers/packaging.js';
import { tempDir } from '../helpers/tmp.js';

const NODE24_DIR = dirname(process.execPath);
const VERSION_LINE = new RegExp(
  `^baremetal-exporter ${PKG.version.replaceAll('.', '\\.')} \\(node v\\d+\\.\\d+\\.\\d+, ${process.platform}-${process.arch}\\)\\n$`,
);

/** Waits until the daemon at `port` serves `baremetal_servers`; returns the exposition. */
function metricsWithServers(port: number, what: string, timeoutMs: number): Promise<string> {
  return eventually(
    what,
    async () => {
      const body = await bodyOf(`http://127.0.0.1:${port}/metrics`);
      return body !== undefined && /^baremetal_servers\{account="default"\} \d+$/m.test(body) ? body : undefined;
    },
    timeoutMs,
    500,
  );
}

describe('package.json', () => {
  it.each([
    { name: 'engines.node is ">=X.Y.Z" (the launcher reads it)', ok: () => NODE_NEEDED !== undefined },
    {
      name: 'the devDependency `node` pins an exact Node 24 for npm scripts',
      ok: () => /^24\.\d+\.\d+$/.test(PKG.devDependencies.node ?? ''),
    },
    { name: 'the bin is the launcher', ok: () => PKG.bin['baremetal-exporter'] === 'dist/main.js' },
  ])('$name', ({ ok }) => {
    expect(ok()).toBe(true);
  });
});

describe('--version', () => {
  it.each([{ flag: '--version' }, { flag: '-v' }])(
    '$flag prints the version and the runtime, exit 0',
    async ({ flag }) => {
      const result = await runCli([flag]);
      expect(result.code).toBe(0);
      expect(result.stdout).toMatch(VERSION_LINE);
      expect(result.stdout).toContain(`(node ${process.version},`);
    },
  );
});

const oldNode = systemOldNode();
describe.skipIf('skip' in oldNode)(
  `an older Node running dist/main.js (${'skip' in oldNode ? oldNode.skip : oldNode.path})`,
  () => {
    it.each([
      { name: '--version', args: ['--version'] },
      { name: 'run', args: ['run', '--config', '/nonexistent/config.yml'] },
      { name: 'demo', args: ['demo', '--port', '1'] },
    ])('$name: one line on stderr naming the version found and the one needed, exit 2', async ({ args }) => {
      requireBuiltCli();
      const node = oldNode as { path: string; version: string };
      const result = await runCommand(node.path, [CLI, ...args], { timeoutMs: 20_000 });
      expect(result.code).toBe(2);
      expect(result.stdout).toBe('');
      expect(result.stderr.split('\n')).toEqual([expect.any(String), '']);
      expect(result.stderr).toContain(
        `Node.js ${node.version} (${node.path}) is too old, ${NODE_NEEDED} or newer is needed`,
      );
      expect(result.stderr).toContain('install Node.js 24');
    });
  },
);

const systemdAnalyze = '/usr/bin/systemd-analyze';
const hasSystemdAnalyze = (() => {
  try {
    accessSync(systemdAnalyze, constants.X_OK);
    return true;
  } catch {
    return false;
  }
})();
describe('the systemd unit', () => {
  const unit = readFileSync(join(ROOT, 'examples/baremetal-exporter.service'), 'utf8');
  const NODE = '/opt/baremetal-exporter/node/bin/node';

  it.each([
    { name: 'ExecStart', key: 'ExecStart' },
    { name: 'ExecStartPre', key: 'ExecStartPre' },
  ])('$name runs the Node installed beside the app, not /usr/bin/node', ({ key }) => {
    const line = unit.split('\n').find((l) => l.startsWith(`${key}=`));
    expect(line).toBeDefined();
    expect(line!.slice(key.length + 1).split(' ')[0]).toBe(NODE);
  });

  // systemd-analyze checks that ExecStart's binary exists: point the Node path at this test's Node 24, change
  // nothing else, and require a clean verdict (no unknown keys, no bad values).
  it.skipIf(!hasSystemdAnalyze)(
    `passes systemd-analyze verify${hasSystemdAnalyze ? '' : ` (skipped: ${systemdAnalyze} not found — Debian's systemd package)`}`,
    async () => {
      const dir = testDir('bmx-unit-');
      const file = join(dir, 'baremetal-exporter.service');
      writeFileSync(file, unit.replaceAll(NODE, process.execPath));
      const result = await runCommand(systemdAnalyze, ['verify', '--man=no', file], { timeoutMs: 30_000 });
      expect(result.stderr).toBe('');
      expect(result.code).toBe(0);
    },
  );
});

/** The files a fresh clone of this working tree would have (tracked and new, not ignored), copied to `dest`. */
function copyWorkingTree(dest: string): void {
  const files = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], {
    cwd: ROOT,
    encoding: 'utf8',
  })
    .split('\0')
    .filter(Boolean);
  for (const file of files) {
    if (!existsSync(join(ROOT, file))) continue; // deleted in the working tree, not yet committed
    mkdirSync(dirname(join(dest, file)), { recursive: true });
    cpSync(join(ROOT, file), join(dest, file));
  }
}

describe.skipIf('skip' in oldNode)(
  `a stock machine: the machine's Node first on PATH (${'skip' in oldNode ? oldNode.skip : oldNode.path})`,
  () => {
    it("`npm ci && npm run demo` in a fresh copy serves baremetal_servers on the project's Node 24", {
      timeout: 300_000,
    }, async () => {
      const node = oldNode as { path: string; version: string };
      const dir = testDir('bmx-clone-');
      copyWorkingTree(dir);
      const env = stockEnv([dirname(node.path)]);
      expect(execFileSync('node', ['-p', 'process.versions.node'], { env, encoding: 'utf8' }).trim()).toBe(
        node.version,
      );

      // Engine warnings (npm itself runs on the old Node) are expected; engine-strict is off by default.
      const ci = await runCommand('npm', ['ci', '--no-audit', '--no-fund', '--prefer-offline'], {
        cwd: dir,
        env,
        timeoutMs: 180_000,
      });
      expect(ci.code, ci.stderr).toBe(0);

      const port = await freePort();
      const demo = startGroup('npm', ['run', 'demo', '--', '--port', String(port)], { cwd: dir, env });
      try {
        const metrics = await metricsWithServers(
          port,
          `the demo's /metrics (output: ${demo.output().slice(-2000)})`,
          120_000,
        );
        // The daemon ran on the pinned Node 24 from node_modules/.bin, not on the machine's Node.
        expect(metrics).toContain(`nodejs_version_info{version="v${PKG.devDependencies.node}"`);
      } finally {
        await demo.stop();
      }
    });
  },
);

describe('the packed tarball, installed globally into a prefix', () => {
  const dir = tempDir('bmx-pack-', 'all');
  const prefix = join(dir, 'prefix');
  const bin = join(prefix, 'bin', 'baremetal-exporter');
  const installed = join(prefix, 'lib', 'node_modules', PKG.name);
  // A user's shell: the installed bin first, then a Node 24 (the launcher refuses older ones, tested above).
  const userEnv = stockEnv([join(prefix, 'bin'), NODE24_DIR]);

  beforeAll(async () => {
    requireBuiltCli();
    // npm test built dist/ already: --ignore-scripts skips prepack's rebuild, which would rewrite dist/ under
    // the other test files.
    const env = stockEnv([NODE24_DIR]);
    const pack = await runCommand('npm', ['pack', '--ignore-scripts', '--pack-destination', dir], {
      cwd: ROOT,
      env,
      timeoutMs: 60_000,
    });
    expect(pack.code, pack.stderr).toBe(0);
    const tarball = join(dir, `${PKG.name}-${PKG.version}.tgz`);
    const install = await runCommand(
      'npm',
      ['install', '-g', '--prefix', prefix, '--no-audit', '--no-fund', '--prefer-offline', tarball],
      { cwd: dir, env, timeoutMs: 180_000 },
    );
    expect(install.code, install.stderr).toBe(0);
    writeFileSync(join(dir, 'bad.yml'), 'upstreams: {}\n');
  }, 240_000);

  it.each([
    { name: '--version', args: () => ['--version'], code: 0, out: VERSION_LINE },
    {
      name: '--help',
      args: () => ['--help'],
      code: 0,
      out: /^baremetal-exporter [\s\S]*Usage:[\s\S]*check-config FILE/,
    },
    {
      name: 'check-config on the shipped example',
      args: () => ['check-config', join(installed, 'examples', 'config.yml')],
      code: 0,
      out: /config\.yml: valid — API https:\/\/api\.provider\.example \(key from env\)/,
    },
    { name: 'check-config on a bad file', args: () => ['check-config', join(dir, 'bad.yml')], code: 1, out: /^$/ },
  ])('$name → exit $code', async ({ args, code, out }) => {
    const result = await runCommand(bin, args(), {
      cwd: dir,
      env: { ...userEnv, BAREMETAL_API_KEY: 'k' },
      timeoutMs: 30_000,
    });
    expect(result.code, result.stderr).toBe(code);
    expect(result.stdout).toMatch(out);
  });

  it('demo serves baremetal_servers, and stops on SIGTERM with exit 0', { timeout: 120_000 }, async () => {
    const port = await freePort();
    const demo = startGroup(bin, ['demo', '--port', String(port)], { cwd: dir, env: userEnv });
    try {
      await metricsWithServers(port, `the installed demo's /metrics (output: ${demo.output().slice(-2000)})`, 60_000);
      // The demo handles SIGTERM once it has printed its banner (before, the signal's default action applies).
      await eventually(
        'the demo banner',
        async () => (demo.output().includes('Ctrl-C stops.') ? true : undefined),
        60_000,
      );
    } finally {
      expect(await demo.stop()).toBe(0);
    }
  });
});
