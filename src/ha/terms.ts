/**
 * The terms a replica shares the database on, and whether it agrees with the live membership. Every replica
 * publishes its terms with its heartbeat (`ha_replicas`, store/postgres/membership.ts): the leadership model
 * (`shared`: `database.share_accounts`, one leader per account; `single`: one leader for every account), the
 * account set (the names, and a digest of what makes two accounts the same account: name and base URL), and a
 * boot identity (random per process).
 *
 * The membership's terms are those of its oldest live member (the earliest `started_at`, database time; then
 * the name): a replica whose terms differ, or whose name a live process of another boot holds, disagrees and
 * must not poll or act for any account until it agrees (docs/high-availability.md, "When replicas disagree").
 * Oldest first, as a consumer group keeps the protocol its members agreed on: a rolling change of the config
 * leaves the replicas of the old terms leading while the restarted ones wait, and the new terms take over when
 * the last replica of the old ones has left (the oldest live replica is then a restarted one).
 *
 * The API key is not compared: replicas may call one account with keys of their own, and a digest of a key
 * would be a secret's derivative in a shared table.
 */
import { createHash } from 'node:crypto';
import type { HaMode, Member, Terms } from '../store/postgres/membership.js';
import { byCodeUnits } from '../order.js';

export type { HaMode, Member, Terms };

/** Why a replica disagrees (the `reason` label of baremetal_ha_config_mismatch). */
export const MISMATCH_REASONS = ['mode', 'accounts', 'duplicate_name'] as const;
export type MismatchReason = (typeof MISMATCH_REASONS)[number];

export interface Mismatch {
  reason: MismatchReason;
  /** one sentence for the log and /readyz: names replicas and account names, never a URL */
  message: string;
  /**
   * `duplicate_name` only: the name's row has missed its heartbeats (older than two ticks), most likely a
   * previous process of this replica killed and restarted faster than the lease: this one waits for the row to
   * expire (a warning, not a configuration mismatch: baremetal_ha_config_mismatch stays 0)
   */
  waiting?: true;
}

export interface Judgement {
  /** set when this replica disagrees: it must not lead any account */
  mismatch: Mismatch | undefined;
  /** the live replicas that agree on this replica's terms, itself included, in name order (empty on a mismatch) */
  members: string[];
  /**
   * accounts in some live replica's config that no agreeing replica has (so none can lead them), in name order:
   * computed the same on every replica
   */
  unled: string[];
}

/** The terms of `accounts` under `mode`. */
export function termsOf(mode: HaMode, accounts: ReadonlyArray<{ name: string; baseUrl: string }>): Terms {
  const sorted = [...accounts].sort((a, b) => byCodeUnits(a.name, b.name));
  const hash = createHash('sha256');
  for (const a of sorted) hash.update(a.name).update('\0').update(a.baseUrl).update('\n');
  return { mode, accounts: sorted.map((a) => a.name), digest: hash.digest('hex').slice(0, 32) };
}

/**
 * Judges `self` (its name, boot and terms) against `live` (every live row, its own included when its heartbeat
 * was written; a row of its name and another boot when a live process holds the name). `singleLeaderLocked`:
 * some session holds the single leader's advisory lock (a replica of the single-leader mode that publishes no
 * terms, from an older version, is leading).
 */
export function judge(
  self: { replica: string; bootId: string; terms: Terms },
  live: readonly Member[],
  singleLeaderLocked = false,
  /** the heartbeat's period, ms: a holder of this replica's name silent for more than two is waited for */
  tickMs?: number,
): Judgement {
  const unled = unledAccounts(live);
  const refuse = (reason: MismatchReason, message: string): Judgement => ({
    mismatch: { reason, message },
    members: [],
    unled,
  });
  const holder = live.find((m) => m.replica === self.replica && m.bootId !== self.bootId);
  // Two ticks, not one: a live holder's heartbeat is up to a tick old plus the time its statement took.
  if (holder && tickMs !== undefined && (holder.heartbeatAgeMs ?? 0) > 2 * tickMs)
    return {
      mismatch: {
        reason: 'duplicate_name',
        message: `the replica name ${self.replica} is still held by the row of another process (boot ${holder.bootId ?? 'unknown'}) whose heartbeat stopped: most likely this replica's previous process, killed and restarted within the lease; waiting for that row to expire (at most one lease) before taking a share. If it does not expire, a process with this name is alive but frozen: give each replica its own database.replica_name`,
        waiting: true,
      },
      members: [],
      unled,
    };
  if (holder)
    return refuse(
      'duplicate_name',
      `another live process (boot ${holder.bootId ?? 'unknown'}) already uses the replica name ${self.replica}: give each replica its own database.replica_name`,
    );
  const reference = oldest(live);
  if (reference && reference.replica !== self.replica) {
    const theirs = reference.terms!;
    if (theirs.mode !== self.terms.mode)
      return refuse(
        'mode',
        `the reference replica ${reference.replica} (the oldest live one: its terms are the membership's) runs ${describeMode(theirs.mode)} and this one ${describeMode(self.terms.mode)}: set database.share_accounts the same on every replica (the reference is not necessarily the right one: compare every replica's row in ha_replicas)`,
      );
    if (theirs.digest !== self.terms.digest)
      return refuse('accounts', `${accountDifference(self.terms.accounts, theirs.accounts, reference.replica)}`);
  }
  if (self.terms.mode === 'shared' && singleLeaderLocked)
    return refuse(
      'mode',
      'a replica without database.share_accounts holds the single leader’s lock on this database: set database.share_accounts the same on every replica',
    );
  const members = live
    .filter(
      (m) =>
        (m.terms === undefined && self.terms.mode === 'shared') ||
        (m.terms?.mode === self.terms.mode && m.terms.digest === self.terms.digest),
    )
    .map((m) => m.replica);
  return { mismatch: undefined, members: [...new Set(members)].sort(byCodeUnits), unled };
}

/** The live member whose terms are the membership's: the oldest that publishes terms. */
function oldest(live: readonly Member[]): Member | undefined {
  let best: Member | undefined;
  for (const m of live) {
    if (m.terms === undefined) continue;
    if (
      !best ||
      m.startedAt < best.startedAt ||
      (m.startedAt === best.startedAt && byCodeUnits(m.replica, best.replica) < 0)
    )
      best = m;
  }
  return best;
}

/** The accounts some live replica has that the membership's (its oldest member's) account set lacks. */
function unledAccounts(live: readonly Member[]): string[] {
  const reference = oldest(live);
  if (!reference) return [];
  const agreed = new Set(reference.terms!.accounts);
  const named = new Set(live.flatMap((m) => m.terms?.accounts ?? []));
  return [...named].filter((a) => !agreed.has(a)).sort(byCodeUnits);
}

function accountDifference(mine: readonly string[], theirs: readonly string[], replica: string): string {
  const only = (a: readonly string[], b: readonly string[]) => a.filter((x) => !b.includes(x));
  const here = only(mine, theirs);
  const there = only(theirs, mine);
  const parts = [
    ...(here.length ? [`only this replica has ${here.join(', ')}`] : []),
    ...(there.length ? [`only ${replica} has ${there.join(', ')}`] : []),
  ];
  const what = parts.length
    ? parts.join('; ')
    : 'the account names are the same but at least one account has another base_url';
  return `this replica's accounts differ from those of the reference replica ${replica} (the oldest live one: its terms are the membership's) (${what}): give every replica the same accounts (the reference is not necessarily the right one: compare every replica's row in ha_replicas)`;
}

const describeMode = (mode: HaMode) =>
  mode === 'shared' ? 'database.share_accounts (one leader per account)' : 'one leader for every account';
