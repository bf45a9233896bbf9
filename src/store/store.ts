/**
 * The remediation state behind one asynchronous interface: the journal rows, the delivery keys (idempotency),
 * the desired firewall state, the cooldown and budget queries, and the attack-event ids. Two backends
 * implement it: SQLite (sqlite/store.ts over sqlite/journal.ts, one process, the zero-setup default) and
 * PostgreSQL (postgres/store.ts, shared by replicas). open.ts picks one from `config.database`.
 *
 * A guard decision is one `transaction(account, …)`: on PostgreSQL under a per-account transaction-level
 * advisory lock, on SQLite under BEGIN IMMEDIATE with transactions serialized in the process. Inside it use
 * only the queries it is given: on SQLite any other call waits for the transaction to end.
 */
import type {
  ApprovalSettlement,
  CircuitState,
  DesiredFirewall,
  Delivery,
  JournalEntry,
  ListFilter,
  NewEntry,
  VerificationEnd,
  VerificationRecord,
} from './rows.js';
import type { Decision } from './decisions.js';

/**
 * The attack-event ids of one account: a file under state_dir for SQLite
 * (sqlite/event-ledger.ts), a table for PostgreSQL (postgres/event-ledger.ts). `load()` has no side effect: it may be called again (a follower that becomes
 * leader reads what the previous leader left).
 */
export interface EventLedger {
  /** The ids the previous run left, by `type/id`; a `problem` when they could not be read (they count again, once). */
  load(): Promise<{ services: Map<string, Set<string>>; problem?: string }>;
  /** Replaces the ids with `services` (`type/id` → ids), atomically. */
  save(services: ReadonlyMap<string, ReadonlySet<string>>): Promise<void>;
}

/** The queries, each a promise; every failure is a JournalError (the action endpoints answer 503). */
export interface StateQueries {
  /** Inserts a journal row and returns its id. */
  insert(entry: NewEntry): Promise<number>;
  /** Completes a row after its upstream call (or a later decision); `at` in ms. */
  complete(
    id: number,
    update: { decision: Decision; upstreamOutcome?: string | null; message?: string | null; at: number },
  ): Promise<void>;
  /**
   * Records that `key` was acted on by row `actionId`; false when it already was (the unique key decides).
   * Call it inside the transaction that checked `delivery(key)`.
   */
  claimDelivery(key: string, digest: string, actionId: number, at: number): Promise<boolean>;
  /** The claim of `key`, if any; `seenAt` (ms) marks it as seen again, which keeps it from being pruned. */
  delivery(key: string, seenAt?: number): Promise<Delivery | undefined>;
  /**
   * Drops the claim of `key` if row `actionId` still holds it (a request that expired unapproved: the delivery
   * may ask again); false when another row holds it or none does. Call it inside the transaction that claims anew.
   */
  releaseDelivery(key: string, actionId: number): Promise<boolean>;
  /**
   * The claims of keys beginning with `prefix` held by rows of `account`: the row and when the key was claimed
   * (ms). With `since` (ms), only those claimed or seen since (an index on seen_at); without, a scan of every
   * delivery key (remediation/engine.ts: once when a replica starts leading).
   */
  claimsOf(account: string, prefix: string, since?: number): Promise<Array<{ actionId: number; createdAt: number }>>;
  /** Upstream calls made (or maybe made) for `account` since `since` (ms): the account's budget use. */
  sentSince(account: string, since: number): Promise<number>;
  /**
   * Distinct servers of `account` with power requests (any decision but `duplicate`) created since `since`
   * (ms): the circuit breaker's count.
   */
  powerServersSince(account: string, since: number): Promise<string[]>;
  /** Power actions on the server sent, maybe sent or decided in dry run since `since` (ms): the cap per server. */
  powerActionsOn(account: string, serverId: string, since: number): Promise<number>;
  /** The circuit breaker of `account` (closed, never closed, when nothing was written). */
  circuit(account: string): Promise<CircuitState>;
  /** Opens the breaker of `account` at `at` (ms), with why. */
  openCircuit(account: string, at: number, message: string): Promise<void>;
  /** Closes the breaker of `account` at `at` (ms), starting a new window; true when it was open. */
  closeCircuit(account: string, at: number): Promise<boolean>;
  /** Time (ms) of the last upstream call of `action` on the target, if any (cooldown). */
  lastSent(account: string, action: string, serverId: string, ip: string | null): Promise<number | undefined>;
  get(id: number): Promise<JournalEntry | undefined>;
  /**
   * Settles row `id` if it is still `awaiting_approval` (approved, denied or expired); false when it is not
   * (another approver or replica settled it first: the database decides, once).
   */
  settleApproval(id: number, settlement: ApprovalSettlement): Promise<boolean>;
  /**
   * Puts row `row.id` back to `awaiting_approval`, its message and completion time as they were (`row`), if it
   * is still `approved` by `approver` at `approvedAt` (ms) with nothing decided since: an approval whose
   * execution could not be decided (NoLeaderError, its transaction rolled back) is not spent. False when the
   * row is not so (the database decides, once).
   */
  reopenApproval(
    row: Pick<JournalEntry, 'id' | 'message' | 'completedAt'>,
    approver: string,
    approvedAt: number,
  ): Promise<boolean>;
  /** The rows of `account` awaiting approval, oldest first (at most 1000). */
  awaitingApproval(account: string): Promise<JournalEntry[]>;
  /** The executed rows of `account` still verifying (a `verify_within` and no outcome), oldest first (at most 1000). */
  verifying(account: string): Promise<JournalEntry[]>;
  /**
   * Ends the verification of row `id` with `outcome` at `at` (ms) if it is still verifying; false when it is
   * not (another replica, or the resolved webhook, ended it first: the database decides, once). `evidence`: what
   * it settled on, a sentence (JournalEntry `verificationEvidence`).
   */
  settleVerification(id: number, outcome: VerificationEnd, at: number, evidence: string): Promise<boolean>;
  /** Newest first, optionally for one account, server, action, principal, decision, approver and/or since a time; `limit` rows at most. */
  list(filter: ListFilter): Promise<JournalEntry[]>;
  /**
   * Rows of `account` left `executing` by a crash, created before `startedBefore` (ms; default: all), become
   * `unknown` (completed at `at`); returns them. With a shared store another replica's call may still be in
   * flight: only rows older than the longest possible call are recovered (EngineDeps.interruptedAfterMs).
   */
  recoverInterrupted(account: string, at: number, startedBefore?: number): Promise<JournalEntry[]>;
  /** Rows per action and decision (rows still `executing` left out), to rebuild counters at start. */
  decisionCounts(account: string): Promise<Array<{ action: string; decision: Decision; count: number }>>;
  /** The ended verifications (`verified`, `ineffective`), to rebuild their counter and histogram at start. */
  verificationRecords(account: string): Promise<VerificationRecord[]>;
  /** Time (ms) of the latest `failed` and `unknown` row per action. */
  lastFailures(account: string): Promise<Array<{ action: string; decision: 'failed' | 'unknown'; at: number }>>;
  /**
   * Deletes up to `batch` rows created before `before` (ms), and delivery keys not seen since then; never a row
   * still `executing` or one a remaining key points to. Returns the rows deleted.
   */
  prune(before: number, batch: number): Promise<number>;
  desired(account: string, serverId: string, ip: string): Promise<DesiredFirewall | undefined>;
  /** Every IP of `account` with a desired state. */
  allDesired(account: string): Promise<DesiredFirewall[]>;
  /** Pending changes of `account` due at or before `at` (ms), oldest due first. */
  dueDesired(account: string, at: number): Promise<DesiredFirewall[]>;
  pendingCount(account: string): Promise<number>;
  saveDesired(d: DesiredFirewall): Promise<void>;
  /**
   * Marks the desired state of `account`'s (server, IP) pairs not owned (server unlisted, or the IP no longer
   * its) as missing since `at` (keeping an earlier mark), clears the mark of owned ones, deletes the rows missing
   * since before `retireBefore` and returns them.
   */
  retireMissing(
    account: string,
    isOwned: (serverId: string, ip: string) => boolean,
    at: number,
    retireBefore: number,
  ): Promise<Array<{ serverId: string; ip: string }>>;
}

