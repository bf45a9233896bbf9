/**
 * Which live replica leads each account: rendezvous (highest-random-weight) hashing with bounded loads. Every
 * (account, replica) pair gets a score from a hash of both names; the pairs are taken best score first, and an
 * account goes to the first replica of its ranking that still has room, a replica holding at most
 * ⌈accounts ÷ replicas⌉. A pure function of the two sets: every replica that reads the same live set from
 * PostgreSQL computes the same answer, with no coordination but the set itself.
 *
 * Why this shape: plain hashing (each account to its best replica) leaves 6 accounts on 3 replicas unbalanced
 * about a third of the time; the cap bounds the load. A replica that joins or leaves changes the ranking of no
 * pair that does not involve it, so only the accounts it takes or gives up move, plus the few the cap pushes
 * along (about 1/N of the accounts, not all: test/unit/ha/assignment.test.ts measures it).
 */
import { createHash } from 'node:crypto';
import { byCodeUnits } from '../order.js';

/** The score of `account` on `replica`: 64 bits of SHA-256 over both names (stable across versions). */
export function pairScore(account: string, replica: string): bigint {
  return createHash('sha256').update(account).update('\0').update(replica).digest().readBigUInt64BE(0);
}

/** The most accounts one replica leads when `accounts` are shared among `replicas`. */
export function capacity(accounts: number, replicas: number): number {
  return replicas === 0 ? 0 : Math.ceil(accounts / replicas);
}

/**
 * The replica that leads each account (account → replica), over the distinct names given; empty when there is
 * no replica. Deterministic: the order of the inputs does not matter.
 */
export function assignAccounts(accounts: Iterable<string>, replicas: Iterable<string>): Map<string, string> {
  const accountSet = [...new Set(accounts)];
  const replicaSet = [...new Set(replicas)];
  const assigned = new Map<string, string>();
  if (replicaSet.length === 0) return assigned;
  const cap = capacity(accountSet.length, replicaSet.length);
  const pairs: Array<{ account: string; replica: string; score: bigint }> = [];
  for (const account of accountSet)
    for (const replica of replicaSet) pairs.push({ account, replica, score: pairScore(account, replica) });
  // Best score first; equal scores (a 2^-64 chance) ordered by name, so the result never depends on input order.
  pairs.sort(
    (a, b) =>
      (a.score === b.score ? 0 : a.score > b.score ? -1 : 1) ||
      byCodeUnits(a.account, b.account) ||
      byCodeUnits(a.replica, b.replica),
  );
  const load = new Map(replicaSet.map((r) => [r, 0]));
  for (const { account, replica } of pairs) {
    if (assigned.has(account) || load.get(replica)! >= cap) continue;
    assigned.set(account, replica);
    load.set(replica, load.get(replica)! + 1);
    if (assigned.size === accountSet.length) break;
  }
  return assigned;
}

/** The accounts `replica` leads in `assignment`, in name order. */
export function accountsOf(assignment: ReadonlyMap<string, string>, replica: string): string[] {
  return [...assignment]
    .filter(([, r]) => r === replica)
    .map(([account]) => account)
    .sort(byCodeUnits);
}
