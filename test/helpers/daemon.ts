/**
 * The one harness for a running daemon in integration and e2e tests: a simulator per account, a config in the
 * file's own shape (merged over what every test needs), a fresh state_dir and the daemon, on SQLite or on a
 * PostgreSQL URL. Everything it starts is stopped when the test finishes (started from a `beforeAll`: by calling
 * `stop()` in `afterAll`), daemon first.
 */
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { onTestFinished } from 'vitest';
import type { AccountRuntime } from '../../src/daemon/accounts.js';
import type { RemediationEngine } from '../../src/remediation/engine.js';
import { request } from 'undici';
import { configFromDocument, loadConfig } from '../../src/config/load.js';
import type { Config } from '../../src/config/types.js';
import { startDaemon, type Daemon, type DaemonOptions } from '../../src/daemon/start.js';
import { startSimulator, type Simulator, type SimulatorServerOptions } from '../../src/simulator/server.js';
import { requireBuiltCli, spawnCli } from './cli.js';
import { captureLogger } from './logger.js';
import { eventually, freePort } from './processes.js';
import { TOKEN } from './remediation.js';

/** The API key of the harness's simulators, unless a test names its own. */
export const HARNESS_KEY = 'harness-key-2f8c41d7';

export interface HarnessOptions {
  /** the API key (default HARNESS_KEY) */
  key?: string;
  /** the simulator of the single account (or of `default`); `apiKey` is the harness's */
  simulator?: SimulatorServerOptions;
  /** a running simulator to use instead (replicas sharing one upstream); the harness does not close it */
  upstream?: Simulator;
  /**
   * several accounts: name → its simulator's options; each account gets its own simulator and key
   * (`<key>-<name>`) and the config's `accounts:` list. Without it the daemon has the single `default` account.
   */
  accounts?: Record<string, SimulatorServerOptions>;
  /**
   * config keys in the file's shape, merged over the harness's; a function sees the simulators and state_dir, and is
   * called again by a reload (SIGHUP, `POST /-/reload`), which then applies what it returns
   */
  config?: Record<string, unknown> | ((ctx: HarnessContext) => Record<string, unknown>);
  /** the environment `buildConfig` reads (default: the API key of a single account) */
  env?: NodeJS.ProcessEnv;
  /** an existing state_dir (a restart); default a fresh one */
  stateDir?: string;
  /** PostgreSQL: the `database.url` of the state store (default SQLite under state_dir) */
  databaseUrl?: string;
  /** write `<state_dir>/token` (`token`, default TOKEN) and accept it as the remediation bearer token */
  remediationAuth?: boolean;
  /** the bearer token `remediationAuth` writes */
  token?: string;
  /** the daemon's options (default: no schedule, no listener, 1 ms retry delay, a captured debug logger) */
  daemon?: DaemonOptions;
  /** the log level of the captured logger (default `debug`) */
  logLevel?: string;
  /**
   * write the config to `<state_dir>/config.yml` and load it from there with the daemon's loader, which a reload
   * (SIGHUP, `POST /-/reload`) reads again: the test rewrites `configFile` to change it
   */
  configFile?: boolean;
  /** false: do not start the daemon yet (the test prepares the simulator first, then calls `start()`) */
  start?: boolean;
}

export interface HarnessContext {
  stateDir: string;
  /** simulators by account name */
  sims: Map<string, Simulator>;
}

export interface Harness extends HarnessContext {
  daemon: Daemon;
  config: Config;
  /** the simulator of the first account */
  sim: Simulator;
  /** with `configFile`: the file the daemon loaded and reloads */
  configFile: string | undefined;
  /** the daemon's logger and every line it logged */
  log: ReturnType<typeof captureLogger>;
  /** account `name` of the running daemon (`default` for the single-account form): see accountOf */
  account(name: string): ReturnType<typeof accountOf>;
  /** starts the daemon, stopping the one running first (a restart on the same config and state_dir) */
  start(options?: DaemonOptions): Promise<Daemon>;
  /** stops the daemon, then the simulators (also done when the test finishes); idempotent */
  stop(): Promise<void>;
}

