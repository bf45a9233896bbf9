/**
 * Replicas as real processes (`node dist/main.js run`) sharing the six accounts of shared-accounts.ts
 * (`database.share_accounts`) over one PostgreSQL, each replica with an API key of its own per account (so the
 * simulators tell which replica called), for the tests that freeze (SIGSTOP) or kill (SIGKILL) one of them.
 * Every process started is killed by `killAll()` (call it in afterAll).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { request } from 'undici';
import { afterAll, beforeAll } from 'vitest';
import type { Simulator } from '../../src/simulator/server.js';
import { spawnCli } from './cli.js';
import { requirePostgres, startPostgres, type TestPostgres } from './postgres.js';
import { eventually, freePort } from './processes.js';
import { ACCOUNTS, REPLICAS, startAccountSimulators } from './shared-accounts.js';
import { tempDir } from './tmp.js';

/** An account's lease as ha_leases has it. */
export interface Lease {
  account: string;
  holder: string | null;
  /** bigint as text */
  epoch: string;
}

/** Every account's lease, in account order. */
export async function leaseRows(db: pg.Client): Promise<Lease[]> {
  return (await db.query<Lease>('SELECT account, holder, epoch::text AS epoch FROM ha_leases ORDER BY account')).rows;
}

export interface ReplicaProcess {
  /** its index in REPLICAS (and its keys' keyId at the simulators) */
  replica: number;
  port: number;
  run: ReturnType<typeof spawnCli>;
}

export interface ReplicaProcessesOptions {
  /** the database's URL (with its password: written to a file, never on a command line) */
  url: string;
  sims: ReadonlyMap<string, Simulator>;
  keyOf: (account: string, replica: number) => string;
  /** the accounts configured (default all six of shared-accounts.ts) */
  accounts?: readonly string[];
  /** config keys of every account besides name, base_url and api_key */
  account?: Record<string, unknown>;
  /** config keys besides web, state_dir, accounts and database */
  config?: Record<string, unknown>;
}

/** What one replica's config changes from the suite's (the tests of replicas that disagree, ha-terms.test.ts). */
export interface ReplicaOverrides {
  /** its `database.replica_name` (default REPLICAS[replica]) */
  name?: string;
  /** its accounts (default the suite's) */
  accounts?: readonly string[];
  /** `database.share_accounts` (default true) */
  shareAccounts?: boolean;
  /** wait for /readyz 200 (default); false: for /metrics 200 only (a replica that disagrees is never ready) */
  ready?: boolean;
}

export class ReplicaProcesses {
  readonly started: ReplicaProcess[] = [];
  readonly #o: ReplicaProcessesOptions;
  readonly #dir = tempDir();
  readonly #urlFile: string;

  constructor(options: ReplicaProcessesOptions) {
    this.#o = options;
    this.#urlFile = join(this.#dir, 'database-url');
    writeFileSync(this.#urlFile, options.url);
  }

  /**
   * Starts replica `replica` (REPLICAS[replica], its keys keyId `replica`) and resolves once its /readyz says 200
   * (or its /metrics, with `overrides.ready` false).
   */
  async start(replica: number, overrides: ReplicaOverrides = {}): Promise<ReplicaProcess> {
    const { sims, keyOf } = this.#o;
    const port = await freePort();
    const configFile = join(this.#dir, `r${replica}-${this.started.length}.yml`);
    const config = {
      web: { listen_address: `127.0.0.1:${port}` },
      state_dir: tempDir(),
      log_level: 'info',
      accounts: (overrides.accounts ?? this.#o.accounts ?? ACCOUNTS).map((name) => ({
        name,
        base_url: sims.get(name)!.url,
        api_key: keyOf(name, replica),
        ...this.#o.account,
      })),
      database: {
        url_file: this.#urlFile,
        share_accounts: overrides.shareAccounts ?? true,
        ...(overrides.shareAccounts === false ? {} : { replica_name: overrides.name ?? REPLICAS[replica] }),
      },
      ...this.#o.config,
    };
    writeFileSync(configFile, JSON.stringify(config));
    const run = spawnCli(['run', `--config.file=${configFile}`]);
    const started = { replica, port, run };
    this.started.push(started);
    const path = overrides.ready === false ? '/metrics' : '/readyz';
    await eventually(
      `r${replica} to answer ${path} with 200:\n${run.output()}`,
      async () => {
        const { statusCode, body } = await request(`http://127.0.0.1:${port}${path}`);
        await body.dump();
        return statusCode === 200 ? true : undefined;
      },
      60_000,
      100,
    );
    return started;
  }