/** The method names of StateQueries, for adapters that forward them. */
export const QUERY_METHODS = [
  'insert',
  'complete',
  'claimDelivery',
  'delivery',
  'releaseDelivery',
  'claimsOf',
  'sentSince',
  'lastSent',
  'powerServersSince',
  'powerActionsOn',
  'circuit',
  'openCircuit',
  'closeCircuit',
  'get',
  'settleApproval',
  'reopenApproval',
  'awaitingApproval',
  'verifying',
  'settleVerification',
  'list',
  'recoverInterrupted',
  'decisionCounts',
  'verificationRecords',
  'lastFailures',
  'prune',
  'desired',
  'allDesired',
  'dueDesired',
  'pendingCount',
  'saveDesired',
  'retireMissing',
] as const satisfies ReadonlyArray<keyof StateQueries>;
// Every query is listed: a method added to StateQueries and not here fails to compile.
const listed: [Exclude<keyof StateQueries, (typeof QUERY_METHODS)[number]>] extends [never] ? true : false = true;
void listed;

export interface StateStore extends StateQueries {
  /** `sqlite` or `postgres` */
  readonly kind: 'sqlite' | 'postgres';
  /**
   * Why the store is not open (remediation disabled; the action endpoints answer 503), or undefined when it
   * is. A SQLite journal that failed to open stays so until a restart; PostgreSQL is retried until it answers.
   */
  readonly unavailable: string | undefined;
  /** What is wrong now (not open, or the last statement failed), for /readyz and `baremetal_journal_up`. */
  readonly problem: string | undefined;
  /** True when open and the last statement (or health check) succeeded. */
  healthy(): boolean;
  /** Resolves true once the store is open, false when it never will be (it failed for good, or was closed). */
  readonly opened: Promise<boolean>;
  /**
   * Runs `fn` as one transaction that serializes every decision of `account` against every other decision of
   * it, across processes and replicas; `fn` must use only the queries it is given. Rolled back when `fn`
   * throws. Throws JournalError. `leader`: a write only the account's leader may make (the remediation ticker's):
   * with shared accounts it is refused (StaleLeaseError, nothing written) unless this replica's lease is current.
   */
  transaction<T>(account: string, fn: (tx: StateQueries) => Promise<T>, options?: { leader?: boolean }): Promise<T>;
  /** The attack-event ids of `account` (persisted firewall event ids). */
  eventLedger(account: string): EventLedger;
  /** Closes the database (the PostgreSQL pool ends); idempotent. */
  close(): Promise<void>;
}

/**
 * StateQueries over `target` (an object with every query method, synchronous or not), each call made through
 * `through` (a queue, or directly).
 */
export function forwardQueries(target: object, through: (call: () => unknown) => Promise<unknown>): StateQueries {
  const out: Record<string, unknown> = {};
  for (const name of QUERY_METHODS) {
    const method = (target as Record<string, (...args: unknown[]) => unknown>)[name]!;
    out[name] = (...args: unknown[]) => through(() => method.apply(target, args));
  }
  return out as unknown as StateQueries;
}
