/**
 * Did it help? An executed action of a rule with `verify_within` is `verifying` (store/rows.ts `verification`)
 * until the alert that caused it — its fingerprint and `startsAt`, one firing episode — resolves: `verified`;
 * or until `verify_within` after the call has passed with it still firing: `ineffective`. The journal row keeps
 * the outcome and its time, in the store every replica shares.
 *
 * Two signals, either enough: the resolved webhook (`resolved`, on whichever replica Alertmanager reaches; only
 * of the very episode: episode.ts `sameEpisode`) and, where `remediation.alertmanager` is set, Alertmanager's
 * own list (`GET /api/v2/alerts` with `GET /api/v2/status`, read by the leader's tick), as episode.ts
 * `AbsenceEvidence` reads it: absence alone is no evidence (a restarted Alertmanager lists nothing for a while).
 * The API matters because a silence mutes the daemon's own receiver too: a resolved notification it suppressed
 * never arrives. The deadline is checked by the
 * leader's tick only (`judge`, then `settle`), so a failover or a handover resumes it from the journal; ending a verification is
 * one conditional UPDATE (`settleVerification`): of the webhook and a tick ending it at once, one wins.
 *
 * A firewall action has a second signal at its deadline: the attack data (verify-attack.ts). No attack event
 * on its IP since the call — `verified` though the alert still fires; an event — `ineffective`.
 */
import type { Logger } from 'pino';
import type { AlertmanagerAlert, AlertmanagerStatus } from '../alertmanager/client.js';
import type { Metrics } from '../metrics/definitions.js';
import type { JournalEntry } from '../store/rows.js';
import type { StateQueries } from '../store/store.js';
import {
  AbsenceEvidence,
  type AlertmanagerReading,
  alertOf,
  DEFAULT_RESEND_INTERVAL_MS,
  type EpisodeAlert,
  keyOf,
  type ListedAs,
  resolutionOf,
  resolvedEvidence,
  sameEpisode,
} from './episode.js';
import { climbMarkKey } from './ladder.js';
import type { AlertReader } from './outage-gate.js';
import type { TargetDirectory } from './types.js';
import { attackSignal, attackVerified } from './verify-attack.js';

/**
 * The outcomes a verification ends in (`outcome` of `baremetal_remediation_verifications_total`): `unknown` when
 * Alertmanager gave no evidence either way until the deadline (unreadable, or restarted less than a resend
 * interval before each read): not ineffective, so no ladder climbs on it; the alert pages once the silence ends.
 */
export const VERIFICATION_OUTCOMES = ['verified', 'ineffective', 'unknown'] as const;
export type VerificationOutcome = (typeof VERIFICATION_OUTCOMES)[number];

export interface VerifierDeps {
  account: string;
  store: StateQueries;
  metrics: Metrics;
  logger: Logger;
  /** Alertmanager's alerts and status (absent: only the resolved webhook and the deadline) */
  alertmanager?: StatusReader | undefined;
  /** remediation.alertmanager.resend_interval, ms (read per tick: a reload may change it) */
  resendIntervalMs?: (() => number) | undefined;
  /** the account's inventory: its attack state is a firewall action's second signal (verify-attack.ts) */
  targets?: TargetDirectory | undefined;
  /** how often `judge` reads at most, ms; default VERIFY_EVERY_MS */
  everyMs?: number | undefined;
  /** the period of `schedules.firewall`, ms (how long an unread history is waited for); default a minute */
  firewallPeriodMs?: (() => number) | undefined;
  /** the clock a climb mark is dated by (ms since epoch; ladder.ts); default Date.now */
  now?: (() => number) | undefined;
}

/** What `judge` found, for `settle`. */
export interface Judgement {
  /** the rows verifying when it was judged */
  rows: JournalEntry[];
  /** what Alertmanager's reading says of each episode key */
  verdicts: ReadonlyMap<string, ListedAs>;
  /** when the Alertmanager read started (ms), when its status was read */
  startedAt: number | undefined;
  /** remediation.alertmanager.resend_interval, ms */
  resendMs: number;
  /** the episodes Alertmanager's list ended (each once): the engine resolves them before `settle` */
  ended: EpisodeAlert[];
}

