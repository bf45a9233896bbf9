/**
 * `baremetal-exporter remediation replay --config.file NEW.yml [--since 7d]`: the alert deliveries the state
 * store recorded (SQLite under NEW.yml's `state_dir`, or its PostgreSQL `database.url`) decided again under
 * NEW.yml's remediation block, in the order they came, by the real engine and guards on an in-memory journal
 * with a fake clock at each delivery's time and a recorder in place of the API: no upstream call, nothing
 * written to the store. Prints, per delivery, the decision made then and the one NEW.yml makes, then counts.
 *
 * What replay knows of the world comes from the journal alone: the servers (and their IPs) of the rows not
 * denied as unknown targets then, and as attack evidence the firewall-state (1) and sensitivity requests of
 * the recorded alerts at their times; the firewall histories themselves are not in the journal. Rows written
 * before labels were kept (or with labels beyond the bound) are listed as not replayable.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig, parseDuration } from '../config/load.js';
import type { Config } from '../config/types.js';
import { BaremetalError } from '../errors.js';
import { createLogger } from '../logger.js';
import { requestsFor } from '../remediation/rules.js';
import type { AttackState, TargetDirectory } from '../remediation/types.js';
import type { WebhookAlert } from '../remediation/webhook.js';
import { openStore } from '../store/open.js';
import { DEFAULT_POOL_LIMITS } from '../store/postgres/pool.js';
import type { JournalEntry } from '../store/rows.js';
import type { StateStore } from '../store/store.js';
import { offlineEngine, type OfflineEngine } from './offline-engine.js';

/** Rows read at most (newest first, then those within `--since`). */
const MAX_ROWS = 200_000;
/** The principal a delivery is decided again under when its row names none (written before principals). */
const REPLAY_PRINCIPAL = 'replay';

/** One recorded delivery: the rows one alert delivery wrote (one per matching rule). */
interface Delivery {
  rows: JournalEntry[];
  alert: WebhookAlert | undefined;
}

/** The world as the journal saw it, for one account, at the fake clock `now()`. */
function journalDirectory(rows: JournalEntry[], now: () => number): TargetDirectory {
  const servers = new Map<string, Set<string>>();
  const attacks: Array<{ serverId: string; ip: string; at: number }> = [];
  for (const r of rows) {
    if (r.decision === 'denied_unknown_target') continue;
    const ips = servers.get(r.serverId) ?? new Set<string>();
    if (r.ip !== null) ips.add(r.ip);
    servers.set(r.serverId, ips);
    const attacked = (r.action === 'firewall_state' && r.value === '1') || r.action === 'firewall_sensitivity';
    if (attacked && r.source === 'alert' && r.ip !== null)
      attacks.push({ serverId: r.serverId, ip: r.ip, at: r.createdAt });
  }
  return {
    serversKnown: true,
    hasServer: (id) => servers.has(id),
    ownsIp: (id, ip) => servers.get(id)?.has(ip) ?? false,
    serversInScope: () => servers.size,
    attackState: (id): AttackState => {
      const lastEventAt = new Map<string, number>();
      for (const a of attacks)
        if (a.serverId === id && a.at <= now() && a.at >= (lastEventAt.get(a.ip) ?? 0)) lastEventAt.set(a.ip, a.at);
      return { known: true, readAt: now(), lastEventAt };
    },
  };
}

/** Groups alert rows (oldest first) into deliveries: one alert's rows written within a second. */
function deliveries(rows: JournalEntry[]): Delivery[] {
  const out: Delivery[] = [];
  for (const row of rows) {
    const last = out.at(-1)?.rows[0];
    const same =
      last !== undefined &&
      last.fingerprint === row.fingerprint &&
      last.startsAt === row.startsAt &&
      last.alertStatus === row.alertStatus &&
      row.createdAt - last.createdAt < 1000;
    if (same) {
      out.at(-1)!.rows.push(row);
      continue;
    }
    const labels = row.labels === null ? undefined : (JSON.parse(row.labels) as Record<string, string>);
    const alert =
      labels && row.alertStatus && row.fingerprint && row.startsAt && typeof labels.alertname === 'string'
        ? ({ status: row.alertStatus, labels, fingerprint: row.fingerprint, startsAt: row.startsAt } as WebhookAlert)
        : undefined;
    out.push({ rows: [row], alert });
  }
  return out;
}

/** The recorded alert rows of the store since `since` (ms), oldest first. */
async function recordedRows(store: StateStore, since: number): Promise<JournalEntry[]> {
  const rows = await store.list({ limit: MAX_ROWS });
  return rows.filter((r) => r.source === 'alert' && r.createdAt >= since).reverse();
}

