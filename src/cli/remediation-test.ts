/**
 * `baremetal-exporter remediation test FILE…`: runs each test file (remediation-test-file.ts) through the real
 * rules, engine and guards, on an in-memory SQLite store, with a fake clock, a server directory built from the
 * file's world and a recorder in place of the API (nothing leaves the process). At each step of the timeline
 * the clock moves to `at`, due pending firewall changes are applied (and requests past approval_timeout
 * expire), the step's alerts are delivered or its operator step is run (remediation-test-steps.ts), and the
 * requests it settled and the journal rows it wrote (and the upstream calls, when the step lists them) are
 * compared with what it expects. Exit 0 when every file passes, 1 with a diff when one does not, 2 when one is
 * missing or malformed.
 */
import { createHash } from 'node:crypto';
import { parseArgs } from 'node:util';
import { buildConfig } from '../config/load.js';
import type { RemediationRule } from '../config/types.js';
import type { AlertmanagerAlert, AlertmanagerSilence, NewSilence } from '../alertmanager/client.js';
import { AlertmanagerError, BaremetalError, ConflictError } from '../errors.js';
import { offlineEngine } from './offline-engine.js';
import { expiryTime, operatorStep, StepRefused } from './remediation-test-steps.js';
import { matches, requestsFor, resolvedEpisodes } from '../remediation/rules.js';
import type { AttackState, TargetDirectory } from '../remediation/types.js';
import type { WebhookAlert, WebhookBody } from '../remediation/webhook.js';
import type { JournalEntry } from '../store/rows.js';
import {
  type ExpectedCall,
  type ExpectedRow,
  readTestFile,
  type ShortAlert,
  type TestFile,
  TestFileError,
} from './remediation-test-file.js';

/** The fake clock's start: the timeline's `at: 0s`. */
const START = Date.UTC(2026, 0, 1);
const ACCOUNT = 'default';
/** The webhook principal the timeline's deliveries come from. */
const TEST_PRINCIPAL = 'alertmanager';

/** The file's servers as the engine's directory: attack state always fresh, events up to `now()`. */
function worldDirectory(file: TestFile, now: () => number): TargetDirectory {
  const servers = new Map(file.servers.map((s) => [s.id, s]));
  return {
    serversKnown: true,
    hasServer: (id) => servers.has(id),
    ownsIp: (id, ip) => servers.get(id)?.ips.includes(ip) ?? false,
    serversInScope: () => servers.size,
    attackState: (id): AttackState => {
      const lastEventAt = new Map<string, number>();
      for (const a of servers.get(id)?.attacks ?? []) {
        const at = START + a.at;
        if (at <= now() && at >= (lastEventAt.get(a.ip) ?? 0)) lastEventAt.set(a.ip, at);
      }
      return { known: true, readAt: now(), lastEventAt };
    },
  };
}

/** A test alert's fingerprint: from its labels, as in a delivery so in the stated Alertmanager (16 hex digits). */
const fingerprintOf = (labels: Record<string, string>) =>
  createHash('sha256')
    .update(JSON.stringify(Object.entries(labels).sort()))
    .digest('hex')
    .slice(0, 16);

/** Alertmanager's alert for a short form: the fingerprint from its labels, `startsAt` its episode's start. */
function toAlert(short: ShortAlert, episodes: Map<string, string>, now: number): WebhookAlert {
  const labels = { ...short.labels, alertname: short.alertname };
  const fingerprint = fingerprintOf(labels);
  const startsAt = episodes.get(fingerprint) ?? new Date(now).toISOString();
  if (short.status === 'firing') episodes.set(fingerprint, startsAt);
  else episodes.delete(fingerprint);
  return { status: short.status, labels, startsAt, fingerprint };
}

/** The journal row's fields an expectation names (and its message), for comparison and the diff. */
const shown = (row: JournalEntry, keys: readonly string[]) => {
  const all: Record<string, unknown> = {
    action: row.action,
    server_id: row.serverId,
    ip: row.ip,
    decision: row.decision,
    source: row.source,
    principal: row.principal,
    approver: row.approver,
    verification: row.verification,
  };
  return Object.fromEntries(keys.map((k) => [k, all[k]]));
};

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** What one file gave: its failures (each a few lines of diff) and its warnings (one line each). */
export interface TestResult {
  failures: string[];
  /** a rule that matches no alert of the file: its rows can never be tested there */
  warnings: string[];
}