/** What the verifier reads of Alertmanager: its alerts, and when it started (alertmanager/client.ts implements it). */
export interface StatusReader extends AlertReader {
  /** throws AlertmanagerError */
  status(): Promise<AlertmanagerStatus>;
}

/** When `row`'s verification ends unresolved, ms: `verify_within` after its call completed. */
export const deadlineOf = (row: JournalEntry): number => (row.completedAt ?? row.createdAt) + (row.verifyWithinMs ?? 0);

/**
 * How often the leader's tick checks the verifying rows (and reads Alertmanager), ms: the ticker runs every
 * second, Alertmanager need not be asked that often; an outcome is journaled at most this late.
 */
export const VERIFY_EVERY_MS = 10_000;

/** The longest evidence sentence a row keeps (JournalEntry `verificationEvidence`), characters. */
export const MAX_EVIDENCE = 1000;

const iso = (ms: number) => new Date(ms).toISOString();

export class Verifier {
  readonly #deps: VerifierDeps;
  #ranAt = -Infinity;
  readonly #evidence = new AbsenceEvidence();

  constructor(deps: VerifierDeps) {
    this.#deps = deps;
  }

  /**
   * The first half of the leader's verification at `now` (ms), at most every `everyMs`: reads the rows verifying
   * and awaiting approval, and Alertmanager, and judges each episode by the evidence rule of episode.ts
   * `AbsenceEvidence` (not its absence alone). Returns undefined when it did not run or there is nothing to judge;
   * else the judgement, whose `ended` lists the episodes Alertmanager's list ended (each once, with a row
   * awaiting approval or verifying): the engine resolves them as a resolved delivery would (episode.ts
   * `Episodes.resolved`: journaled, withdrawn, verified) before `settle`. Alertmanager unreadable: no evidence,
   * only the deadline (the client logs it once).
   */
  async judge(now: number): Promise<Judgement | undefined> {
    const { store, account, alertmanager } = this.#deps;
    if (now - this.#ranAt < (this.#deps.everyMs ?? VERIFY_EVERY_MS)) return undefined;
    this.#ranAt = now;
    const rows = await store.verifying(account);
    // A request awaiting approval is silenced on its alert's labels (silences.ts): its resolved notification
    // never comes, so Alertmanager's list is the only word that its episode ended.
    const awaiting = alertmanager === undefined ? [] : await store.awaitingApproval(account);
    if (rows.length === 0 && awaiting.length === 0) return undefined;
    const keys = [...new Set([...rows, ...awaiting].flatMap((row) => keyOf(row) ?? []))];
    const reading = await this.#read();
    const resendMs = this.#deps.resendIntervalMs?.() ?? DEFAULT_RESEND_INTERVAL_MS;
    const verdicts =
      reading === undefined ? new Map<string, ListedAs>() : this.#evidence.judge(reading, keys, now, resendMs);
    const ended: EpisodeAlert[] = [];
    const seen = new Set<string>();
    for (const row of [...awaiting, ...rows]) {
      const key = keyOf(row);
      const alert = alertOf(row);
      if (key === undefined || alert === undefined || verdicts.get(key) !== 'ended') continue;
      if (seen.has(`${key} ${row.labels}`)) continue;
      seen.add(`${key} ${row.labels}`);
      ended.push(alert);
    }
    return { rows, verdicts, startedAt: reading?.status?.startedAt, resendMs, ended };
  }

  /**
   * The second half, after the engine resolved `j.ended`: the rows of `j` whose episode Alertmanager ended are
   * `verified`; those past their deadline `ineffective`, unless their resolution was journaled (then `verified`),
   * or `unknown` without evidence either way. `then` runs right after each row is settled (the engine climbs the
   * ladder of an `ineffective` one, ladder.ts), before the next row is: a row that cannot be settled now (the
   * journal failed) stays verifying for the next tick and stops neither the others nor what follows theirs.
   * Returns the rows it ended; throws the first JournalError once every row was tried.
   */
  async settle(
    j: Judgement,
    now: number,
    then: (row: JournalEntry, outcome: VerificationOutcome) => Promise<void>,
  ): Promise<Array<{ row: JournalEntry; outcome: VerificationOutcome }>> {
    const ended: Array<{ row: JournalEntry; outcome: VerificationOutcome }> = [];
    let failed: unknown;
    for (const row of j.rows) {
      try {
        const outcome = await this.#settleOne(j, row, now);
        if (outcome === undefined) continue;
        ended.push({ row, outcome });
        await then(row, outcome);
      } catch (error) {
        failed ??= error;
      }
    }
    if (failed !== undefined) throw failed;
    return ended;
  }

  /** `row`'s settlement by `j` at `now` (`settle`); undefined when it goes on verifying or was ended already. */
  async #settleOne(j: Judgement, row: JournalEntry, now: number): Promise<VerificationOutcome | undefined> {
    const { store } = this.#deps;
    // `ended` is only ever judged with a status read (episode.ts AbsenceEvidence): it names the instance.
    const listEvidence = () =>
      `Alertmanager (started ${iso(j.startedAt ?? 0)}, up for longer than the resend interval, ${j.resendMs / 1000}s) no longer listed it at ${iso(now)}`;
    const key = keyOf(row);
    const listedEnded = key !== undefined && j.verdicts.get(key) === 'ended';
    let outcome = listedEnded
      ? 'verified'
      : this.#atDeadline(row, now, key === undefined ? undefined : j.verdicts.get(key));
    let evidence = listedEnded ? listEvidence() : outcome && this.#deadlineEvidence(row, outcome);
    let signal: 'alert' | 'attack' = listedEnded ? 'alert' : 'attack';
    // Never ineffective (nor unknown) when the episode's resolution was journaled (a resolved delivery during
    // the call, or the alert list's resolution the engine journaled from `ended`).
    const resolution = outcome === 'ineffective' || outcome === 'unknown' ? await resolutionOf(store, row) : undefined;
    if (resolution !== undefined) {
      outcome = 'verified';
      evidence = resolvedEvidence(resolution);
      signal = 'alert';
    }
    return outcome && evidence && (await this.#settle(row, outcome, now, evidence, signal)) ? outcome : undefined;
  }

  /** The evidence of `outcome`, reached at or past `row`'s deadline without its alert known resolved. */
  #deadlineEvidence(row: JournalEntry, outcome: VerificationOutcome): string {
    const deadline = `its deadline ${iso(deadlineOf(row))} (verify_within ${(row.verifyWithinMs ?? 0) / 1000}s)`;
    if (outcome === 'verified')
      return `the attack data: no attack event on its IP from the call to ${deadline}, its alert still firing`;
    if (outcome === 'unknown')
      return `no evidence either way by ${deadline}: Alertmanager could not be read, or not long enough after its start to tell`;
    return attackVerified(row)
      ? `its alert not known resolved at ${deadline}, and the attack data showed an attack event on its IP after the call or could not be read`
      : `its alert not known resolved at ${deadline}`;
  }

