/**
 * An alert episode (issue 49): one alert — its account, fingerprint, labels and `startsAt` — and what the
 * daemon did about it. This module says what an episode is and what counts as its resolution; every path that
 * asks "is this row's alert the one that resolved?" or "did it resolve?" asks here: the resolved webhook
 * (engine.ts `alertResolved`), Alertmanager's alert list (verify.ts), the approvals and the ladder.
 *
 * Resolution needs evidence. An episode is resolved by:
 * - a resolved delivery whose account, fingerprint, `startsAt` and labels all match the row's (`sameEpisode`):
 *   a delivery with the fingerprint of one server's episode and the labels of another settles nothing;
 * - Alertmanager no longer listing it, when and only when that is Alertmanager's own word that it ended
 *   (`AbsenceEvidence`): the list and `/api/v2/status` were both read now (the status before and after the
 *   list, the same start), and the Alertmanager process read (its `uptime`, the time it started) has been up
 *   for at least `remediation.alertmanager.resend_interval` — whoever saw the episode before, this leader or
 *   another, this process or an earlier one. Alertmanager keeps its alerts in memory only: a restarted one
 *   lists nothing until Prometheus sends its firing alerts again (every resend interval), so one younger than
 *   that proves nothing; one up for longer has been sent every alert still firing, so an episode it does not
 *   list has ended. An Alertmanager that cannot be read, or whose status cannot, proves nothing either.
 *
 * A resolved episode ends what is pending for it (`resolutionRow`, engine.ts `alertResolved`): its resolution
 * is journaled once (decision `resolved`, naming the delivery's principal and time) — also when nothing of the
 * episode was asked for yet, so that a firing delivery of it arriving after (out of order) acts no more; what awaits approval is withdrawn (a later approval is a 409 naming the
 * resolution), what verifies is `verified`, and a call in flight is settled `verified` when it completes
 * (`resolutionOf`, read after the row is completed). Every later request of the episode — an approval's
 * execution, a ladder's next step, a delivery repeated out of order — is decided `resolved` by the `episode`
 * guard (decide.ts): nothing is ever sent for a resolved episode.
 *
 * An expiry never swallows (`expiredStep`): a request that expired unapproved asks again on the next delivery
 * of its still-firing alert — a plain rule's through its own delivery key (guards.ts `checkDelivery`), a
 * ladder's later step as that step again (its delivery was claimed by the first step), so that a repeat is a
 * `duplicate` only of a request still being handled.
 */
import type { Logger } from 'pino';
import type { AlertmanagerAlert, AlertmanagerStatus } from '../alertmanager/client.js';
import type { LadderStep, RemediationRule } from '../config/types.js';
import { type JournalEntry, journalRow, labelsJson, type NewEntry } from '../store/rows.js';
import type { StateQueries } from '../store/store.js';
import { ruleDigest } from './request.js';
import type { ActionDecision, ActionRequest } from './types.js';

/** One firing episode's key: an alert's fingerprint and its start (ms, so that both spellings of the time agree). */
export const episodeKey = (fingerprint: string, startsAt: string): string => `${fingerprint}@${Date.parse(startsAt)}`;

/** The key of the episode `row` was made for, or undefined for a row of no alert. */
export const keyOf = (row: JournalEntry): string | undefined =>
  row.fingerprint !== null && row.startsAt !== null ? episodeKey(row.fingerprint, row.startsAt) : undefined;

/**
 * The alert of the episode `row` was made for, as a resolved delivery of it would name it (account,
 * fingerprint, start and recorded labels); undefined for a row of no alert or without recorded labels.
 */
export function alertOf(row: JournalEntry): EpisodeAlert | undefined {
  if (row.fingerprint === null || row.startsAt === null || row.labels === null) return undefined;
  const labels: unknown = JSON.parse(row.labels);
  if (typeof labels !== 'object' || labels === null) return undefined;
  return {
    account: row.account,
    fingerprint: row.fingerprint,
    startsAt: row.startsAt,
    labels: labels as Record<string, string>,
  };
}

