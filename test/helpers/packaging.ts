import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { accessSync, constants, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onTestFinished } from 'vitest';
import { fileURLToPath } from 'node:url';

/** The repository root (the worktree under test). */
export const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** package.json as shipped. */
export const PKG = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as {
  name: string;
  version: string;
  engines: { node: string };
  files: string[];
  bin: Record<string, string>;
  devDependencies: Record<string, string>;
};

/** The Node.js version package.json's `engines.node` asks for (`>=X.Y.Z`). */
export const NODE_NEEDED = /^>=(\d+\.\d+\.\d+)$/.exec(PKG.engines.node)?.[1];

/** The directories of a stock Debian PATH, without anything this test run put first (node_modules/.bin, Node 24). */
export const STOCK_PATH = ['/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'];

/**
 * The environment of a new user's shell: HOME, locale, proxies and CA settings of this machine, npm's
 * machine-level settings (registry, CA file, cache) — and none of what `npm test` exports (npm_lifecycle_*,
 * npm_config_local_prefix, NODE, …), which would point a child npm at this worktree.
 */
export function stockEnv(pathFirst: string[]): NodeJS.ProcessEnv {
  const keep =
    /^(HOME|USER|LANG|LC_ALL|TMPDIR|TERM|https?_proxy|no_proxy|HTTPS?_PROXY|NO_PROXY|NODE_EXTRA_CA_CERTS|SSL_CERT_FILE|SSL_CERT_DIR|npm_config_(cafile|globalconfig|userconfig|registry|cache))$/;
  const env: NodeJS.ProcessEnv = Object.fromEntries(Object.entries(process.env).filter(([key]) => keep.test(key)));
  env.PATH = [...pathFirst, ...STOCK_PATH.filter((dir) => !pathFirst.includes(dir))].join(':');
  return env;
}

/** The machine's own Node.js (Debian 12 ships 20) when it is older than `engines.node`, else why not. */
export function systemOldNode(path = '/usr/bin/node'): { path: string; version: string } | { skip: string } {
  try {
    accessSync(path, constants.X_OK);
  } catch {
    return { skip: `${path} not found: this test needs the machine's own (older) Node.js` };
  }
  const version = readVersion(path);
  if (NODE_NEEDED === undefined || !olderThan(version, NODE_NEEDED))
    return { skip: `${path} is Node.js ${version}, not older than ${PKG.engines.node}` };
  return { path, version };
}

function readVersion(node: string): string {
  // Synchronous on purpose: the answer decides, at collection time, which tests are skipped.
  return execFileSync(node, ['-p', 'process.versions.node'], { encoding: 'utf8', timeout: 10_000 }).trim();
}

function olderThan(found: string, needed: string): boolean {
  const a = found.split('.').map(Number);
  const b = needed.split('.').map(Number);
  for (let i = 0; i < b.length; i++) if ((a[i] ?? 0) !== b[i]) return (a[i] ?? 0) < b[i]!;
  return false;
}

/** Runs a command to completion within `timeoutMs` (then SIGKILL); resolves with its exit code and output. */
export function runCommand(
  command: string,
  args: string[],
  options: { cwd?: string; env?: NodeJS.ProcessEnv; timeoutMs: number },
): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, {
      cwd: options.cwd,
      env: options.env ?? process.env,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => (stdout += String(d)));
    child.stderr.on('data', (d) => (stderr += String(d)));
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs);
    child.on('error', reject);
    child.on('exit', (code) => {
      clearTimeout(timer);
      resolve({ code, stdout, stderr });
    });
  });
}

/**
 * Starts a command in its own process group (npm runs scripts in child shells); `stop()` sends SIGTERM to the
 * group and waits up to `graceMs`, then SIGKILLs it. Resolves with the exit code of the command itself.
 */
export function startGroup(
  command: string,
  args: string[],
  options: { cwd: string; env: NodeJS.ProcessEnv },
): {
  child: ChildProcess;
  output: () => string;
  stop: (graceMs?: number) => Promise<number | null>;
} {
  const child = spawn(command, args, {
    cwd: options.cwd,
    env: options.env,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let output = '';
  child.stdout!.on('data', (d) => (output += String(d)));
  child.stderr!.on('data', (d) => (output += String(d)));
  const exited = new Promise<number | null>((resolve) =>
    child.on('exit', (code, signal) => resolve(code ?? (signal ? -1 : null))),
  );
  const signalGroup = (signal: NodeJS.Signals) => {
    try {
      process.kill(-child.pid!, signal);
    } catch {
      // the group is gone already
    }
  };
  return {
    child,
    output: () => output,
    stop: async (graceMs = 35_000) => {
      if (child.exitCode === null && child.signalCode === null) signalGroup('SIGTERM');
      const timer = setTimeout(() => signalGroup('SIGKILL'), graceMs);
      const code = await exited;
      clearTimeout(timer);
      signalGroup('SIGKILL'); // anything the command left behind in its group
      return code;
    },
  };
}

/**
 * A temporary directory for the running test, removed when it finishes (pass or fail). Unlike
 * helpers/tmp.ts's `tempDir`, whose `afterEach` registered inside a test does not run for that test.
 */
export function testDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  onTestFinished(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}

/** GET on loopback; the body when the status is 200, else undefined (for `eventually`). */
export async function bodyOf(url: string): Promise<string | undefined> {
  const response = await fetch(url, { signal: AbortSignal.timeout(5000) });
  const text = await response.text();
  return response.status === 200 ? text : undefined;
}