const merge = (base: Record<string, unknown>, over: Record<string, unknown>): Record<string, unknown> => {
  const out = { ...base };
  for (const [key, value] of Object.entries(over)) {
    const prior = out[key];
    const nested = (v: unknown): v is Record<string, unknown> =>
      typeof v === 'object' && v !== null && !Array.isArray(v);
    out[key] = nested(prior) && nested(value) ? merge(prior, value) : value;
  }
  return out;
};

/**
 * What a test reaches of account `name` of `daemon`: its runtime (poll jobs, client, graph store, metrics) and its
 * remediation engine. Throws for an account the daemon does not have.
 */
export function accountOf(daemon: Daemon, name: string): AccountRuntime & { engine: RemediationEngine } {
  const runtime = daemon.accounts.get(name);
  const engine = daemon.engines.get(name);
  if (!runtime || !engine) throw new Error(`the daemon has no account ${name}`);
  return { ...runtime, engine };
}

/** The common half of both harnesses: simulators, state_dir, token, the config in the file's shape. */
async function prepare(o: HarnessOptions, stop: () => Promise<void>) {
  const key = o.key ?? HARNESS_KEY;
  const sims = new Map<string, Simulator>();
  /** the simulators the harness started (and closes) */
  const owned: Simulator[] = [];
  // Inside a test it stops with the test; from a beforeAll the caller stops it in afterAll.
  try {
    onTestFinished(stop);
  } catch {}
  // A state_dir of its own is removed by stop(), after the daemon that writes into it has stopped.
  const made = o.stateDir === undefined ? mkdtempSync(join(tmpdir(), 'bmx-')) : undefined;
  const stateDir = o.stateDir ?? made!;
  mkdirSync(stateDir, { recursive: true });
  const removeStateDir = () => {
    if (made) rmSync(made, { recursive: true, force: true, maxRetries: 3 });
  };
  const several = o.accounts !== undefined;
  if (o.upstream) sims.set('default', o.upstream);
  else
    for (const [name, options] of Object.entries(o.accounts ?? { default: o.simulator ?? {} })) {
      const sim = await startSimulator({ ...options, apiKey: several ? `${key}-${name}` : key });
      owned.push(sim);
      sims.set(name, sim);
    }
  const ctx = { stateDir, sims };
  const upstream = (sim: Simulator) => ({ base_url: sim.url, retries: 0 });
  const base: Record<string, unknown> = {
    web: { listen_address: '127.0.0.1:0' },
    state_dir: stateDir,
    ...(several
      ? { accounts: [...sims].map(([name, sim]) => ({ name, ...upstream(sim), api_key: `${key}-${name}` })) }
      : { upstream: upstream(sims.get('default')!) }),
    ...(o.databaseUrl !== undefined ? { database: { url: o.databaseUrl } } : {}),
  };
  if (o.remediationAuth) {
    writeFileSync(join(stateDir, 'token'), o.token ?? TOKEN);
    base.remediation = { auth: { bearer_token_files: [join(stateDir, 'token')] } };
  }
  /** the config in the file's shape: the harness's keys with the test's over them (called again by a reload) */
  const raw = (over: Record<string, unknown> = {}) =>
    merge(merge(base, typeof o.config === 'function' ? o.config(ctx) : (o.config ?? {})), over);
  const env = o.env ?? (several ? {} : { BAREMETAL_API_KEY: key });
  return { ctx, owned, raw, env, removeStateDir };
}