/** One alert as a delivery names it: what identifies its episode. */
export interface EpisodeAlert {
  account: string;
  fingerprint: string;
  startsAt: string;
  labels: Readonly<Record<string, string>>;
  /**
   * What the first rule it matches would act on (its server label, action, position and digest): the
   * resolution of an episode nothing was asked for yet is journaled under it; absent when the alert lacks the label
   */
  target?: { serverId: string; action: string; alertname: string; ruleIndex: number; ruleDigest: string };
}

/**
 * Whether `row` was made for `alert`'s episode: the same account, fingerprint, start and labels (all of them,
 * compared as the row recorded them, keys sorted). A row without recorded labels matches no delivery.
 */
export function sameEpisode(row: JournalEntry, alert: EpisodeAlert): boolean {
  return (
    row.account === alert.account &&
    keyOf(row) === episodeKey(alert.fingerprint, alert.startsAt) &&
    row.labels !== null &&
    row.labels === labelsJson(alert.labels)
  );
}

/** What Alertmanager was asked at one tick: its alerts and its status, each undefined when it could not be read. */
export interface AlertmanagerReading {
  alerts: readonly AlertmanagerAlert[] | undefined;
  status: AlertmanagerStatus | undefined;
}

/** What a reading says of one episode. */
export type ListedAs = 'listed' | 'ended' | 'no_evidence';

/** The default of `remediation.alertmanager.resend_interval`, ms: Prometheus's default `resend-delay`. */
export const DEFAULT_RESEND_INTERVAL_MS = 60_000;

/**
 * Whether the Alertmanager process of `status` has been up for at least `resendMs` at `now` (ms): Prometheus has
 * sent it every alert still firing since it started, so its list is complete (the rule in the module comment).
 */
export const upForResend = (status: AlertmanagerStatus, now: number, resendMs: number): boolean =>
  now - status.startedAt >= resendMs;

/**
 * Reads Alertmanager's list as evidence (the rule in the module comment). Nothing is remembered between
 * readings: a restarted daemon or a new leader judges as the old one would.
 */
export class AbsenceEvidence {
  /**
   * What `reading`, taken at `now` (ms), says of each of `keys` (the episodes awaiting approval or verifying).
   * `resendMs`: remediation.alertmanager.resend_interval.
   */
  judge(reading: AlertmanagerReading, keys: readonly string[], now: number, resendMs: number): Map<string, ListedAs> {
    const verdicts = new Map<string, ListedAs>();
    const { alerts, status } = reading;
    if (alerts === undefined || status === undefined) {
      for (const key of keys) verdicts.set(key, 'no_evidence');
      return verdicts;
    }
    const listed = new Set(alerts.map((a) => episodeKey(a.fingerprint, a.startsAt)));
    const upLongEnough = upForResend(status, now, resendMs);
    for (const key of keys) {
      if (listed.has(key)) verdicts.set(key, 'listed');
      else verdicts.set(key, upLongEnough ? 'ended' : 'no_evidence');
    }
    return verdicts;
  }
}

/** The fields of a row that name its episode. */
type EpisodeRow = Pick<JournalEntry, 'account' | 'serverId' | 'fingerprint' | 'startsAt'> & {
  labels?: string | null | undefined;
};

/**
 * The row that journaled the resolution of `row`'s episode (or a request of it decided `resolved` after), if
 * any; read with `q` (a transaction's queries, or the store). Throws JournalError.
 */
export async function resolutionOf(q: StateQueries, row: EpisodeRow): Promise<JournalEntry | undefined> {
  if (row.fingerprint === null || row.startsAt === null || row.labels === null || row.labels === undefined)
    return undefined;
  // No `since`: the rows' createdAt is the daemon's clock, startsAt Prometheus's; the key and labels decide.
  const found = await q.list({ account: row.account, serverId: row.serverId, decision: 'resolved', limit: 100 });
  const key = episodeKey(row.fingerprint, row.startsAt);
  return found.find((r) => keyOf(r) === key && r.labels === row.labels);
}