  /**
   * `row`'s outcome with its alert still firing (or not known resolved) at `now`: none before its deadline; at
   * or past it, a power action's is `ineffective` — `unknown` when Alertmanager's reading at this tick
   * (`verdict`) gave no evidence either way: nothing says it still fires, so no ladder climbs on it — a
   * firewall action's what the attack data says (verify-attack.ts).
   */
  #atDeadline(row: JournalEntry, now: number, verdict: string | undefined): VerificationOutcome | undefined {
    const deadline = deadlineOf(row);
    if (now < deadline) return undefined;
    if (!attackVerified(row)) return verdict === 'no_evidence' ? 'unknown' : 'ineffective';
    return attackSignal(this.#deps.targets, row, deadline, now, this.#deps.firewallPeriodMs?.() ?? 60_000);
  }

  /**
   * The resolved delivery of `alert`'s episode at `now` (ms): the actions taken on that very episode (account,
   * fingerprint, start and labels: episode.ts `sameEpisode`) that are still verifying are `verified`. Returns
   * the rows it ended.
   */
  async resolved(alert: EpisodeAlert, now: number, evidence: string): Promise<JournalEntry[]> {
    const rows = (await this.#deps.store.verifying(this.#deps.account)).filter((row) => sameEpisode(row, alert));
    const ended: JournalEntry[] = [];
    for (const row of rows) if (await this.#settle(row, 'verified', now, evidence)) ended.push(row);
    return ended;
  }

  /**
   * Ends `row`'s verification `verified` at `now` (ms): its episode's resolution was journaled (`evidence` names
   * it, episode.ts `resolvedEvidence`). False when it was ended already.
   */
  settleResolved(row: JournalEntry, now: number, evidence: string): Promise<boolean> {
    return this.#settle(row, 'verified', now, evidence);
  }

  /**
   * Alertmanager's alerts (firing, silenced or inhibited) and status, each undefined when it could not be read
   * (the client logged and counted it); undefined when no Alertmanager is configured.
   */
  async #read(): Promise<AlertmanagerReading | undefined> {
    const { alertmanager } = this.#deps;
    if (alertmanager === undefined) return undefined;
    // The status before and after the list: a restart in between would pass an old list for the new process's.
    const status = () => alertmanager.status().catch((): AlertmanagerStatus | undefined => undefined);
    const before = await status();
    const alerts = await alertmanager.alerts().catch((): AlertmanagerAlert[] | undefined => undefined);
    const after = await status();
    const same = before !== undefined && after !== undefined && before.startedAt === after.startedAt;
    return { alerts, status: same ? after : undefined };
  }

  /**
   * Ends `row`'s verification (once: false when another replica or the webhook did), counted and logged;
   * `evidence` (a sentence, at most MAX_EVIDENCE characters kept) is journaled with it. `signal`: what verified it — its alert resolved (the recovery time observed), or the attack data (the
   * quiet window ended at the deadline; the alert has not resolved, so no recovery time).
   */
  async #settle(
    row: JournalEntry,
    outcome: VerificationOutcome,
    now: number,
    evidence: string,
    signal: 'alert' | 'attack' = 'alert',
  ): Promise<boolean> {
    const { store, metrics, logger } = this.#deps;
    // An ineffective action is so at its deadline, even when the tick that sees it runs later; an attack-quiet
    // one is verified as of its deadline, the end of its quiet window.
    const at = outcome !== 'verified' || signal === 'attack' ? Math.min(now, deadlineOf(row)) : now;
    const kept = evidence.length <= MAX_EVIDENCE ? evidence : `${evidence.slice(0, MAX_EVIDENCE - 1)}…`;
    // A ladder's step that was ineffective owes a climb: marked before it is settled, so that no stop between
    // the two loses it (ladder.ts); dated now, not at the tick's `now`, which the Alertmanager reads came after.
    if (outcome === 'ineffective' && row.ladderStep !== null)
      await store.claimDelivery(climbMarkKey(row.id), '', row.id, (this.#deps.now ?? Date.now)());
    if (!(await store.settleVerification(row.id, outcome, at, kept))) return false;
    const rule = row.alertname ?? '';
    metrics.remediationVerifications.inc({ account: this.#deps.account, action: row.action, rule, outcome });
    const calledAt = row.completedAt ?? row.createdAt;
    const fields = { journal_id: row.id, action: row.action, server_id: row.serverId, alertname: rule };
    if (outcome === 'verified' && signal === 'attack')
      logger.info(
        { ...fields, ip: row.ip, verify_within_s: (row.verifyWithinMs ?? 0) / 1000 },
        'remediation verified: no attack event on its IP since the call',
      );
    else if (outcome === 'verified') {
      metrics.remediationRecovery.observe({ account: this.#deps.account, action: row.action }, (at - calledAt) / 1000);
      logger.info({ ...fields, recovery_s: (at - calledAt) / 1000 }, 'remediation verified: its alert resolved');
    } else if (outcome === 'unknown') {
      logger.error(
        { ...fields, verify_within_s: (row.verifyWithinMs ?? 0) / 1000 },
        'remediation verification unknown: Alertmanager gave no evidence either way by verify_within (unreadable or just restarted); no ladder step, the alert pages',
      );
    } else {
      logger.warn(
        { ...fields, verify_within_s: (row.verifyWithinMs ?? 0) / 1000 },
        'remediation ineffective: its alert still fires past verify_within',
      );
    }
    return true;
  }
}
