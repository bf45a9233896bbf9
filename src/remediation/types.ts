/**
 * The shapes remediation modules share: what a request asks for, what a decision answers, and what the
 * engine needs to know of the inventory. Kept apart from the engine so that rules, guards, outcomes,
 * housekeeping and the scheduler depend on these types and not on each other.
 */
import type { AttackState } from '../collectors/account-state.js';
import type { ActionName } from '../config/schema.js';
import type { Decision } from '../store/decisions.js';

/** What the engine needs to know of one account's inventory (the account's state provides it, collectors/account-state.ts). */
export interface TargetDirectory {
  /** false until the first server list was read */
  readonly serversKnown: boolean;
  /** the server is in the latest server list */
  hasServer(serverId: string): boolean;
  /** the IP is in the server's record or in its firewall history */
  ownsIp(serverId: string, ip: string): boolean;
  /** the server is in the latest server list but out of scope (`servers.include`/`exclude`); absent: never */
  outOfScope?(serverId: string): boolean;
  /** servers in the latest list that are in scope (the circuit breaker's `max_fraction`); absent: 0 */
  serversInScope?(): number;
  /**
   * The server's attack state, as the power guard reads it (guards.ts `checkAttack`); absent: unknown to
   * this directory (a follower's snapshot, a test's stub).
   */
  attackState?(serverId: string): AttackState;
}

/** What the latest firewall history says of one dedicated server (declared with the state that answers it). */
export type { AttackState };

/** The actions the power guards (attack, circuit breaker, cap per server) apply to (config/actions.ts). */
export { POWER_ACTIONS } from '../config/actions.js';

/** One action to decide on. */
export interface ActionRequest {
  /** `pending`: a desired firewall change that came due (request.ts `makeRequest` of a `due` source) */
  source: 'alert' | 'operator' | 'pending';
  /** the account whose server this is: a target is (account, server_id) */
  account: string;
  action: ActionName;
  serverId: string;
  ip?: string;
  /** firewall state (`0`/`1`) or sensitivity */
  value?: string;
  /** minimum time between two executions on the target, ms */
  cooldownMs: number;
  /** firewall state: apply no earlier than this many ms from now */
  holdMs?: number;
  requireOwnedIp: boolean;
  /** the alert must resolve within this long after the call, ms (remediation/verify.ts); absent: not verified */
  verifyWithinMs?: number;
  /** the step of its rule's escalation ladder (0-based; remediation/ladder.ts) */
  ladderStep?: number;
  /**
   * the journal row whose ineffective verification this step is the climb of: deciding it takes that row's
   * mark (ladder.ts `climbMarkKey`), and finds the climb already decided when the mark is gone (guards.ts
   * `checkDelivery`)
   */
  climbOf?: number;
  /**
   * the rule an alert's request was made under: its position in `remediation.rules` and a digest of its content
   * (request.ts `ruleDigest`), journaled with the request
   */
  rule?: { index: number; digest: string };
  /**
   * identity of the delivery (alert fingerprint + startsAt + status + action, or an operator's Idempotency-Key
   * with its account and principal: request.ts `operatorKey`)
   */
  idempotencyKey?: string;
  /**
   * an operator's Idempotency-Key as versions before keys were scoped claim it (`operator:<key>`): read, so
   * that a retry across the upgrade still acts once, only the same account's and principal's claim counting
   * (guards.ts `checkDelivery`); claimed too when free (decide.ts), so that a replica of such a version, beside
   * this one in a rolling upgrade, sees the request
   */
  legacyIdempotencyKey?: string;
  /** the alert the request comes from: its identity, and its labels and status as delivered (the journal keeps them) */
  alert?: {
    alertname: string;
    fingerprint: string;
    startsAt: string;
    labels?: Readonly<Record<string, string>>;
    status?: 'firing' | 'resolved';
  };
  /** an operator's power call past the attack guard (`"force": true`); the journal row says so */
  force?: boolean;
  /** who asks: the webhook principal (alerts) or the operator principal; journaled with every row */
  principal: string;
  /** why, as the operator said it (at most 200 characters); journaled */
  reason?: string;
  /** the guards allowing, it waits for another operator's approval (`awaiting_approval`) instead of acting */
  requireApproval?: boolean;
  /** this request is the approved execution of journal row `of`, approved by `by` at `at` (ms), with `by`'s reason */
  approval?: { of: number; by: string; at: number; reason?: string };
}

/** The engine's answer to a request: its journal row, the decision and a message for the caller. */
export interface ActionDecision {
  /** the journal row */
  id: number;
  decision: Decision;
  message: string;
}

/**
 * A guard's answer (decide.ts GUARDS): the request's decision (journaled, with a message for the caller) and
 * whether it claims the delivery key — a claimed delivery is never decided again, an unclaimed one is (the
 * attack may end, a breaker close) — plus, for a cooldown, a further key claimed with it; or, for desired
 * firewall state, `defer`: the change is kept pending and due at `until` (ms since epoch), `why` saying so.
 */
export type Verdict =
  | {
      decision: Decision;
      message: string;
      claim: boolean;
      alsoClaim?: string;
      /** the cap per server escalated it after this many power actions (the engine logs it once committed) */
      escalatedAfter?: number | undefined;
    }
  | { defer: { until: number; why: string } };