/**
 * The row journaling that `alert`'s episode resolved at `now` (ms), delivered by `principal`, while `handled`
 * (its rows awaiting approval, executing or verifying; the first names the server and action, else the
 * alert's `target`) were being handled: decision `resolved`, `message` saying what it ended. Undefined when
 * neither names a server.
 */
export function resolutionRow(
  alert: EpisodeAlert,
  handled: readonly JournalEntry[],
  principal: string,
  now: number,
  message: string,
): NewEntry | undefined {
  const first = handled[0] ?? (alert.target ? { ...alert.target } : undefined);
  if (first === undefined) return undefined;
  return journalRow({
    account: alert.account,
    createdAt: now,
    source: 'alert',
    action: first.action,
    serverId: first.serverId,
    alertname: first.alertname,
    fingerprint: alert.fingerprint,
    startsAt: alert.startsAt,
    labels: labelsJson(alert.labels),
    alertStatus: 'resolved',
    principal,
    ruleIndex: first.ruleIndex,
    ruleDigest: first.ruleDigest,
    decision: 'resolved',
    message,
  });
}

/** How the message of a row withdrawn by its episode's resolution begins (`remediation replay` tells it apart). */
export const WITHDRAWN_BY_RESOLUTION = 'withdrawn: its alert resolved';

/** Whether `row` was withdrawn by its episode's resolution, not by its requester. */
export const withdrawnByResolution = (row: JournalEntry): boolean =>
  row.decision === 'withdrawn' && row.message?.startsWith(WITHDRAWN_BY_RESOLUTION) === true;

/** When an episode resolved, as a message names it: `its alert resolved at <RFC 3339> (journal entry N)`. */
export const resolvedAt = (resolution: JournalEntry): string =>
  `its alert resolved at ${new Date(resolution.createdAt).toISOString()} (journal entry ${resolution.id}, delivered by ${resolution.principal ?? 'Alertmanager'})`;

/**
 * The evidence a verification settled on when its episode's resolution was journaled (JournalEntry
 * `verificationEvidence`): `a resolved delivery: its alert resolved at T (journal entry N, delivered by P)`.
 */
export const resolvedEvidence = (resolution: JournalEntry): string => `a resolved delivery: ${resolvedAt(resolution)}`;

/**
 * When `req` (a firing delivery's request of a ladder's first step) finds its episode's ladder stopped at a step
 * that expired unapproved: the row of the step before it (ineffective) and the rule's steps, so that the engine
 * asks for that step again (ladder.ts, keyed by that row: the expired claim is given up, guards.ts
 * `checkDelivery`). Undefined otherwise — no ladder, nothing expired, or the rule changed since (its steps are
 * not known as they were). Throws JournalError.
 */
export async function expiredStep(
  q: StateQueries,
  req: ActionRequest,
  rules: readonly RemediationRule[],
): Promise<{ before: JournalEntry; steps: readonly LadderStep[] } | undefined> {
  const { alert, rule: made } = req;
  if (req.ladderStep !== 0 || alert === undefined || alert.status !== 'firing' || made === undefined) return undefined;
  if (alert.labels === undefined) return undefined;
  const labels = labelsJson(alert.labels);
  // A day's margin: createdAt is the daemon's clock, startsAt Prometheus's (the key and labels decide).
  const since = Date.parse(alert.startsAt) - 86_400_000;
  const rows = (
    await q.list({
      account: req.account,
      serverId: req.serverId,
      ...(Number.isNaN(since) ? {} : { since }),
      limit: 200,
    })
  ).filter(
    (r) =>
      keyOf(r) === episodeKey(alert.fingerprint, alert.startsAt) &&
      r.labels === labels &&
      r.ruleDigest === made.digest &&
      r.ladderStep !== null &&
      // A repeat journaled `duplicate` (Alertmanager repeats the firing alert while a step waits) is no step.
      r.decision !== 'duplicate',
  );
  // Newest first: the ladder's latest step decides.
  const latest = rows[0];
  if (latest === undefined || latest.decision !== 'expired' || latest.ladderStep === null || latest.ladderStep === 0)
    return undefined;
  const step = latest.ladderStep;
  const before = rows.find((r) => r.ladderStep === step - 1 && r.verification === 'ineffective');
  const rule = rules.find((r) => r.steps !== undefined && ruleDigest(r) === made.digest);
  if (before === undefined || rule === undefined) return undefined;
  return { before, steps: rule.steps! };
}

