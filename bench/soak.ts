/**
 * `npm run soak` (issue 32): the daemon as shipped — compiled dist/, the launcher's Node flags and the image's
 * allocator with its settings (bench/shipped.ts),
 * jemalloc preloaded when Debian's libjemalloc2 is installed — run for `--minutes` against the simulator
 * (in this process) with compressed schedules (firewall every 2 s, servers every 5 s, graphs every 30 s,
 * `ip_retention: 2m`, `journal_retention: 10m`, `retire_after: 2m`) and churn every minute (src/simulator/churn.ts: servers
 * added and removed, IPs moved, attacks started and ended on ~3 % of IPs, with Alertmanager webhooks firing
 * and resolved for them in dry run), 1 % of replies failing, and a reload (SIGHUP) every 2 minutes.
 * Every 30 s it samples RSS, the live heap after a forced GC (through the inspector: `--inspect` on
 * loopback, the soak only), open descriptors, the series, and the state database's size; then prints the
 * table and the goals (bench/soak-goals.ts), draws the chart, and exits 1 when a goal is missed.
 *
 *   node bench/soak.ts [--minutes 60] [--database postgres://…] [--servers 40] [--chart bench/soak.png]
 *                      [--out soak.json]
 *
 * Wall-clock alignment: graphs run at :00 and :30, the churn at :15, samples at :10 and :40 — so a sample
 * sees the servers and firewall polls after the churn (5 s and 2 s) and a graphs poll after them.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createWriteStream, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import { parseArgs } from 'node:util';
import pg from 'pg';
import { configKeys } from '../dist/config/reference.js';
import { Churn, type ChurnStep } from '../dist/simulator/churn.js';
import { startSimulator } from '../dist/simulator/server.js';
import { freePort } from '../test/helpers/free-port.ts';
import { SHIPPED_NODE_FLAGS, shippedAllocator } from './shipped.ts';
import { writeSoakChart } from './soak-chart.ts';
import { countSeries, evaluateSoak, expectedSeries, type SoakSample, soakPlan } from './soak-goals.ts';
import { Inspector } from './soak-inspector.ts';

const { values } = parseArgs({
  options: {
    minutes: { type: 'string', default: '60' },
    database: { type: 'string' },
    servers: { type: 'string', default: '40' },
    chart: { type: 'string' },
    out: { type: 'string' },
  },
});
const minutes = Number(values.minutes);
const { warmupS } = soakPlan(minutes);
const servers = Number(values.servers);
if (!Number.isInteger(servers) || servers < 2)
  throw new Error(`--servers: expected an integer ≥ 2, got ${values.servers}`);
const backend = values.database ? 'postgres' : 'sqlite';
const KEY = 'soak-key';
const TOKEN = 'soak-token-0123456789abcdef';
const IP_RETENTION_S = 120;
/** Desired firewall state of a server gone, or of an IP moved away, is retired after this long (as ip_retention). */
const RETIRE_AFTER_S = 120;
/** The journal retention: 10 min, or the warm-up (a sixth of the run) when that is shorter. */
const journalRetentionS = Math.min(600, warmupS);

const sim = await startSimulator({
  apiKey: KEY,
  servers,
  ipsPerServer: 2,
  colocations: 1,
  transits: 1,
  // 1 % of replies fail: half a 500 with the contract's error, half a proxy's HTML 502.
  faults: { latencyMs: 5, errorRate: 0.005, htmlErrorRate: 0.005 },
});
const churn = new Churn(sim.state, { seed: 32 });
const dir = mkdtempSync(join(tmpdir(), `bmx-soak-${backend}-`));
const port = await freePort();
const base = `http://127.0.0.1:${port}`;
writeFileSync(join(dir, 'token'), `${TOKEN}\n`);
if (values.database) writeFileSync(join(dir, 'database-url'), `${values.database}\n`);
const configFile = join(dir, 'config.yml');

