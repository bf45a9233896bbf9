/**
 * `baremetal-exporter remediation replay --config.file NEW.yml [--since 7d] [-o json] [--exit-code]`: the history the state
 * store recorded (SQLite under NEW.yml's `state_dir`, or its PostgreSQL `database.url`) played again under
 * NEW.yml's remediation block, in the order it happened, by the real engine and guards on an in-memory journal
 * with a fake clock at each moment and a recorder in place of the API: no upstream call, nothing written to the
 * store. Prints, per alert delivery, the outcome then and the one NEW.yml makes, then counts.
 *
 * The history (replay-history.ts): the alert deliveries, decided again; the people's settlements of requests
 * that awaited approval (approved, denied, withdrawn), applied again at their moment when the new rules ask too
 * (an approval then runs through every guard again, as the daemon's does), and flagged apart when the new rules
 * would overturn them; the operator's and the `api` command's rows, replayed as recorded (a close of the breaker
 * closes it); and the breaker of each account as the store records it, open or closed at the start when it
 * opened or was closed before the first moment replayed. An expiry is the clock's: the engine expires what
 * nobody settled in time. What replay knows of the servers, their IPs and the attacks comes from the journal
 * alone (replay-history.ts `journalDirectory`); the rows before `--since` are not replayed.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs } from 'node:util';
import { loadConfig, parseDuration } from '../config/load.js';
import type { Config } from '../config/types.js';
import { BaremetalError, ConflictError } from '../errors.js';
import { createLogger } from '../logger.js';
import { requestsFor, resolvedEpisodes } from '../remediation/rules.js';
import { type GateReading, gateReading, replayedAlertList, replayedAlertmanager } from './replay-gate.js';
import { openStore } from '../store/open.js';
import { DEFAULT_POOL_LIMITS } from '../store/postgres/bounds.js';
import type { CircuitState, JournalEntry } from '../store/rows.js';
import type { StateStore } from '../store/store.js';
import { OUTPUT_FORMATS, type OutputFormat, render } from './api/output.js';
import { offlineEngine, type OfflineEngine } from './offline-engine.js';
import {
  type Delivery,
  executedBy,
  type HistoryEvent,
  history,
  isApprovalExecution,
  journalDirectory,
  ladderRows,
  type Outcome,
  recordedOutcome,
  sameEpisodeStep,
  type Settlement,
} from './replay-history.js';
import {
  outcomesText,
  overturned,
  type ReplayedDelivery,
  type ReplayedLadderRow,
  type ReplayReport,
  reportText,
} from './replay-report.js';

/** Rows read at most (the newest within `--since`). */
const MAX_ROWS = 200_000;
/** The principal a delivery is decided again under when its row names none (written before principals). */
const REPLAY_PRINCIPAL = 'replay';

/** What replay reads of the store: the rows within the window (oldest first) and each account's breaker. */
export interface Recorded {
  rows: JournalEntry[];
  circuits: ReadonlyMap<string, CircuitState>;
  /** the window: from (the first moment replayed) to (the end, when what nobody settled expires), ms */
  from: number;
  to: number;
}

/** What the replayed gate reads between the recorded decisions (replay-gate.ts `replayedAlertmanager`). */
const NO_READING: GateReading = { unknown: 'no recorded reading for this step' };

/** A request decided now: its outcome, and where its row is in the offline journal. */
interface Decided {
  outcome: Outcome;
  account: string;
  id: number;
  /** the row of its approval's execution, when it was approved again */
  executionId?: number;
}

const iso = (ms: number) => new Date(ms).toISOString();

/** The breaker of `account` as the store records it, at `from`: opened or closed before then. */
async function seedCircuit(e: OfflineEngine, account: string, c: CircuitState | undefined, from: number) {
  const steps: Array<[number, () => Promise<unknown>]> = [];
  if (c?.closedAt != null && c.closedAt < from)
    steps.push([c.closedAt, () => e.store.closeCircuit(account, c.closedAt!)]);
  if (c?.openedAt != null && c.openedAt < from)
    steps.push([c.openedAt, () => e.store.openCircuit(account, c.openedAt!, c.message ?? 'opened (recorded)')]);
  for (const [, step] of steps.sort((a, b) => a[0] - b[0])) await step();
}