/**
 * Whether the ladder of `row`'s episode wrote a row after `row` (a ladder step) — a later step, or the episode
 * escalated: what follows `row` was decided (`went on`), or not (`stopped`). Reads the server's 200 newest rows
 * since `row`: with as many, `unknown`. Throws JournalError.
 */
export async function followedBy(q: StateQueries, row: JournalEntry): Promise<'went on' | 'stopped' | 'unknown'> {
  const key = keyOf(row);
  const rows = await q.list({ account: row.account, serverId: row.serverId, since: row.createdAt, limit: 200 });
  const wentOn = rows.some(
    (r) =>
      r.id > row.id &&
      keyOf(r) === key &&
      r.labels === row.labels &&
      r.ladderStep !== null &&
      r.decision !== 'duplicate' &&
      (r.ladderStep > row.ladderStep! || r.decision === 'escalated'),
  );
  if (wentOn) return 'went on';
  return rows.length === 200 ? 'unknown' : 'stopped';
}

/**
 * A denial that still holds for `req` at `now` (ms): an approver denied a request of the same account, action
 * and alert labels less than `req`'s cooldown ago — whatever the episode (an alert that resolves and fires again
 * is a new episode with the same labels). Undefined for a request not made from a firing alert's labels, or an
 * approval's execution. Throws JournalError.
 */
export async function heldDenial(q: StateQueries, req: ActionRequest, now: number): Promise<JournalEntry | undefined> {
  const { alert } = req;
  if (req.source !== 'alert' || req.approval !== undefined || alert?.labels === undefined) return undefined;
  if (alert.status === 'resolved') return undefined;
  const labels = labelsJson(alert.labels);
  if (labels === null) return undefined;
  const found = await q.list({
    account: req.account,
    serverId: req.serverId,
    action: req.action,
    decision: 'denied_by_approver',
    limit: 100,
  });
  // Only a person's denial (an approver named), settled within the cooldown.
  return found.find(
    (r) => r.approver !== null && r.labels === labels && (r.completedAt ?? r.createdAt) > now - req.cooldownMs,
  );
}

export interface EpisodeDeps {
  account: string;
  store: StateQueries;
  logger: Logger;
  /** ms since epoch */
  now: () => number;
  /** today's rules (a reload may change them) */
  rules: () => readonly RemediationRule[];
  /** the verifier's side of an episode (verify.ts) */
  verifier: {
    resolved(alert: EpisodeAlert, now: number, evidence: string): Promise<JournalEntry[]>;
    settleResolved(row: JournalEntry, now: number, evidence: string): Promise<boolean>;
  };
  /** counts a decision (metrics, gauges; the engine's) */
  record: (action: string, result: ActionDecision) => Promise<ActionDecision>;
  /** called when rows ended (the daemon re-renders the exposition) */
  onDecision?: (() => void) | undefined;
}

/**
 * The episode's transitions, for one account's engine (engine.ts composes it): a resolved delivery
 * (`resolved`), a call that completed (`afterCall`), a ladder about to climb (`hasResolved`), a firing delivery
 * of a ladder stopped at an expired step (`expiredStep`). Every path that changes an episode because of its
 * alert goes through here.
 */
export class Episodes {
  readonly #deps: EpisodeDeps;

  constructor(deps: EpisodeDeps) {
    this.#deps = deps;
  }