/** The daemon's config (JSON is YAML); `reload` only changes a comment line, so every reload is a success. */
function writeConfig(reload: number): void {
  const config = {
    upstream: { base_url: sim.url, max_requests_per_second: 100 },
    web: { listen_address: `127.0.0.1:${port}` },
    state_dir: join(dir, 'state'),
    ...(values.database ? { database: { url_file: join(dir, 'database-url') } } : {}),
    log_level: 'info',
    schedules: { servers: '*/5 * * * * *', firewall: '*/2 * * * * *', graphs: '*/30 * * * * *' },
    services: { colocation_ids: ['colo-1'], transit_ids: ['transit-1'] },
    firewall: { ip_retention: `${IP_RETENTION_S}s` },
    remediation: {
      dry_run: true,
      journal_retention: `${journalRetentionS}s`,
      retire_after: `${RETIRE_AFTER_S}s`,
      auth: { bearer_token_files: [join(dir, 'token')] },
      rules: [{ alertname: 'BaremetalIpUnderAttack', action: 'firewall_state' }],
    },
  };
  writeFileSync(configFile, `# soak reload ${reload}\n${JSON.stringify(config, null, 2)}\n`);
}
writeConfig(0);

const allocator = shippedAllocator();
const logFile = join(dir, 'daemon.log');
const log = createWriteStream(logFile);
const unhandled: string[] = [];
const daemon: ChildProcess = spawn(
  process.execPath,
  [...SHIPPED_NODE_FLAGS, '--inspect=127.0.0.1:0', 'dist/main.js', 'run', `--config.file=${configFile}`],
  { env: { ...process.env, ...allocator.env, BAREMETAL_API_KEY: KEY }, stdio: ['ignore', 'pipe', 'pipe'] },
);
let exited: string | undefined;
daemon.once('exit', (code, signal) => (exited = `exit ${code ?? signal}`));
let pending = '';
const scan = (chunk: Buffer) => {
  log.write(chunk);
  pending += String(chunk);
  const lines = pending.split('\n');
  pending = lines.pop()!;
  for (const line of lines) if (/level[=":]+fatal|unhandled|uncaught/i.test(line)) unhandled.push(line);
};
daemon.stdout!.on('data', scan);
daemon.stderr!.on('data', scan);
const inspector = await Inspector.fromStderr(daemon);

async function until(what: string, check: () => Promise<boolean>, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check().catch(() => false)) return;
    await new Promise((r) => setTimeout(r, 200));
  }
  throw new Error(`soak: timed out waiting for ${what}`);
}
await until('the daemon to be ready', async () => (await fetch(`${base}/readyz`)).status === 200);
const started = Date.now();
process.stderr.write(
  `soak: ${backend}, ${minutes} min, ${servers} servers, ${allocator.name}; daemon pid ${daemon.pid}, log ${logFile}\n`,
);

const db = values.database ? new pg.Client({ connectionString: values.database }) : undefined;
await db?.connect();
async function dbBytes(): Promise<number> {
  if (db) {
    const { rows } = await db.query(
      `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::bigint AS bytes FROM pg_class c
       JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = current_schema() AND c.relkind = 'r'`,
    );
    return Number(rows[0].bytes);
  }
  // SQLite: the pages in use (the WAL grows to its checkpoint size and is reused, which says nothing of growth).
  const journal = new DatabaseSync(join(dir, 'state', 'journal.db'), { readOnly: true });
  try {
    const pragma = (name: string) => Number(Object.values(journal.prepare(`PRAGMA ${name}`).get()!)[0]);
    return (pragma('page_count') - pragma('freelist_count')) * pragma('page_size');
  } finally {
    journal.close();
  }
}

/** Files under state_dir besides the journal: graph images and event-id files. */
function stateFiles(): number {
  return readdirSync(join(dir, 'state'), { recursive: true, withFileTypes: true }).filter(
    (e) => e.isFile() && !e.name.startsWith('journal.db'),
  ).length;
}

