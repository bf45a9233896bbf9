/**
 * A throwaway PostgreSQL cluster from Debian's binaries, for the tests and the bench. No imports of other
 * helpers but free-port.ts, so that the bench (node running bench/*.ts directly) can use it too.
 */
import { execFileSync } from 'node:child_process';
import { chmodSync, chownSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './free-port.ts';

/** A throwaway PostgreSQL cluster on 127.0.0.1: its connection URL (with a password) and how to stop it. */
export interface TestPostgres {
  /** `postgres://bmx:<password>@127.0.0.1:<port>/bmx` */
  url: string;
  password: string;
  port: number;
  /** Creates another database in the cluster and returns its URL (one per test file keeps tests apart). */
  createDatabase(name: string): string;
  /** Restarts the server (fast shutdown: every session ends), on the same port, data and options. */
  restart(): void;
  /** Stops the server (fast shutdown) and removes its directory. */
  stop(): void;
}

/** Where Debian's PostgreSQL binaries are (`/usr/lib/postgresql/<major>/bin`), newest major first. */
export function postgresBinDir(): string {
  const base = '/usr/lib/postgresql';
  let majors: string[] = [];
  try {
    majors = readdirSync(base).sort((a, b) => Number(b) - Number(a));
  } catch {}
  return join(base, majors[0] ?? '15', 'bin');
}

/**
 * Starts a fresh cluster with `initdb` and `pg_ctl` in a temp dir, on a free loopback port, password auth
 * (scram) for the user `bmx`, database `bmx`. As root it runs them as the `postgres` user (initdb refuses
 * root). Synchronous: call it from `beforeAll`, and `stop()` from `afterAll`.
 */
export async function startPostgres(bin: string): Promise<TestPostgres> {
  const port = await freePort();
  const dir = mkdtempSync(join(tmpdir(), 'bmx-pg-'));
  const data = join(dir, 'data');
  const asRoot = process.getuid?.() === 0;
  const run = (program: string, args: string[]) => {
    const command = asRoot ? 'runuser' : join(bin, program);
    const argv = asRoot ? ['-u', 'postgres', '--', join(bin, program), ...args] : args;
    return execFileSync(command, argv, { stdio: ['ignore', 'pipe', 'pipe'], cwd: dir, timeout: 60_000 }).toString();
  };
  const password = `pw-${Math.random().toString(36).slice(2)}${Math.random().toString(36).slice(2)}`;
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
    chownSync(dir, uid, gid);
  }
  chmodSync(dir, 0o755);
  const pwfile = join(dir, 'pw');
  writeFileSync(pwfile, `${password}\n`);
  if (asRoot) {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
    chownSync(pwfile, uid, 0);
  }
  run('initdb', ['-D', data, '-U', 'bmx', '--pwfile', pwfile, '--auth=scram-sha-256', '-E', 'UTF8', '--no-sync']);
  run('pg_ctl', [
    '-D',
    data,
    '-l',
    join(dir, 'log'),
    '-w',
    '-t',
    '60',
    '-o',
    `-c listen_addresses=127.0.0.1 -c port=${port} -c unix_socket_directories=${dir} -c fsync=off -c max_connections=200`,
    'start',
  ]);
  const psql = (sql: string) =>
    execFileSync(join(bin, 'psql'), ['-h', '127.0.0.1', '-p', String(port), '-U', 'bmx', '-d', 'postgres', '-c', sql], {
      env: { ...process.env, PGPASSWORD: password },
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 30_000,
    });
  psql('CREATE DATABASE bmx');
  const urlFor = (db: string) => `postgres://bmx:${password}@127.0.0.1:${port}/${db}`;
  let stopped = false;
  return {
    url: urlFor('bmx'),
    password,
    port,
    createDatabase(name) {
      if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`bad database name ${name}`);
      psql(`CREATE DATABASE ${name}`);
      return urlFor(name);
    },
    restart() {
      // pg_ctl restart reuses the options of the previous start (postmaster.opts).
      run('pg_ctl', ['-D', data, '-l', join(dir, 'log'), '-m', 'fast', '-w', '-t', '60', 'restart']);
    },
    stop() {
      if (stopped) return;
      stopped = true;
      try {
        run('pg_ctl', ['-D', data, '-m', 'fast', '-w', '-t', '30', 'stop']);
      } catch {}
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