  /**
   * The resolved delivery of `alert`'s episode (account, fingerprint, start, labels), delivered by `principal`:
   * the resolution is journaled (`resolved`, once; also when nothing of it was pending, under the alert's
   * `target`), what awaits approval is withdrawn, what verifies is `verified`, and a call in flight is settled when it completes
   * (`afterCall`). Returns how many rows it ended and the resolution's row when this call journaled it. Throws
   * JournalError.
   */
  async resolved(
    alert: EpisodeAlert,
    principal: string,
  ): Promise<{ ended: number; resolution?: ActionDecision & { action: string } }> {
    const { store, account, logger, verifier, record } = this.#deps;
    if (alert.account !== account) return { ended: 0 };
    const now = this.#deps.now();
    const of = (rows: JournalEntry[]) => rows.filter((row) => sameEpisode(row, alert));
    const awaiting = of(await store.awaitingApproval(account));
    const inFlight = of(await store.list({ account, decision: 'executing', limit: 1000 }));
    const verifying = of(await store.verifying(account));
    const handled = [...awaiting, ...inFlight, ...verifying];
    const names = handled[0] ?? (alert.target && { account, ...alert.target, fingerprint: alert.fingerprint });
    if (names === undefined) return { ended: 0 };
    // Journaled first, then the rows ended: a call completing meanwhile finds it (`afterCall`), or is found verifying.
    let resolution = await resolutionOf(store, {
      ...names,
      startsAt: alert.startsAt,
      labels: labelsJson(alert.labels),
    });
    let journaled: (ActionDecision & { action: string }) | undefined;
    const entry = resolutionRow(alert, handled, principal, now, '');
    if (resolution === undefined && entry !== undefined) {
      const ids = (rows: JournalEntry[]) => rows.map((r) => r.id).join(', ');
      const parts = [
        awaiting.length > 0 ? `withdrew what awaited approval (journal entry ${ids(awaiting)})` : '',
        inFlight.length > 0 ? `a call in flight (journal entry ${ids(inFlight)}) is verified when it completes` : '',
        verifying.length > 0 ? `verified journal entry ${ids(verifying)}` : '',
      ].filter((p) => p !== '');
      const what = parts.length > 0 ? parts.join('; ') : 'nothing of it was pending';
      const message = `its alert resolved (delivered by ${principal}): ${what}; nothing more is sent for it`;
      const id = await store.insert({ ...entry, message });
      resolution = (await store.get(id))!;
      journaled = { id, decision: 'resolved', message, action: resolution.action };
      await record(resolution.action, { id, decision: 'resolved', message });
    }
    if (resolution === undefined) return { ended: 0 };
    let ended = 0;
    for (const row of awaiting) {
      // resolvedAt begins "its alert resolved": the message begins WITHDRAWN_BY_RESOLUTION, as replay reads it.
      const message = `withdrawn: ${resolvedAt(resolution)}; nothing sent`;
      if (!(await store.settleApproval(row.id, { decision: 'withdrawn', approver: null, at: now, message }))) continue;
      ended++;
      logger.info(
        { journal_id: row.id, action: row.action, server_id: row.serverId, resolution: resolution.id },
        'remediation request withdrawn: its alert resolved',
      );
      await record(row.action, { id: row.id, decision: 'withdrawn', message });
    }
    ended += (await verifier.resolved(alert, now, resolvedEvidence(resolution))).length;
    if (ended > 0) this.#deps.onDecision?.();
    return { ended, ...(journaled ? { resolution: journaled } : {}) };
  }

  /**
   * After row `id`'s call completed: when it verifies and its episode resolved meanwhile (a resolved delivery
   * during the call), it is `verified` now. Throws JournalError.
   */
  async afterCall(id: number): Promise<void> {
    const { store, verifier } = this.#deps;
    const row = await store.get(id);
    if (row?.verification !== 'verifying') return;
    const resolution = await resolutionOf(store, row);
    if (
      resolution !== undefined &&
      (await verifier.settleResolved(row, this.#deps.now(), resolvedEvidence(resolution)))
    )
      this.#deps.onDecision?.();
  }

  /** Whether `row`'s episode resolved (its resolution journaled): a ladder never climbs for it. Throws JournalError. */
  async hasResolved(row: JournalEntry): Promise<boolean> {
    return (await resolutionOf(this.#deps.store, row)) !== undefined;
  }

  /** `expiredStep` over today's rules. Throws JournalError. */
  expiredStep(req: ActionRequest): ReturnType<typeof expiredStep> {
    return expiredStep(this.#deps.store, req, this.#deps.rules());
  }
}
