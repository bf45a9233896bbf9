/**
 * Silence while handled (`remediation.alertmanager.silence_while_handled`, issue 41), as StackStorm's users and
 * Alerta do: while a request made from an alert awaits approval or is verifying, Alertmanager holds a silence
 * for that alert's labels (`createdBy: baremetal-exporter`, its comment naming the journal entry, ending at the
 * approval's expiry or the verification's deadline), so that people are not paged for what is being handled.
 * Once the request is no longer handled — approved (its execution gets its own), denied, expired, withdrawn,
 * verified, ineffective — its silence is expired.
 *
 * Reconciled, not tracked: the leader's tick compares the rows being handled (the journal, shared by the
 * replicas) with the silences Alertmanager holds (found by their comment), creates what is missing and expires
 * what is no longer wanted. Nothing is stored besides: a failover or a restart converges on the next run. A
 * silence someone expired by hand (amtool silence expire) stays expired for its journal entry: its expired
 * silence in Alertmanager says so (for Alertmanager's retention of expired silences, 5 days by default), and the
 * keeper logs once who took it over (the silence's `updatedBy` when Alertmanager gives one, else "someone"). An Alertmanager that cannot be reached leaves things as they are (the client
 * logs it once and counts it): the silences end on their own at their end time.
 */
import type { Logger } from 'pino';
import type { AlertmanagerSilence, NewSilence } from '../alertmanager/client.js';
import { type JournalEntry, keptLabels } from '../store/rows.js';
import type { StateQueries } from '../store/store.js';
import { deadlineOf, VERIFY_EVERY_MS } from './verify.js';

/** What the keeper writes to Alertmanager (alertmanager/client.ts implements it). */
export interface SilenceWriter {
  silences(): Promise<AlertmanagerSilence[]>;
  createSilence(silence: NewSilence): Promise<string>;
  expireSilence(id: string): Promise<void>;
}

/** The `createdBy` of the daemon's silences. */
export const SILENCE_CREATOR = 'baremetal-exporter';

export interface SilenceDeps {
  account: string;
  store: StateQueries;
  logger: Logger;
  /** absent, or silence_while_handled off: no silence is ever written */
  alertmanager?: SilenceWriter | undefined;
  /** how long a request awaits approval, ms (remediation.approval_timeout) */
  approvalTimeoutMs: () => number;
}

/** The comment of row `id`'s silence; `entryOf` reads it back. */
const comment = (row: JournalEntry, until: string) =>
  `${SILENCE_CREATOR} is handling this: journal entry ${row.id} (account ${row.account}), ${row.action} of server ${row.serverId}, ${until}`;
const COMMENT = /journal entry (\d+) \(account (\S+)\)/;

/** The journal entry and account a silence's comment names, when it is one of ours. */
function entryOf(s: AlertmanagerSilence): { id: number; account: string } | undefined {
  if (s.createdBy !== SILENCE_CREATOR) return undefined;
  const m = COMMENT.exec(s.comment);
  return m ? { id: Number(m[1]), account: m[2]! } : undefined;
}

export class SilenceKeeper {
  readonly #deps: SilenceDeps;
  #ranAt = -Infinity;
  /** the last run found silences of ours (or has not run): the next one must look, even with nothing handled */
  #mayHaveSilences = true;
  /** the journal entries whose silence someone expired by hand, already logged (in memory: a restart logs again) */
  readonly #takenOver = new Set<number>();

  constructor(deps: SilenceDeps) {
    this.#deps = deps;
  }

  /**
   * Creates the silences the handled rows need and expires the others, at `now` (ms), at most every
   * VERIFY_EVERY_MS (with the verifier's run, so an ended verification's silence goes in the same tick).
   * Never throws for Alertmanager; throws JournalError.
   */
  async reconcile(now: number): Promise<void> {
    const { alertmanager, store, account, logger } = this.#deps;
    if (alertmanager === undefined || now - this.#ranAt < VERIFY_EVERY_MS) return;
    this.#ranAt = now;
    // An alert whose labels were too long to keep (store/rows.ts `labelsJson`) cannot be silenced: it pages.
    const handled = [...(await store.awaitingApproval(account)), ...(await store.verifying(account))].filter(
      (row) => row.source === 'alert' && keptLabels(row.labels) !== undefined,
    );
    if (handled.length === 0 && !this.#mayHaveSilences) return;
    try {
      const all = await alertmanager.silences();
      const ours = all
        .filter((s) => s.state !== 'expired')
        .flatMap((s) => {
          const entry = entryOf(s);
          return entry && entry.account === account ? [{ id: s.id, entry: entry.id }] : [];
        });
      const expired = all.filter((s) => s.state === 'expired' && entryOf(s)?.account === account);
      const wanted = new Map(handled.map((row) => [row.id, row]));
      for (const s of ours)
        if (!wanted.delete(s.entry)) {
          await alertmanager.expireSilence(s.id);
          logger.info({ journal_id: s.entry, silence_id: s.id }, 'silence of a request no longer handled expired');
        }
      for (const row of wanted.values()) {
        const end =
          row.decision === 'awaiting_approval' ? row.createdAt + this.#deps.approvalTimeoutMs() : deadlineOf(row);
        if (end <= now) continue;
        const until = `${row.decision === 'awaiting_approval' ? 'awaiting approval' : 'verifying'} until ${new Date(end).toISOString()}`;
        // Still handled and before its end, yet its silence is expired: someone expired it by hand (the keeper
        // expires only the silences of rows no longer handled). This row's own silence (its whole comment, with
        // its end), not one of an older journal's entry of the same number.
        const taken = expired.find((x) => x.comment === comment(row, until));
        if (taken) {
          if (!this.#takenOver.has(row.id)) {
            this.#takenOver.add(row.id);
            const by = taken.updatedBy ?? 'someone';
            logger.warn(
              { journal_id: row.id, silence_id: taken.id, by },
              `the silence of a request still handled was expired by ${by}: not created again for this journal entry, the alert pages`,
            );
          }
          continue;
        }
        const labels = keptLabels(row.labels)!;
        const id = await alertmanager.createSilence({
          matchers: Object.entries(labels).map(([name, value]) => ({ name, value, isRegex: false, isEqual: true })),
          startsAt: now,
          endsAt: end,
          createdBy: SILENCE_CREATOR,
          comment: comment(row, until),
        });
        logger.info({ journal_id: row.id, silence_id: id, alertname: row.alertname }, `alert silenced while ${until}`);
      }
      this.#mayHaveSilences = ours.length > 0 || handled.length > 0;
    } catch {
      // The client counted and logged it; the silences end on their own, the next run tries again.
    }
  }
}