/** Runs one file. Throws TestFileError, ConfigError. */
export async function runTestFile(file: TestFile): Promise<TestResult> {
  const config = buildConfig(
    {
      upstream: { base_url: 'http://127.0.0.1:9', api_key: 'remediation-test-key' },
      remediation: { ...file.config.remediation, auth: {} },
      ...(file.config.schedules ? { schedules: file.config.schedules } : {}),
    },
    {},
  );
  const clock = { now: START };
  const alertmanager = file.timeline.some((s) => s.alertmanager !== undefined) ? statedAlertmanager(START) : undefined;
  const { engine, store, client, close } = await offlineEngine(
    config,
    ACCOUNT,
    worldDirectory(file, () => clock.now),
    () => clock.now,
    alertmanager,
  );
  const failures: string[] = [];
  const episodes = new Map<string, string>();
  const delivered: WebhookAlert[] = [];
  let lastId = 0;
  let calls = 0;
  try {
    for (const step of file.timeline) {
      const where = `${file.path}:${step.line}: at ${step.at}`;
      const deps = { engine, store, account: ACCOUNT };
      // An `expire` step moved the clock past this step's `at`: the clock never goes back.
      if (START + step.atMs < clock.now)
        failures.push(`${where}: before ${new Date(clock.now).toISOString()}, where the expiry moved the clock`);
      else clock.now = START + step.atMs;
      if (step.expire) clock.now = await expiryTime(deps, config.remediation.approvalTimeoutMs, clock.now);
      if (step.alertmanager !== undefined) alertmanager!.state(step.alertmanager, clock.now);
      // Requests awaiting approval and actions verifying: the step may settle them (approval, time, resolution).
      const awaiting = [...(await store.awaitingApproval(ACCOUNT)), ...(await store.verifying(ACCOUNT))];
      await engine.tick();
      const body: WebhookBody | undefined =
        step.payload ??
        (step.alert || step.alerts
          ? {
              version: '4',
              status: 'firing',
              alerts: (step.alerts ?? [step.alert!]).map((a) => toAlert(a, episodes, clock.now)),
            }
          : undefined);
      const alerts = body?.alerts ?? [];
      delivered.push(...alerts);
      for (const [i, alert] of alerts.entries()) {
        // As the webhook route: a resolved episode verifies the actions taken on it.
        if (alert.status === 'resolved')
          for (const episode of resolvedEpisodes(alert, config.remediation.rules, [ACCOUNT]))
            await engine.alertResolved(episode, TEST_PRINCIPAL);
        for (const req of requestsFor(alert, i, config.remediation.rules, [ACCOUNT], TEST_PRINCIPAL))
          await engine.request(req);
      }
      failures.push(...(await runOperatorStep(where, step, deps)));
      // The requests settled by this step (approved, denied, withdrawn, expired; verified, ineffective), then
      // the rows it wrote.
      const settled: JournalEntry[] = [];
      for (const row of awaiting) {
        const now = await store.get(row.id);
        if (now && now.decision !== row.decision) settled.push(now);
        else if (now && now.verification !== row.verification) settled.push(now);
      }
      const written = (await store.list({ account: ACCOUNT, limit: 100_000 })).filter((r) => r.id > lastId).reverse();
      lastId = Math.max(lastId, ...written.map((r) => r.id));
      const rows = [...settled, ...written];
      const matched = alerts.some((a) => config.remediation.rules.some((rule) => matches(rule, a)));
      const note = alerts.length > 0 && !matched ? 'no rule matches the alerts of this step' : undefined;
      failures.push(...compareRows(where, step.expect, rows, note));
      const made = client.calls.slice(calls);
      calls = client.calls.length;
      if (step.calls) failures.push(...compareCalls(where, step.calls, made));
    }
  } finally {
    await close();
  }
  const warnings = config.remediation.rules.flatMap((rule, i) =>
    delivered.some((a) => matches(rule, a))
      ? []
      : [`${file.path}: warning: rule ${i + 1} (${ruleName(rule)}) matches no alert of the file`],
  );
  return { failures, warnings };
}

/** A rule as its file shows it: `BaremetalServerUnreachable{env="prod"} → powercycle`. */
function ruleName(rule: RemediationRule): string {
  const matchers = Object.entries(rule.matchers).map(([k, v]) => `${k}=${JSON.stringify(v)}`);
  return `${rule.alertname}${matchers.length > 0 ? `{${matchers.join(',')}}` : ''} → ${rule.action}`;
}

/** Runs the step's operator part; a refusal is a failure unless the step expects it (`error`). */
async function runOperatorStep(
  where: string,
  step: TestFile['timeline'][number],
  deps: Parameters<typeof operatorStep>[1],
): Promise<string[]> {
  let refused: string | undefined;
  try {
    await operatorStep(step, deps);
  } catch (error) {
    if (!(error instanceof StepRefused || error instanceof ConflictError)) throw error;
    refused = error.message;
  }
  if (step.error === undefined) return refused === undefined ? [] : [`${where}: refused: ${refused}`];
  if (refused === undefined)
    return [`${where}: expected a refusal containing ${JSON.stringify(step.error)}, none came`];
  if (!refused.includes(step.error))
    return [`${where}: refusal differs\n  - ${JSON.stringify(step.error)}\n  + ${JSON.stringify(refused)}`];
  return [];
}