/** Replays `recorded` under `config`; returns the report. */
export async function replay(
  config: Pick<Config, 'remediation' | 'schedules' | 'accounts'>,
  recorded: Recorded,
): Promise<ReplayReport> {
  const clock = { now: recorded.from };
  const accounts = config.accounts.map((a) => a.name);
  const engines = new Map<string, OfflineEngine>();
  // With an outage gate, each decision reads what the gate read when it was recorded (replay-gate.ts).
  const am = config.remediation.safety.blockWhileFiring.length > 0 ? replayedAlertmanager() : undefined;
  // The verifier reads the recorded evidence (replay-gate.ts `replayedAlertList`), at every replayed moment.
  const list = replayedAlertList(recorded.rows);
  for (const account of accounts) {
    const rows = recorded.rows.filter((r) => r.account === account);
    const e = await offlineEngine(
      config,
      account,
      journalDirectory(rows, () => clock.now),
      () => clock.now,
      am,
      { alertList: list, everyMs: 0 },
    );
    engines.set(account, e);
    await seedCircuit(e, account, recorded.circuits.get(account), recorded.from);
  }
  const { events, executions } = history(recorded.rows);
  const decided = new Map<number, Decided[] | { refused: string }>();
  // The rows replayed as recorded (`replayRow`), by account and offline id: none is a decision of the replay's.
  const copies = new Set<string>();
  const report: ReplayReport = {
    deliveries: [],
    operatorRows: [],
    ladder: [],
    counts: { same: 0, changed: 0, overturned: 0, notReplayable: 0 },
    ladderCounts: { same: 0, changed: 0 },
  };
  try {
    for (const ev of events) {
      clock.now = ev.at;
      if (ev.kind === 'deadline') {
        // The verifier settles it on what was recorded: `unknown` reads no Alertmanager status; a ladder that
        // climbs decides its next step on the gate reading that step's row recorded.
        if (am) am.reading = gateReading(ev.next);
        list.noEvidence = ev.row.verification === 'unknown';
      }
      for (const e of engines.values()) await e.engine.tick();
      list.noEvidence = false;
      if (ev.kind === 'step_settlement') {
        if (am) am.reading = gateReading(executions.filter((e) => executedBy(e, ev.row)));
        await settleStep(ev.row, engines.get(ev.row.account));
      } else if (ev.kind === 'delivery') {
        if (am) am.reading = gateReading(ev.delivery.rows);
        decided.set(ev.index, await decideAgain(ev.delivery, config, engines, accounts));
      } else if (ev.kind === 'settlement') {
        if (am) am.reading = gateReading(executions.filter((e) => executedBy(e, ev.row)));
        await settleAgain(ev, decided.get(ev.index), engines);
      } else if (ev.kind === 'operator') {
        const id = await replayRow(ev.row, engines.get(ev.row.account), report);
        if (id !== undefined) copies.add(`${ev.row.account} ${id}`);
      }
      // A reading is the recorded decision's it was set for: a later decision none was recorded for (a step
      // climbed at another event's tick under the new rules) reads none, as a daemon that cannot read Alertmanager.
      if (am) am.reading = NO_READING;
    }
    clock.now = Math.max(clock.now, recorded.to);
    for (const e of engines.values()) await e.engine.tick();
    for (const ev of events)
      if (ev.kind === 'delivery')
        report.deliveries.push(await compare(ev.delivery, decided.get(ev.index), executions, engines));
    report.ladder = await compareLadders(recorded.rows, engines, copies);
  } finally {
    for (const e of engines.values()) await e.close();
  }
  for (const d of report.deliveries) report.counts[d.verdict === 'not_replayable' ? 'notReplayable' : d.verdict]++;
  for (const l of report.ladder) report.ladderCounts[l.verdict]++;
  return report;
}

/** The replayed ladder row of the episode and step of `then` (a recorded ladder row), when one was written. */
const sameStep = (r: JournalEntry, then: JournalEntry) =>
  sameEpisodeStep(r, then) && (r.decision === 'escalated') === (then.decision === 'escalated');