/** Replays `rows` under `config`; writes one line per delivery and the counts to `out`. */
export async function replay(
  config: Pick<Config, 'remediation' | 'schedules' | 'accounts'>,
  rows: JournalEntry[],
  out: NodeJS.WritableStream,
): Promise<{ same: number; changed: number; notReplayable: number }> {
  const clock = { now: 0 };
  const accounts = config.accounts.map((a) => a.name);
  const engines = new Map<string, OfflineEngine>();
  for (const account of accounts)
    engines.set(
      account,
      await offlineEngine(
        config,
        account,
        journalDirectory(
          rows.filter((r) => r.account === account),
          () => clock.now,
        ),
        () => clock.now,
      ),
    );
  const counts = { same: 0, changed: 0, notReplayable: 0 };
  const transitions = new Map<string, number>();
  try {
    for (const d of deliveries(rows)) {
      const first = d.rows[0]!;
      const when = new Date(first.createdAt).toISOString();
      const then = d.rows.map((r) => `${r.action}: ${r.decision}`).join(', ');
      const target = `server ${first.serverId}${first.ip ? ` ip ${first.ip}` : ''}`;
      if (!d.alert) {
        counts.notReplayable++;
        out.write(
          `${when} ${first.alertname} ${target} (journal ${first.id}): ${then}; not replayable (no labels kept)\n`,
        );
        continue;
      }
      clock.now = first.createdAt;
      const now: string[] = [];
      for (const e of engines.values()) await e.engine.tick();
      try {
        for (const req of requestsFor(
          d.alert,
          0,
          config.remediation.rules,
          accounts,
          first.principal ?? REPLAY_PRINCIPAL,
        )) {
          const decided = await engines.get(req.account)!.engine.request(req);
          now.push(`${req.action}: ${decided.decision}`);
        }
      } catch (error) {
        now.push(`refused: ${(error as Error).message}`);
      }
      const nowText = now.length > 0 ? now.join(', ') : 'no rule matches';
      const changed = nowText !== then;
      counts[changed ? 'changed' : 'same']++;
      if (changed) transitions.set(`${then} -> ${nowText}`, (transitions.get(`${then} -> ${nowText}`) ?? 0) + 1);
      out.write(
        `${when} ${first.alertname} ${d.alert.status} ${target}: then ${then}; now ${nowText}${changed ? '  (changed)' : ''}\n`,
      );
    }
  } finally {
    for (const e of engines.values()) await e.close();
  }
  out.write(
    `\n${counts.same + counts.changed + counts.notReplayable} deliveries: ${counts.same} same, ${counts.changed} changed, ${counts.notReplayable} not replayable\n`,
  );
  for (const [transition, n] of [...transitions].sort((a, b) => b[1] - a[1])) out.write(`  ${n}× ${transition}\n`);
  return counts;
}

/** `remediation replay --config.file NEW.yml [--since 7d]`; returns the exit code. */
export async function runRemediationReplay(
  args: string[],
  out: NodeJS.WritableStream = process.stdout,
  now: () => number = Date.now,
): Promise<number> {
  const { values } = parseArgs({
    args,
    options: { 'config.file': { type: 'string' }, config: { type: 'string' }, since: { type: 'string' } },
  });
  const file = values['config.file'] ?? values.config;
  if (!file) throw new BaremetalError('remediation replay: --config.file NEW.yml expected');
  const sinceMs = parseDuration(values.since ?? '7d');
  if (sinceMs === undefined)
    throw new BaremetalError(`remediation replay: --since must be a duration such as 7d (got ${values.since})`);
  const config = await loadConfig(file);
  if (config.database.kind === 'sqlite' && !existsSync(join(config.stateDir, 'journal.db')))
    throw new BaremetalError(`remediation replay: no journal at ${join(config.stateDir, 'journal.db')}`);
  const store = await openStore(config, { logger: createLogger('silent'), postgres: { limits: { max: 2 } } });
  let rows: JournalEntry[];
  let timer: NodeJS.Timeout | undefined;
  // PostgreSQL is retried until it answers: wait for its first attempt, no longer.
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), DEFAULT_POOL_LIMITS.connectTimeoutMs + 1_000);
  });
  try {
    if (!(await Promise.race([store.opened, timeout]).finally(() => clearTimeout(timer))))
      throw new BaremetalError(`remediation replay: the state store is unavailable: ${store.unavailable ?? ''}`);
    rows = await recordedRows(store, now() - sinceMs);
  } finally {
    await store.close();
  }
  await replay(config, rows, out);
  return 0;
}