/** Starts the simulators and a daemon as `o` says; see HarnessOptions. */
export async function startHarness(o: HarnessOptions = {}): Promise<Harness> {
  let daemon: Daemon | undefined;
  let stopped = false;
  let owned: Simulator[] = [];
  let removeStateDir = () => {};
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    await daemon?.stop();
    await Promise.all(owned.map((s) => s.close()));
    removeStateDir();
  };
  const prepared = await prepare(o, stop);
  const { ctx, raw, env } = prepared;
  ({ owned, removeStateDir } = prepared);
  const configFile = o.configFile ? join(ctx.stateDir, 'config.yml') : undefined;
  // JSON is YAML: the file holds the same keys the object would.
  if (configFile) writeFileSync(configFile, JSON.stringify(raw()));
  // A reload reads the file again, or calls the config function again (the test changes what it returns).
  const configOf = () => (configFile ? loadConfig(configFile, env) : configFromDocument(raw(), env));
  const config = await configOf();
  const log = captureLogger(o.logLevel ?? 'debug');
  const start = async (options: DaemonOptions = o.daemon ?? {}) => {
    await daemon?.stop();
    const started = await startDaemon(config, {
      logger: log.logger,
      schedule: false,
      listen: false,
      retryMinDelayMs: 1,
      reloadConfig: configOf,
      ...options,
    });
    // A test may stop the daemon itself: the harness's own stop then waits for that one.
    const stopOnce = started.stop;
    let stopping: Promise<void> | undefined;
    started.stop = () => (stopping ??= stopOnce());
    daemon = started;
    return started;
  };
  if (o.start !== false) await start();
  return {
    ...ctx,
    get daemon() {
      if (!daemon) throw new Error('the harness has not started its daemon yet: call start()');
      return daemon;
    },
    config,
    configFile,
    sim: [...ctx.sims.values()][0]!,
    log,
    account: (name) => accountOf(daemon!, name),
    start,
    stop,
  };
}

/** One `baremetal-exporter run` child process of a DaemonProcess. */
export type RunProcess = ReturnType<typeof spawnCli>;

export interface DaemonProcess extends HarnessContext {
  /** the simulator of the first account */
  sim: Simulator;
  /** the config file `run` reads (`<state_dir>/config.yml`) */
  configFile: string;
  /** the port of `web.listen_address` (a free one on 127.0.0.1) and its base URL */
  port: number;
  url: string;
  /** starts `run --config.file=FILE` (plus `args`) with the harness's environment; does not wait */
  spawn(args?: string[], env?: Record<string, string>): RunProcess;
  /** spawns and resolves once `/readyz` answers 200 (the output is in the error otherwise) */
  start(args?: string[]): Promise<RunProcess>;
  /** SIGKILLs every process still running, then closes the simulators it started; idempotent */
  stop(): Promise<void>;
}

/**
 * The harness for a daemon as a real process — the built CLI's `run` (signals, crashes, failover between
 * processes, flags): the same simulators, state_dir and config (written to a file) as startHarness, with
 * `web.listen_address` on a free loopback port.
 */
export async function startDaemonProcess(o: HarnessOptions = {}): Promise<DaemonProcess> {
  requireBuiltCli();
  const runs: RunProcess[] = [];
  let stopped = false;
  let owned: Simulator[] = [];
  let removeStateDir = () => {};
  const stop = async () => {
    if (stopped) return;
    stopped = true;
    for (const run of runs) if (run.child.exitCode === null && run.child.signalCode === null) run.child.kill('SIGKILL');
    await Promise.all(runs.map((run) => run.exited));
    await Promise.all(owned.map((s) => s.close()));
    removeStateDir();
  };
  const prepared = await prepare(o, stop);
  ({ owned, removeStateDir } = prepared);
  const { ctx, raw, env } = prepared;
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  const configFile = join(ctx.stateDir, 'config.yml');
  writeFileSync(configFile, JSON.stringify(raw({ web: { listen_address: `127.0.0.1:${port}` } })));
  const spawnRun = (args: string[] = [], extraEnv: Record<string, string> = {}) => {
    const defined = Object.entries(env).filter((e): e is [string, string] => e[1] !== undefined);
    const run = spawnCli(['run', `--config.file=${configFile}`, ...args], {
      ...Object.fromEntries(defined),
      ...extraEnv,
    });
    runs.push(run);
    return run;
  };
  return {
    ...ctx,
    sim: [...ctx.sims.values()][0]!,
    configFile,
    port,
    url,
    spawn: spawnRun,
    start: async (args) => {
      const run = spawnRun(args);
      await eventually(
        `the daemon to be ready:\n${run.output()}`,
        async () => ((await request(`${url}/readyz`)).statusCode === 200 ? true : undefined),
        60_000,
        100,
      );
      return run;
    },
    stop,
  };
}