  /** Everything the processes printed. */
  output(): string {
    return this.started.map((p) => p.run.output()).join('\n');
  }

  /** Kills every process still running (a frozen one too: SIGKILL ends a stopped process) and waits for them. */
  async killAll(): Promise<void> {
    for (const { run } of this.started)
      if (run.child.exitCode === null && run.child.signalCode === null) run.child.kill('SIGKILL');
    await Promise.all(this.started.map((p) => p.run.exited));
  }
}

/**
 * `baremetal_leader{account}` on a replica's /metrics: the accounts whose value is 1. Throws when the replica does
 * not answer.
 */
export async function ledOn(port: number): Promise<string[]> {
  const { statusCode, body } = await request(`http://127.0.0.1:${port}/metrics`);
  const text = await body.text();
  if (statusCode !== 200) throw new Error(`/metrics of 127.0.0.1:${port}: ${statusCode}`);
  return [...text.matchAll(/^baremetal_leader\{account="([^"]+)"\} 1$/gm)].map((m) => m[1]!).sort();
}

/** What a test file of replica processes works with; set up by `start()`, torn down after the file's tests. */
export interface ReplicaSuite {
  /** why the suite is skipped (no PostgreSQL), if it is */
  skip: string | undefined;
  /** the PostgreSQL cluster (started before the file's tests) */
  server(): TestPostgres;
  sims: Map<string, Simulator>;
  /**
   * Starts the six simulators (with the keys of `keyOf`), a database `name` and the replicas' launcher, and a
   * client on that database for the test's own queries; the fleet a previous call started is torn down first.
   */
  start(
    name: string,
    keyOf: ReplicaProcessesOptions['keyOf'],
    options: Pick<ReplicaProcessesOptions, 'accounts' | 'account' | 'config'>,
  ): Promise<{ replicas: ReplicaProcesses; db: pg.Client }>;
}

/**
 * Registers the calling file's hooks: PostgreSQL (Debian's, on loopback) started before its tests; after them
 * every replica process killed, the client closed, the simulators closed and the cluster stopped.
 */
export function replicaSuite(): ReplicaSuite {
  const found = requirePostgres();
  let server: TestPostgres | undefined;
  const sims = new Map<string, Simulator>();
  // A file may start several fleets (one per test): each is torn down when the next starts, the last after all.
  let replicas: ReplicaProcesses | undefined;
  let db: pg.Client | undefined;
  const stop = async () => {
    await replicas?.killAll();
    await db?.end();
    await Promise.all([...sims.values()].map((s) => s.close()));
    sims.clear();
    replicas = undefined;
    db = undefined;
  };
  beforeAll(async () => {
    if (!found.skip) server = await startPostgres(found.bin);
  }, 120_000);
  afterAll(async () => {
    await stop();
    server?.stop();
  });
  return {
    skip: found.skip ? found.reason : undefined,
    server: () => server!,
    sims,
    start: async (name, keyOf, options) => {
      await stop();
      await startAccountSimulators(sims, keyOf);
      const url = server!.createDatabase(name);
      replicas = new ReplicaProcesses({ url, sims, keyOf, ...options });
      db = new pg.Client({ connectionString: url });
      await db.connect();
      return { replicas, db };
    },
  };
}
