/**
 * The shared-accounts rows of `npm run bench` (issue 42), `--only shares`: six accounts (a simulator each, one
 * API key per replica, so that the call log tells who polled) on one PostgreSQL (Debian's, on loopback), with
 * `database.share_accounts`:
 * - one `run` process for `seconds`, then three on a fresh database for as long: the API requests and the CPU
 *   seconds (utime + stime of /proc/PID/stat) of each; the most loaded of the three against the one alone;
 * - a rolling restart of the three (SIGTERM one, start it again, wait until the six accounts are led 2/2/2, the
 *   next): per account the longest gap between two of its API calls, against one poll period plus 15 s.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { startSimulator } from '../dist/simulator/server.js';
import { freePort } from '../test/helpers/free-port.ts';
import { postgresBinDir, startPostgres } from '../test/helpers/postgres-cluster.ts';
import type { Row } from './options.ts';

const CLI = fileURLToPath(new URL('../dist/main.js', import.meta.url));
const ACCOUNTS = ['acme', 'globex', 'initech', 'umbrella', 'hooli', 'stark'];
const keyOf = (account: string, replica: number) => `bench-shares-${account}-r${replica}-5c0d`;
/** the servers poll's period, s */
const PERIOD_S = 5;
const CLK_TCK = 100;

export interface SharesBench {
  servers: number;
  seconds: number;
  /** the one replica alone, then each of three: API requests and CPU seconds over `seconds` */
  one: { requests: number; cpuS: number };
  three: Array<{ requests: number; cpuS: number }>;
  /** per account, the longest gap between two API calls during the rolling restart, ms */
  gapsMs: number[];
  skipped?: string;
}

const cpuSeconds = (pid: number) => {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]!.split(' ');
  return (Number(fields[11]) + Number(fields[12])) / CLK_TCK;
};