/**
 * Who withdrew `then` (a recorded withdrawal): the operator it names as approver, else its requester
 * (remediation/approvals.ts `withdraw`).
 */
const withdrawer = (then: JournalEntry): string => then.approver ?? then.principal ?? REPLAY_PRINCIPAL;

/**
 * A person's settlement of a ladder step that awaited approval, applied again to the replayed step of the same
 * episode when it awaits too (the replayed ladder climbed as the recorded one did).
 */
async function settleStep(then: JournalEntry, e: OfflineEngine | undefined): Promise<void> {
  if (!e) return;
  const row = (await e.store.awaitingApproval(then.account)).find((r) => sameStep(r, then) && r.action === then.action);
  if (row === undefined) return;
  try {
    if (then.decision === 'approved')
      await e.engine.approve(row, then.approver ?? REPLAY_PRINCIPAL, then.approverReason ?? undefined);
    else if (then.decision === 'denied_by_approver')
      await e.engine.deny(row, then.approver ?? REPLAY_PRINCIPAL, then.approverReason ?? undefined);
    else await e.engine.withdraw(row, withdrawer(then), then.approverReason ?? undefined);
  } catch (error) {
    if (!(error instanceof ConflictError)) throw error;
  }
}

/**
 * The ladders as they climbed then and now: each recorded later step and escalation beside the replayed row of
 * the same episode and step (its decision, settlement, execution and verification), and each replayed one that
 * was not recorded. Not deliveries: a ladder's rows are what its verifications made of the deliveries.
 */
async function compareLadders(
  rows: readonly JournalEntry[],
  engines: Map<string, OfflineEngine>,
  copies: ReadonlySet<string>,
): Promise<ReplayedLadderRow[]> {
  const then = ladderRows(rows);
  const thenExecutions = rows.filter(isApprovalExecution);
  const now: JournalEntry[] = [];
  const nowExecutions: JournalEntry[] = [];
  for (const e of engines.values()) {
    const all = await e.store.list({ limit: MAX_ROWS });
    now.push(...ladderRows(all));
    // Only the executions the replay's own approvals ran: a recorded one replayed as recorded settles nothing.
    nowExecutions.push(...all.filter((r) => isApprovalExecution(r) && !copies.has(`${r.account} ${r.id}`)));
  }
  const out: ReplayedLadderRow[] = [];
  const matched = new Set<JournalEntry>();
  const entry = (r: JournalEntry) => ({
    at: iso(r.createdAt),
    account: r.account,
    alertname: r.alertname,
    serverId: r.serverId,
    step: r.ladderStep!,
    escalated: r.decision === 'escalated',
  });
  for (const r of then) {
    const n = now.find((x) => !matched.has(x) && sameStep(x, r));
    if (n) matched.add(n);
    const recordedO = recordedOutcome(r, thenExecutions);
    const replayedO = n ? recordedOutcome(n, nowExecutions) : undefined;
    const same = replayedO !== undefined && outcomesText([recordedO]) === outcomesText([replayedO]);
    out.push({
      ...entry(r),
      journalId: r.id,
      recorded: recordedO,
      ...(replayedO ? { replayed: replayedO } : {}),
      verdict: same ? 'same' : 'changed',
    });
  }
  for (const n of now)
    if (!matched.has(n)) out.push({ ...entry(n), replayed: recordedOutcome(n, nowExecutions), verdict: 'changed' });
  return out;
}

