/**
 * The HA rows of `npm run bench` (issue 10), also runnable alone:
 *
 *   node bench/ha.ts [--deliveries 200] [--failovers 3]
 *
 * - Webhook → upstream call, on SQLite and on PostgreSQL: one daemon in this process, the simulator (no
 *   added latency) in this process, `deliveries` alerts one after another, each for another server (outside
 *   any cooldown or 2-minute window). Measured is the webhook's round trip, which the receiver answers only
 *   after the upstream call returned and the journal row was completed: an upper bound of "received → call
 *   issued" (the simulator's reply and the completion write are included). The row sets up what it measures:
 *   the circuit breaker is sized for its deliveries (`max_servers` = deliveries), since the default (3
 *   servers per 15 minutes) would deny the fourth and measure the safety default instead of the path; every
 *   guard still runs on every delivery.
 * - Failover: two `baremetal-exporter run` processes on one PostgreSQL; the leader is SIGKILLed, and the time
 *   until the other reports `baremetal_leader 1` on /metrics is measured, `failovers` times.
 *
 * PostgreSQL is Debian's (`postgresql`), started in a temp dir on loopback like the tests do; without it the
 * PostgreSQL rows say so and are not measured.
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { request } from 'undici';
import { configFromDocument } from '../dist/config/load.js';
import { startDaemon } from '../dist/daemon/start.js';
import { createLogger } from '../dist/logger.js';
import { startSimulator } from '../dist/simulator/server.js';
import { postgresBinDir, startPostgres, type TestPostgres } from '../test/helpers/postgres-cluster.ts';
import { freePort } from '../test/helpers/free-port.ts';
import { percentile, type Row } from './options.ts';

const KEY = 'bench-ha-key-0b1e';
const TOKEN = 'bench-ha-token-4d2f9c81a7e3';
const CLI = fileURLToPath(new URL('../dist/main.js', import.meta.url));

export interface HaBench {
  /** webhook round trip per backend, ms */
  latency: Array<{ backend: 'sqlite' | 'postgres'; p50: number; p95: number; max: number; n: number }>;
  /** SIGKILL of the leader → the follower reports leader 1, ms, each run */
  failoverMs: number[];
  /** why the PostgreSQL rows were not measured */
  skipped?: string;
}

/** Polls `probe` every `stepMs` until it returns true; throws after `timeoutMs`. */
async function until(what: string, probe: () => Promise<boolean>, timeoutMs = 60_000, stepMs = 50): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    if (await probe().catch(() => false)) return;
    if (performance.now() > deadline) throw new Error(`bench: timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, stepMs));
  }
}

const rule = { alertname: 'BaremetalServerUnreachable', action: 'powercycle', cooldown: '30m' };

/** Webhook round trips against one in-process daemon on `database` (undefined: SQLite). */
async function webhookLatency(dir: string, deliveries: number, databaseUrl: string | undefined): Promise<number[]> {
  const sim = await startSimulator({ apiKey: KEY, servers: deliveries + 2, attackRate: 0 });
  writeFileSync(join(dir, 'token'), `${TOKEN}\n`);
  const config = await configFromDocument(
    {
      upstream: { base_url: sim.url, max_requests_per_second: 10_000 },
      web: { listen_address: '127.0.0.1:0' },
      state_dir: join(dir, databaseUrl ? 'state-pg' : 'state-sqlite'),
      ...(databaseUrl ? { database: { url: databaseUrl } } : {}),
      schedules: { servers: '0 0 * * * *', firewall: '0 0 * * * *', graphs: '0 0 0 * * *', catalog: '0 0 0 * * *' },
      remediation: {
        dry_run: false,
        budget_per_hour: 10_000,
        auth: { bearer_token_files: [join(dir, 'token')] },
        // One power cycle per server, `deliveries` servers: a breaker sized for them (see the module comment).
        safety: { circuit_breaker: { max_servers: deliveries } },
        rules: [rule],
      },
    },
    { BAREMETAL_API_KEY: KEY },
  );
  const daemon = await startDaemon(config, { logger: createLogger('silent') });
  try {
    await until('the daemon to be ready', async () => (await request(`${daemon.url}/readyz`)).statusCode === 200);
    const ids = [...sim.state.servers.keys()];
    const startsAt = new Date().toISOString();
    const times: number[] = [];
    for (let i = 0; i < deliveries; i++) {
      const body = JSON.stringify({
        version: '4',
        status: 'firing',
        receiver: 'baremetal',
        alerts: [
          {
            status: 'firing',
            labels: { alertname: rule.alertname, server_id: ids[i] },
            annotations: {},
            startsAt,
            endsAt: '0001-01-01T00:00:00Z',
            fingerprint: `ha${String(i).padStart(14, '0')}`,
          },
        ],
      });
      const t0 = performance.now();
      const res = await request(`${daemon.url}/api/v1/alertmanager`, {
        method: 'POST',
        headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
        body,
      });
      const reply = (await res.body.json()) as { results?: Array<{ decision: string }> };
      times.push(performance.now() - t0);
      if (reply.results?.[0]?.decision !== 'executed')
        throw new Error(`bench: delivery ${i} was ${JSON.stringify(reply)}, not executed`);
    }
    if (sim.callsTo('/api/v1/dedicated/powercycle').length !== deliveries)
      throw new Error('bench: the simulator did not receive one power cycle per delivery');
    return times;
  } finally {
    await daemon.stop();
    await sim.close();
  }
}

/** SIGKILL of the leader of two CLI processes on `db`, `runs` times; ms until the other reports leader 1. */
async function failover(dir: string, db: TestPostgres, runs: number): Promise<number[]> {
  if (!existsSync(CLI)) throw new Error(`bench: ${CLI} is missing (npm run build)`);
  const sim = await startSimulator({ apiKey: KEY, servers: 50, attackRate: 0, faults: { latencyMs: 5 } });
  writeFileSync(join(dir, 'database-url'), `${db.url}\n`);
  const replicas: Array<{ base: string; file: string; child?: ReturnType<typeof spawn> }> = [];
  for (const name of ['a', 'b']) {
    const port = await freePort();
    const file = join(dir, `${name}.yml`);
    writeFileSync(
      file,
      `upstream: { base_url: "${sim.url}", max_requests_per_second: 1000 }
web: { listen_address: "127.0.0.1:${port}" }
state_dir: ${join(dir, `failover-${name}`)}
database: { url_file: ${join(dir, 'database-url')} }
log_level: error
schedules: { servers: "*/5 * * * * *", firewall: "*/2 * * * * *", graphs: "0 0 0 * * *", catalog: "0 0 0 * * *" }
`,
    );
    replicas.push({ base: `http://127.0.0.1:${port}`, file });
  }
  const start = (r: (typeof replicas)[number]) => {
    r.child = spawn(process.execPath, [CLI, 'run', '--config', r.file], {
      env: { ...process.env, BAREMETAL_API_KEY: KEY },
      stdio: 'ignore',
    });
  };
  const leaderValue = async (r: (typeof replicas)[number]) => {
    const text = await (await request(`${r.base}/metrics`)).body.text();
    return /^baremetal_leader 1$/m.test(text) ? 1 : /^baremetal_leader 0$/m.test(text) ? 0 : undefined;
  };
  const times: number[] = [];
  try {
    for (const r of replicas) start(r);
    for (let run = 0; run < runs; run++) {
      let leader: (typeof replicas)[number] | undefined;
      await until(
        'one leader and one follower',
        async () => {
          const values = await Promise.all(replicas.map(leaderValue));
          leader = replicas[values.indexOf(1)];
          return values.filter((v) => v === 1).length === 1 && values.filter((v) => v === 0).length === 1;
        },
        60_000,
        100,
      );
      const follower = replicas.find((r) => r !== leader)!;
      const exited = new Promise((resolve) => leader!.child!.once('exit', resolve));
      const t0 = performance.now();
      leader!.child!.kill('SIGKILL');
      await exited;
      await until('the follower to lead', async () => (await leaderValue(follower)) === 1, 60_000, 20);
      times.push(performance.now() - t0);
      start(leader!);
    }
    return times;
  } finally {
    for (const r of replicas) r.child?.kill('SIGKILL');
    await sim.close();
  }
}