async function until(what: string, probe: () => Promise<boolean>, timeoutMs = 90_000): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!(await probe().catch(() => false))) {
    if (performance.now() > deadline) throw new Error(`bench: timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

export async function measureShares(o: { servers?: number; seconds?: number } = {}): Promise<SharesBench> {
  const servers = o.servers ?? 100;
  const seconds = o.seconds ?? 30;
  const empty: SharesBench = { servers, seconds, one: { requests: 0, cpuS: 0 }, three: [], gapsMs: [] };
  if (!existsSync(join(postgresBinDir(), 'initdb')))
    return { ...empty, skipped: `shares rows not measured: install Debian's postgresql` };
  if (!existsSync(CLI)) throw new Error(`bench: ${CLI} is missing (npm run build)`);
  const dir = mkdtempSync(join(tmpdir(), 'bmx-bench-shares-'));
  const db = await startPostgres(postgresBinDir());
  const sims = await Promise.all(
    ACCOUNTS.map(async (account, i) => {
      const sim = await startSimulator({ apiKey: keyOf(account, 0), servers, attackRate: 0, seed: i + 1 });
      sim.setApiKeys([0, 1, 2].map((r) => keyOf(account, r)));
      return sim;
    }),
  );
  const children: ChildProcess[] = [];
  const urls = new Map<string, string>();
  /** a replica process on database `name`: its base URL and a start() that (re)spawns it */
  const replica = async (r: number, database: string) => {
    const port = await freePort();
    const file = join(dir, `${database}-r${r}.yml`);
    if (!urls.has(database)) urls.set(database, db.createDatabase(database));
    writeFileSync(join(dir, `${database}-url`), urls.get(database)!);
    const config = {
      web: { listen_address: `127.0.0.1:${port}` },
      state_dir: join(dir, `${database}-state-${r}`),
      log_level: 'error',
      accounts: ACCOUNTS.map((name, i) => ({ name, base_url: sims[i]!.url, api_key: keyOf(name, r) })),
      database: { url_file: join(dir, `${database}-url`), share_accounts: true, replica_name: `r${r}` },
      collectors: { graphs: false },
      schedules: { servers: `*/${PERIOD_S} * * * * *`, firewall: '*/10 * * * * *', catalog: '0 0 0 * * *' },
    };
    writeFileSync(file, JSON.stringify(config));
    const base = `http://127.0.0.1:${port}`;
    const self = {
      base,
      child: undefined as ChildProcess | undefined,
      start: () => {
        self.child = spawn(process.execPath, [CLI, 'run', `--config.file=${file}`], { stdio: 'ignore' });
        children.push(self.child);
      },
      /** accounts whose baremetal_leader is 1 here */
      leads: async () => {
        const text = await (await request(`${base}/metrics`)).body.text();
        return (text.match(/^baremetal_leader\{account="[^"]+"\} 1$/gm) ?? []).length;
      },
    };
    return self;
  };
  type Replica = Awaited<ReturnType<typeof replica>>;
  const settled = (all: Replica[], each: number) =>
    until(`the six accounts led ${each} by each`, async () =>
      (await Promise.all(all.map((r) => r.leads()))).every((n) => n === each),
    );
  /** API requests of replica r since `marks`, and CPU seconds of each over `seconds` */
  const window = async (all: Replica[]) => {
    await settled(all, ACCOUNTS.length / all.length);
    const marks = sims.map((s) => s.calls.length);
    const cpu0 = all.map((r) => cpuSeconds(r.child!.pid!));
    await new Promise((r) => setTimeout(r, seconds * 1000));
    return all.map((r, i) => ({
      requests: sims.reduce((n, s, k) => n + s.calls.slice(marks[k]).filter((c) => c.keyId === i).length, 0),
      cpuS: cpuSeconds(r.child!.pid!) - cpu0[i]!,
    }));
  };
  try {
    const alone = await replica(0, 'shares_one');
    alone.start();
    const [one] = await window([alone]);
    alone.child!.kill('SIGTERM');
    const three = await Promise.all([0, 1, 2].map((r) => replica(r, 'shares_three')));
    for (const r of three) r.start();
    const loads = await window(three);
    // the rolling restart: per account, the times of its API calls from here to the end
    const from = Date.now();
    const marks = sims.map((s) => s.calls.length);
    for (const r of three) {
      const exited = new Promise((resolve) => r.child!.once('exit', resolve));
      r.child!.kill('SIGTERM');
      await exited;
      r.start();
      await settled(three, 2);
    }
    // a poll period more, so that the last gap is closed by a poll
    await new Promise((r) => setTimeout(r, (PERIOD_S + 1) * 1000));
    const to = Date.now();
    const gapsMs = sims.map((s, k) => {
      const times = [from, ...s.calls.slice(marks[k]).map((c) => c.at), to];
      return Math.max(...times.slice(1).map((t, i) => t - times[i]!));
    });
    return { servers, seconds, one: one!, three: loads, gapsMs };
  } finally {
    for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await Promise.all(sims.map((s) => s.close()));
    db.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The goal-table rows: the most loaded of three replicas against one alone (requests, CPU), the handover gap. */
export function sharesRows(s: SharesBench): Row[] {
  if (s.skipped) return [];
  const worst = (pick: (l: { requests: number; cpuS: number }) => number) =>
    Math.max(...s.three.map(pick)) / Math.max(pick(s.one), 1e-9);
  const per = `6 accounts × ${s.servers} servers, polls every ${PERIOD_S} s, ${s.seconds} s: one replica ${s.one.requests} requests / ${s.one.cpuS.toFixed(2)} CPU s; three ${s.three.map((l) => `${l.requests} / ${l.cpuS.toFixed(2)} s`).join(', ')}`;
  return [
    {
      what: 'shared accounts: most loaded of 3 replicas ÷ 1 replica, API requests',
      measured: worst((l) => l.requests),
      unit: '×',
      reference: per,
      target: 0.4,
      rule: '≤ 0.4',
    },
    {
      what: 'shared accounts: most loaded of 3 replicas ÷ 1 replica, CPU seconds',
      measured: worst((l) => l.cpuS),
      unit: '×',
      reference: per,
      target: 0.4,
      rule: '≤ 0.4',
    },
    {
      what: 'shared accounts: longest gap between polls of an account, rolling restart of 3',
      measured: Math.max(...s.gapsMs),
      unit: 'ms',
      reference: `per account: ${s.gapsMs.map((g) => `${(g / 1000).toFixed(1)} s`).join(', ')} (SIGTERM, start again, 2/2/2 again, the next)`,
      target: PERIOD_S * 1000 + 15_000,
      rule: `≤ ${PERIOD_S} s + 15 s`,
    },
  ];
}