/** One delivery decided again under the new rules. */
async function decideAgain(
  d: Delivery,
  config: Pick<Config, 'remediation'>,
  engines: Map<string, OfflineEngine>,
  accounts: string[],
): Promise<Decided[] | { refused: string }> {
  if (!d.alert) return [];
  const out: Decided[] = [];
  const principal = d.rows[0]!.principal ?? REPLAY_PRINCIPAL;
  try {
    // As the webhook route: a resolved delivery first ends its episode (remediation/episode.ts), journaled
    // `resolved` when something of it was handled then too.
    if (d.alert.status === 'resolved')
      for (const episode of resolvedEpisodes(d.alert, config.remediation.rules, accounts)) {
        const { resolution } = await engines.get(episode.account)!.engine.alertResolved(episode, principal);
        if (resolution)
          out.push({
            outcome: { action: resolution.action, decision: 'resolved' },
            account: episode.account,
            id: resolution.id,
          });
      }
    for (const req of requestsFor(d.alert, 0, config.remediation.rules, accounts, principal)) {
      const { engine, store } = engines.get(req.account)!;
      const r = await engine.request(req);
      // The row's action: a ladder's step asked again after it expired is that step's
      // (remediation/episode.ts `expiredStep`).
      const action = (await store.get(r.id))?.action ?? req.action;
      out.push({ outcome: { action, decision: r.decision }, account: req.account, id: r.id });
    }
  } catch (error) {
    return { refused: (error as Error).message };
  }
  return out;
}

/** A person's settlement then, applied again when the new rules ask for it too and it still awaits. */
async function settleAgain(
  ev: Extract<HistoryEvent, { kind: 'settlement' }>,
  now: Decided[] | { refused: string } | undefined,
  engines: Map<string, OfflineEngine>,
): Promise<void> {
  if (!Array.isArray(now)) return;
  const then = ev.row;
  for (const d of now) {
    if (d.outcome.action !== then.action || d.outcome.decision !== 'awaiting_approval') continue;
    const { engine, store } = engines.get(d.account)!;
    const row = await store.get(d.id);
    if (row?.decision !== 'awaiting_approval') continue;
    try {
      if (then.decision === 'approved') {
        const ran = await engine.approve(row, then.approver ?? REPLAY_PRINCIPAL, then.approverReason ?? undefined);
        d.outcome.execution = ran.decision;
        d.executionId = ran.id;
      } else if (then.decision === 'denied_by_approver')
        await engine.deny(row, then.approver ?? REPLAY_PRINCIPAL, then.approverReason ?? undefined);
      else await engine.withdraw(row, withdrawer(then), then.approverReason ?? undefined);
    } catch (error) {
      // Expired under the new approval_timeout before the person's moment: the clock settled it.
      if (!(error instanceof ConflictError)) throw error;
    }
    return;
  }
}

/**
 * An operator's or the `api` command's row (or an approval's execution no replayed row shows), written to the
 * offline journal as it was recorded; returns its offline id.
 */
async function replayRow(
  row: JournalEntry,
  e: OfflineEngine | undefined,
  report: ReplayReport,
): Promise<number | undefined> {
  if (!e) return undefined;
  const { id, completedAt: _c, upstreamOutcome: _u, ...entry } = row;
  if (row.decision === 'circuit_closed') await e.store.closeCircuit(row.account, row.createdAt);
  const copy = await e.store.insert(entry);
  report.operatorRows.push({
    at: iso(row.createdAt),
    journalId: id,
    account: row.account,
    source: row.source,
    principal: row.principal,
    action: row.action,
    serverId: row.serverId === '' ? null : row.serverId,
    decision: row.decision,
  });
  return copy;
}

/** A delivery's outcome then and now, with the settlements of the requests that awaited approval now. */
async function compare(
  d: Delivery,
  now: Decided[] | { refused: string } | undefined,
  executions: JournalEntry[],
  engines: Map<string, OfflineEngine>,
): Promise<ReplayedDelivery> {
  const first = d.rows[0]!;
  const base = {
    at: iso(first.createdAt),
    account: first.account,
    alertname: first.alertname,
    status: d.alert?.status ?? first.alertStatus,
    serverId: first.serverId,
    ip: first.ip,
    journalIds: d.rows.map((r) => r.id),
    recorded: d.rows.map((r) => recordedOutcome(r, executions)),
  };
  if (!d.alert || now === undefined) return { ...base, verdict: 'not_replayable' };
  if (!Array.isArray(now)) return { ...base, replayed: [], refused: now.refused, verdict: 'changed' };
  const outcomes: Outcome[] = [];
  for (const n of now) {
    const { store } = engines.get(n.account)!;
    const row = n.outcome.decision === 'awaiting_approval' ? await store.get(n.id) : undefined;
    const settled = row && row.decision !== 'awaiting_approval' ? (row.decision as Settlement) : undefined;
    // How what it sent was verified, as the replayed verifier settled it on the recorded evidence.
    const sent = n.outcome.decision === 'awaiting_approval' ? n.executionId : n.id;
    const verification = sent === undefined ? undefined : (await store.get(sent))?.verification;
    const outcome = verification ? { ...n.outcome, verification } : n.outcome;
    outcomes.push(
      settled
        ? {
            ...outcome,
            settlement: {
              decision: settled,
              by: settled === 'withdrawn' ? (row!.approver ?? row!.principal) : row!.approver,
              at: iso(row!.approvedAt ?? row!.completedAt ?? row!.createdAt),
            },
          }
        : outcome,
    );
  }
  const human = overturned(base.recorded, outcomes);
  const same = outcomesText(base.recorded) === outcomesText(outcomes);
  return {
    ...base,
    replayed: outcomes,
    verdict: human.length > 0 ? 'overturned' : same ? 'same' : 'changed',
    ...(human.length > 0 ? { overturned: human } : {}),
  };
}