/** Runs the HA measures; PostgreSQL rows are skipped (with the reason) when Debian's postgresql is absent. */
export async function measureHa(options: { deliveries?: number; failovers?: number } = {}): Promise<HaBench> {
  const deliveries = options.deliveries ?? 200;
  const dir = mkdtempSync(join(tmpdir(), 'bmx-bench-ha-'));
  const result: HaBench = { latency: [], failoverMs: [] };
  const summary = (backend: 'sqlite' | 'postgres', times: number[]) => {
    const sorted = [...times].sort((a, b) => a - b);
    return { backend, p50: percentile(sorted, 50), p95: percentile(sorted, 95), max: sorted.at(-1)!, n: sorted.length };
  };
  try {
    result.latency.push(summary('sqlite', await webhookLatency(dir, deliveries, undefined)));
    if (!existsSync(join(postgresBinDir(), 'initdb'))) {
      result.skipped = `PostgreSQL rows not measured: install Debian's postgresql (${postgresBinDir()}/initdb missing)`;
      return result;
    }
    const db = await startPostgres(postgresBinDir());
    try {
      result.latency.push(
        summary('postgres', await webhookLatency(dir, deliveries, db.createDatabase('bench_latency'))),
      );
      result.failoverMs = await failover(dir, db, options.failovers ?? 3);
    } finally {
      db.stop();
    }
    return result;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The goal-table rows (bench/options.ts `Row`): webhook → call p95 per backend, and the worst failover. */
export function haRows(ha: HaBench): Row[] {
  const rows: Row[] = ha.latency.map((l) => ({
    what: `webhook → upstream call p95, ${l.backend === 'sqlite' ? 'SQLite' : 'PostgreSQL'}`,
    measured: l.p95,
    unit: 'ms',
    reference: `p50 ${l.p50.toFixed(2)} ms, max ${l.max.toFixed(1)} ms, ${l.n} deliveries one after another (round trip: the receiver answers after the call and its journal row)`,
    target: 50,
    rule: '≤ 50 ms',
  }));
  if (ha.failoverMs.length > 0)
    rows.push({
      what: 'HA failover: SIGKILL of the leader → the follower leads',
      measured: Math.max(...ha.failoverMs),
      unit: 'ms',
      reference: `${ha.failoverMs.length} runs: ${ha.failoverMs.map((t) => `${(t / 1000).toFixed(2)} s`).join(', ')} (followers retry the lock every 5 s)`,
      target: 15_000,
      rule: '≤ 15 s',
    });
  return rows;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: { deliveries: { type: 'string', default: '200' }, failovers: { type: 'string', default: '3' } },
  });
  const ha = await measureHa({ deliveries: Number(values.deliveries), failovers: Number(values.failovers) });
  console.log('| measure | measured | compared with | target | result |\n|---|---|---|---|---|');
  for (const row of haRows(ha))
    console.log(
      `| ${row.what} | ${row.measured.toFixed(0)} ${row.unit} | ${row.reference} | ${row.rule} | ${row.measured <= row.target ? 'PASS' : 'MISS'} |`,
    );
  if (ha.skipped) console.log(ha.skipped);
}