/** What the daemon should expose now, from the simulator's state. */
function expectedNow(): Record<string, number> {
  const dedicated = [...sim.state.servers.values()];
  const others = [...sim.state.services.values()].filter((s) => s.serviceType !== 'dedicated');
  const retained = others
    .flatMap((s) => s.ips)
    .filter((ip) => sim.state.eventsFor(ip, 3600 + IP_RETENTION_S).length > 0).length;
  return expectedSeries({
    serverIps: dedicated.map((s) => s.ips.length),
    services: others.length,
    retainedServiceIps: retained,
    graphsPerServer: 1,
  });
}

const samples: SoakSample[] = [];
async function sample(): Promise<void> {
  const expected = expectedNow();
  const heapBytes = await inspector.heapAfterGc();
  const text = await (await fetch(`${base}/metrics`)).text();
  const { total, families } = countSeries(text);
  const pollLastSuccess: Record<string, number> = {};
  for (const m of text.matchAll(/^baremetal_poll_last_success_timestamp_seconds\{[^}]*poll="([^"]+)"[^}]*\} (\S+)$/gm))
    pollLastSuccess[m[1]!] = Number(m[2]);
  const fds = readdirSync(`/proc/${daemon.pid}/fd`).length;
  const rss = Number(/^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${daemon.pid}/status`, 'utf8'))?.[1]);
  const s: SoakSample = {
    at: (Date.now() - started) / 1000,
    rssMb: rss / 1024,
    heapMb: heapBytes / 2 ** 20,
    fds,
    series: total,
    families: Object.fromEntries(Object.keys(expected).map((f) => [f, families.get(f) ?? 0])),
    expected,
    dbBytes: await dbBytes(),
    stateFiles: stateFiles(),
    pollLastSuccess,
  };
  samples.push(s);
  const seriesExpected = Object.values(expected).reduce((a, b) => a + b, 0);
  const seriesMeasured = Object.values(s.families).reduce((a, b) => a + b, 0);
  process.stderr.write(
    `soak: ${(s.at / 60).toFixed(1)} min  RSS ${s.rssMb.toFixed(0)} MB  heap ${s.heapMb.toFixed(1)} MB  fds ${s.fds}  series ${s.series} (inventory ${seriesMeasured}/${seriesExpected})  db ${(s.dbBytes / 1024).toFixed(0)} KiB  state files ${s.stateFiles}\n`,
  );
}

/** Webhooks for the attacks a churn step started (firing) and ended (resolved), as Alertmanager sends them. */
async function webhooks(step: ChurnStep): Promise<void> {
  const alert = (a: { ip: string; serverId: string }, status: 'firing' | 'resolved') => ({
    status,
    labels: { alertname: 'BaremetalIpUnderAttack', server_id: a.serverId, ip: a.ip, severity: 'critical' },
    annotations: {},
    startsAt: new Date(Date.now() - 60_000).toISOString(),
    endsAt: status === 'resolved' ? new Date().toISOString() : '0001-01-01T00:00:00Z',
    fingerprint: Buffer.from(a.ip).toString('hex').padStart(16, '0').slice(-16),
  });
  const batches = [
    { status: 'firing', alerts: step.attacksStarted.map((a) => alert(a, 'firing')) },
    { status: 'resolved', alerts: step.attacksEnded.map((a) => alert(a, 'resolved')) },
  ].filter((b) => b.alerts.length > 0);
  for (const batch of batches) {
    const res = await fetch(`${base}/api/v1/alertmanager`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ version: '4', receiver: 'baremetal', groupLabels: {}, commonLabels: {}, ...batch }),
    });
    if (res.status !== 200) process.stderr.write(`soak: webhook answered ${res.status}: ${await res.text()}\n`);
  }
}

let reloads = 0;
let churned = 0;
const alerts = { firing: 0, resolved: 0 };
let lastSecond = -1;
while (Date.now() - started < minutes * 60_000 && !exited) {
  await new Promise((r) => setTimeout(r, 250));
  const now = new Date();
  const second = now.getUTCSeconds();
  if (second === lastSecond) continue;
  lastSecond = second;
  if (second === 15) {
    const step = churn.step();
    churned++;
    await webhooks(step);
    alerts.firing += step.attacksStarted.length;
    alerts.resolved += step.attacksEnded.length;
  }
  if (second === 20 && now.getUTCMinutes() % 2 === 0) {
    writeConfig(++reloads);
    daemon.kill('SIGHUP');
  }
  if (second === 10 || second === 40) await sample();
}

const text = exited ? '' : await (await fetch(`${base}/metrics`)).text();
const reloadOk = /^baremetal_config_last_reload_successful 1$/m.test(text);
const intervals = [...text.matchAll(/^baremetal_poll_interval_seconds\{[^}]*poll="([^"]+)"[^}]*\} (\S+)$/gm)];
const pollsChecked = intervals.filter((m) => Number(m[2]) <= 30).map((m) => m[1]!);
inspector.close();
daemon.kill('SIGTERM');
await new Promise((r) => (exited ? r(undefined) : daemon.once('exit', r)));
await db?.end();
await sim.close();
log.end();
if (exited && !exited.startsWith('exit 0')) unhandled.push(`the daemon exited early: ${exited}`);
// The soak's config leaves upstream.concurrency at its default: the most sockets the pool may add in a burst.
const upstreamSockets = Number(configKeys().find((k) => k.key === 'upstream.concurrency')?.default);
const goals = evaluateSoak(samples, minutes, { pollsChecked, unhandled, upstreamSockets });
goals.push({
  what: 'config reloads (SIGHUP every 2 min)',
  measured: `${reloads} sent; last successful: ${reloadOk}`,
  rule: 'every reload succeeds',
  pass: reloadOk,
});

const header = `baremetal-exporter soak — ${backend}, ${minutes} min (warm-up ${(warmupS / 60).toFixed(1)} min), ${servers} servers × 2 IPs + 1 colocation + 1 transit, ${churned} churn steps, ${alerts.firing} alerts fired and ${alerts.resolved} resolved (dry run), ${reloads} reloads, ${allocator.settings}, node ${SHIPPED_NODE_FLAGS.join(' ')}, ${process.version}`;
console.log(`\n${header}\n`);
console.log('| min | RSS MB | heap MB | fds | series | inventory series (expected) | DB KiB | state files |');
console.log('|---|---|---|---|---|---|---|---|');
for (const s of samples) {
  const sum = (r: Record<string, number>) => Object.values(r).reduce((a, b) => a + b, 0);
  console.log(
    `| ${(s.at / 60).toFixed(1)} | ${s.rssMb.toFixed(0)} | ${s.heapMb.toFixed(1)} | ${s.fds} | ${s.series} | ${sum(s.families)} (${sum(s.expected)}) | ${(s.dbBytes / 1024).toFixed(0)} | ${s.stateFiles} |`,
  );
}
console.log('\n| goal | measured | rule | result |\n|---|---|---|---|');
for (const g of goals) console.log(`| ${g.what} | ${g.measured} | ${g.rule} | ${g.pass ? 'PASS' : 'MISS'} |`);
if (values.out) writeFileSync(values.out, JSON.stringify({ header, samples, goals }, null, 1));
const chart = values.chart ?? `bench/soak-${backend}.png`;
await writeSoakChart(chart, samples, warmupS, header);
console.log(`\nchart: ${chart}; daemon log: ${logFile}`);
if (goals.every((g) => g.pass)) rmSync(join(dir, 'state'), { recursive: true, force: true });
process.exit(goals.every((g) => g.pass) ? 0 : 1);