/** The rows of the store since `since` (ms), oldest first, and each account's breaker. */
async function read(store: StateStore, accounts: string[], since: number, to: number): Promise<Recorded> {
  const rows = (await store.list({ since, limit: MAX_ROWS })).reverse();
  const circuits = new Map<string, CircuitState>();
  for (const account of accounts) circuits.set(account, await store.circuit(account));
  return { rows, circuits, from: since, to };
}

/**
 * `remediation replay --config.file NEW.yml [--since 7d] [-o json] [--exit-code]`; returns the exit code: 0, or
 * with `--exit-code` 1 when any delivery's decision or ladder row changed or overturns a person's.
 */
export async function runRemediationReplay(
  args: string[],
  out: NodeJS.WritableStream = process.stdout,
  now: () => number = Date.now,
): Promise<number> {
  const { values } = parseArgs({
    args,
    options: {
      'config.file': { type: 'string' },
      config: { type: 'string' },
      since: { type: 'string' },
      output: { type: 'string', short: 'o' },
      'exit-code': { type: 'boolean' },
    },
  });
  const file = values['config.file'] ?? values.config;
  if (!file) throw new BaremetalError('remediation replay: --config.file NEW.yml expected');
  const sinceMs = parseDuration(values.since ?? '7d');
  if (sinceMs === undefined)
    throw new BaremetalError(`remediation replay: --since must be a duration such as 7d (got ${values.since})`);
  const format = (values.output ?? 'table') as OutputFormat;
  if (!OUTPUT_FORMATS.includes(format))
    throw new BaremetalError(
      `remediation replay: --output must be one of ${OUTPUT_FORMATS.join(', ')} (got ${JSON.stringify(values.output)})`,
    );
  const config = await loadConfig(file);
  if (config.database.kind === 'sqlite' && !existsSync(join(config.stateDir, 'journal.db')))
    throw new BaremetalError(`remediation replay: no journal at ${join(config.stateDir, 'journal.db')}`);
  const store = await openStore(config, { logger: createLogger('silent'), postgres: { limits: { max: 2 } } });
  let recorded: Recorded;
  let timer: NodeJS.Timeout | undefined;
  // PostgreSQL is retried until it answers: wait for its first attempt, no longer.
  const timeout = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), DEFAULT_POOL_LIMITS.connectTimeoutMs + 1_000);
  });
  try {
    if (!(await Promise.race([store.opened, timeout]).finally(() => clearTimeout(timer))))
      throw new BaremetalError(`remediation replay: the state store is unavailable: ${store.unavailable ?? ''}`);
    const to = now();
    recorded = await read(
      store,
      config.accounts.map((a) => a.name),
      to - sinceMs,
      to,
    );
  } finally {
    await store.close();
  }
  const report = await replay(config, recorded);
  out.write(render(format, { data: report, table: reportText(report) }));
  // As `git diff --exit-code`: 1 when any decision changed (or overturns a person's), a ladder's included.
  const changed = report.counts.changed + report.counts.overturned + report.ladderCounts.changed;
  return values['exit-code'] === true && changed > 0 ? 1 : 0;
}
