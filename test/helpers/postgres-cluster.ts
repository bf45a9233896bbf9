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
 * The environment variable through which the test run's one shared cluster reaches every test worker:
 * `{"port":…,"password":…}` (JSON), set by `test/postgres-setup.ts` for the whole run.
 */
export const SHARED_POSTGRES_ENV = 'BAREMETAL_TEST_POSTGRES';

/** Where the shared cluster is, read from {@link SHARED_POSTGRES_ENV}; undefined when the run has none. */
function sharedCluster(): { port: number; password: string } | undefined {
  const raw = process.env[SHARED_POSTGRES_ENV];
  if (raw === undefined || raw === '') return undefined;
  const parsed = JSON.parse(raw) as { port?: unknown; password?: unknown };
  if (typeof parsed.port !== 'number' || typeof parsed.password !== 'string')
    throw new Error(`${SHARED_POSTGRES_ENV} must be {"port":<number>,"password":<string>}`);
  return { port: parsed.port, password: parsed.password };
}

let views = 0;

/**
 * A view of the run's shared cluster in the shape of a cluster of one's own: `url` is a database made for this
 * view, `createDatabase(name)` makes `<name>_<view>` (so two files asking for the same name stay apart), and
 * `stop()` drops what the view made. Advisory locks, `pg_stat_activity` rows and sessions of other views share
 * the server: tests that look at them filter on `datname = current_database()`. It cannot be restarted.
 */
function sharedView(bin: string, cluster: { port: number; password: string }): TestPostgres {
  const { port, password } = cluster;
  const view = `v${process.pid}_${++views}_${Math.random().toString(36).slice(2, 8)}`;
  const psql = (sql: string) =>
    execFileSync(join(bin, 'psql'), ['-h', '127.0.0.1', '-p', String(port), '-U', 'bmx', '-d', 'postgres', '-c', sql], {
      env: { ...process.env, PGPASSWORD: password },
      stdio: ['ignore', 'pipe', 'pipe'],
      timeout: 30_000,
    });
  const made: string[] = [];
  const create = (name: string) => {
    if (!/^[a-z_][a-z0-9_]*$/.test(name)) throw new Error(`bad database name ${name}`);
    const full = `${name}_${view}`.slice(0, 63);
    psql(`CREATE DATABASE ${full}`);
    made.push(full);
    return `postgres://bmx:${password}@127.0.0.1:${port}/${full}`;
  };
  const url = create('bmx');
  let stopped = false;
  return {
    url,
    password,
    port,
    createDatabase: create,
    restart() {
      throw new Error(
        'the test run shares one PostgreSQL cluster, which no file may restart: start one of your own with startPostgres(bin, { own: true })',
      );
    },
    stop() {
      if (stopped) return;
      stopped = true;
      for (const name of made.splice(0)) {
        try {
          psql(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
        } catch {}
      }
    },
  };
}

/**
 * A PostgreSQL cluster for a test file: a view of the run's shared cluster when the run has one
 * ({@link SHARED_POSTGRES_ENV}, one `initdb` per run), else — or with `own: true`, for a file that restarts or
 * stops its server — a fresh cluster of its own: `initdb` and `pg_ctl` in a temp dir, on a free loopback port,
 * password auth (scram) for the user `bmx`, database `bmx`. As root it runs them as the `postgres` user (initdb
 * refuses root). Call it from `beforeAll`, and `stop()` from `afterAll`.
 */
export async function startPostgres(bin: string, options: { own?: boolean } = {}): Promise<TestPostgres> {
  const shared = options.own ? undefined : sharedCluster();
  if (shared !== undefined) return sharedView(bin, shared);
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