function compareRows(where: string, expected: ExpectedRow[], rows: JournalEntry[], note?: string): string[] {
  const keys = (e: ExpectedRow | undefined) => (e ? Object.keys(e) : ['action', 'server_id', 'decision']);
  const ok = expected.length === rows.length && expected.every((e, i) => same(e, shown(rows[i]!, keys(e))));
  if (ok) return [];
  const lines = [`${where}: journal rows differ${note ? ` (${note})` : ''}`];
  for (const e of expected) lines.push(`  - ${JSON.stringify(e)}`);
  rows.forEach((r, i) => {
    lines.push(`  + ${JSON.stringify({ ...shown(r, keys(expected[i])), message: r.message })}`);
  });
  return [lines.join('\n')];
}

function compareCalls(where: string, expected: ExpectedCall[], made: Array<Record<string, string>>): string[] {
  const pick = (c: Record<string, string>, e: ExpectedCall | undefined) =>
    Object.fromEntries(Object.keys(e ?? c).map((k) => [k, c[k]]));
  if (expected.length === made.length && expected.every((e, i) => same(e, pick(made[i]!, e)))) return [];
  const lines = [`${where}: upstream calls differ`];
  for (const e of expected) lines.push(`  - ${JSON.stringify(e)}`);
  made.forEach((c, i) => {
    lines.push(`  + ${JSON.stringify(pick(c, expected[i]))}`);
  });
  return [lines.join('\n')];
}

/** `remediation test FILE…`: the exit code (0 pass, 1 a mismatch, 2 a malformed file). */
export async function runRemediationTest(
  args: string[],
  out: NodeJS.WritableStream = process.stdout,
  err: NodeJS.WritableStream = process.stderr,
): Promise<number> {
  // Strict: an option (`--verbose`) is a usage error, not a file name.
  const files = parseArgs({ args, allowPositionals: true, options: {} }).positionals;
  if (files.length === 0) throw new BaremetalError('remediation test: at least one FILE expected');
  let code = 0;
  for (const path of files) {
    try {
      const { failures, warnings } = await runTestFile(await readTestFile(path));
      for (const warning of warnings) out.write(`${warning}\n`);
      if (failures.length === 0) out.write(`${path}: SUCCESS\n`);
      else {
        out.write(`${path}: FAILED\n${failures.join('\n')}\n`);
        code = Math.max(code, 1);
      }
    } catch (error) {
      if (!(error instanceof BaremetalError)) throw error;
      const message = error instanceof TestFileError ? error.message : `${path}: ${error.message}`;
      err.write(`${message}\n`);
      code = 2;
    }
  }
  return code;
}

/**
 * The Alertmanager of a test file that states its alerts (`alertmanager:` on a step): it holds the alerts the
 * latest such step listed (none stated yet: it cannot be read, as a daemon without one), up since the test
 * began; the silences written to it are kept and listed.
 */
function statedAlertmanager(startedAt: number) {
  let held: AlertmanagerAlert[] | undefined;
  const silences = new Map<string, AlertmanagerSilence>();
  return {
    /** From now on Alertmanager holds `alerts` (active, firing since `now`). */
    state(alerts: ReadonlyArray<{ alertname: string; labels: Record<string, string> }>, now: number): void {
      held = alerts.map((a) => {
        const labels = { ...a.labels, alertname: a.alertname };
        // As toAlert spells it: the same alert has the same fingerprint in a delivery and in Alertmanager.
        const fingerprint = fingerprintOf(labels);
        const startsAt = held?.find((h) => h.fingerprint === fingerprint)?.startsAt ?? new Date(now).toISOString();
        return { fingerprint, labels, startsAt, state: 'active', silencedBy: [] };
      });
    },
    async alerts(): Promise<AlertmanagerAlert[]> {
      if (held === undefined) throw new AlertmanagerError('no alerts stated yet (alertmanager: on a step)');
      return held;
    },
    async status() {
      return { startedAt };
    },
    async silences() {
      return [...silences.values()];
    },
    async createSilence(silence: NewSilence) {
      const id = `silence-${silences.size + 1}`;
      silences.set(id, { id, state: 'active', createdBy: silence.createdBy, comment: silence.comment });
      return id;
    },
    async expireSilence(id: string) {
      const s = silences.get(id);
      if (s) silences.set(id, { ...s, state: 'expired' });
    },
  };
}
