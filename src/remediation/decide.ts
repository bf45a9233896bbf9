/**
 * The guard pipeline of one request: GUARDS, one ordered list of guards with one signature, walked inside one
 * journal transaction for every request — an alert's (through its rule), an operator's, an approval's — until
 * one answers; the answer is journaled (the row assembled once, in `pending`) and, when it claims, the
 * delivery key is claimed with it. No guard answering means every guard allows: the request is sent (engine.ts
 * executes it). Admission in the Kubernetes sense: one interface, each guard one entry, the order declared
 * here once. The checks themselves are in guards.ts; docs/architecture.md says how to add one.
 */
import type { Logger } from 'pino';
import type { Config } from '../config/types.js';
import { journalRow, labelsJson, type NewEntry } from '../store/rows.js';
import type { StateQueries } from '../store/store.js';
import type { Decision } from '../store/decisions.js';
import type { Decided, DecideFn, DesiredFirewallState } from './desired-firewall.js';
import {
  budgetLeft,
  checkAttack,
  checkCap,
  checkCircuit,
  checkCooldown,
  checkDelivery,
  checkTarget,
  type Denial,
} from './guards.js';
import { type AlertReader, checkOutageGate } from './outage-gate.js';
import { requestDigest } from './outcome.js';
import { type ActionRequest, POWER_ACTIONS, type TargetDirectory } from './types.js';

/** What the pipeline reads: the engine's dependencies (engine.ts `EngineDeps`) it needs. */
export interface GuardDeps {
  account: string;
  logger: Logger;
  targets: TargetDirectory;
  config: Config['remediation'];
  /** the period of `schedules.firewall`, ms */
  firewallPeriodMs: () => number;
  /** Alertmanager's alerts, which the outage gate reads (absent: none configured) */
  alertmanager?: AlertReader | undefined;
  /** the guards walked (default GUARDS): a test plants one here to see the order every path walks */
  guards?: readonly Guard[];
}

/** One request made ready for deciding: its journal row, its digest, and how its messages read. */
export interface Pending {
  req: ActionRequest;
  /** ms since epoch */
  now: number;
  entry: NewEntry;
  digest: string;
  needsApproval: boolean;
  /** the message of a row awaiting approval */
  awaiting: string;
  /** A forced power call says so in its row's message, whatever the decision. */
  note: (message: string) => string;
}

/** Builds the journal row (decision `executing`) and the rest of what deciding `req` at `now` (ms) needs. */
export function pending(req: ActionRequest, account: string, config: Config['remediation'], now: number): Pending {
  const forced = req.force === true && POWER_ACTIONS.has(req.action);
  const entry = journalRow({
    account,
    createdAt: now,
    source: req.source,
    action: req.action,
    serverId: req.serverId,
    ip: req.ip ?? null,
    value: req.value ?? null,
    alertname: req.alert?.alertname ?? null,
    fingerprint: req.alert?.fingerprint ?? null,
    startsAt: req.alert?.startsAt ?? null,
    labels: labelsJson(req.alert?.labels),
    alertStatus: req.alert?.status ?? null,
    decision: 'executing',
    principal: req.principal,
    reason: req.reason ?? null,
    approver: req.approval?.by ?? null,
    approverReason: req.approval?.reason ?? null,
    approvedAt: req.approval?.at ?? null,
    forced,
    // What the request was made with: its approval runs this, never a rule looked up again (request.ts).
    ruleIndex: req.rule?.index ?? null,
    ruleDigest: req.rule?.digest ?? null,
    cooldownMs: req.cooldownMs,
    holdMs: req.holdMs ?? null,
    requireOwnedIp: req.requireOwnedIp,
    verifyWithinMs: req.verifyWithinMs ?? null,
    ladderStep: req.ladderStep ?? null,
  });
  return {
    req,
    now,
    entry,
    digest: requestDigest(req),
    needsApproval: req.requireApproval === true && req.approval === undefined,
    awaiting: `awaiting approval by an operator other than ${req.principal} until ${new Date(now + config.approvalTimeoutMs).toISOString()}; nothing sent`,
    note: (message) => (forced ? (message ? `${FORCED}; ${message}` : FORCED) : message),
  };
}

/** What a guard sees: one request being decided, inside the decision's transaction. */
export interface GuardContext {
  deps: GuardDeps;
  /** the request, its journal row, its digest, whether it needs approval */
  p: Pending;
  /** the transaction's queries: whatever a guard reads or writes is part of the decision */
  tx: StateQueries;
}

/**
 * A guard's answer: the request's decision (journaled, with a message for the caller) and whether it claims
 * the delivery key — a claimed delivery is never decided again, an unclaimed one is (the attack may end, a
 * breaker close) — plus, for a cooldown, a further key claimed with it; or `desiredState`: the request becomes
 * desired firewall state, which defers a change rather than denying it (desired-firewall.ts).
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
  | { desiredState: true };

/** One guard: the actions it applies to (absent: every action) and its check, undefined to let the request through. */
export interface Guard {
  /** named in docs/architecture.md and in the tests that walk the list */
  name: string;
  applies?: (req: ActionRequest) => boolean;
  check: (ctx: GuardContext) => Verdict | undefined | Promise<Verdict | undefined>;
}

const isPower = (req: ActionRequest) => POWER_ACTIONS.has(req.action);
const isFirewallState = (req: ActionRequest) => req.action === 'firewall_state';
const deny = (denial: Denial | undefined, claim = false): Verdict | undefined =>
  denial && { decision: denial.decision, message: denial.message, claim };

/** A request that needs a second operator waits for one (claimed: approvals.ts runs it once approved). */
const awaitApproval = ({ p }: GuardContext): Verdict | undefined =>
  p.needsApproval ? { decision: 'awaiting_approval', message: p.awaiting, claim: true } : undefined;

/**
 * The guards, in the order they run. A denial before the claim (delivery, target, attack, breaker) leaves the
 * delivery unclaimed; a firewall-state request becomes desired state after its approval, and skips the guards
 * after that one (desired state has its own window, dry run and budget: desired-firewall.ts).
 */
export const GUARDS: readonly Guard[] = [
  {
    name: 'delivery',
    check: async ({ tx, p }) => deny(await checkDelivery(tx, p.req, p.digest, p.now)),
  },
  { name: 'target', check: ({ deps, p }) => deny(checkTarget(deps.targets, p.req)) },
  {
    name: 'attack',
    applies: isPower,
    check: ({ deps, p }) => deny(checkAttack(deps.targets, p.req, deps.config.safety, p.now, deps.firewallPeriodMs())),
  },
  {
    name: 'outage_gate',
    applies: isPower,
    check: async ({ deps, p }) =>
      deny(await checkOutageGate(deps.alertmanager, deps.config.safety.blockWhileFiring, p.req.serverId)),
  },
  {
    name: 'circuit_breaker',
    applies: isPower,
    check: async ({ deps, p, tx }) => {
      const open = await checkCircuit(tx, p.req, deps.config.safety, deps.targets.serversInScope?.() ?? 0, p.now);
      if (open) deps.logger.error({ action: p.req.action, server_id: p.req.serverId }, open.message);
      return deny(open);
    },
  },
  {
    // A firewall change that needs a second operator becomes desired state only once approved.
    name: 'approval_of_desired_state',
    applies: isFirewallState,
    check: awaitApproval,
  },
  { name: 'desired_state', applies: isFirewallState, check: () => ({ desiredState: true }) },
  {
    name: 'cooldown',
    check: async ({ tx, p }) => {
      const { req, now } = p;
      const cooling = await checkCooldown(tx, req, now);
      if (!cooling) return undefined;
      // An alert delivered again inside this cooldown (to another replica, or retried) is a duplicate: one
      // cooldown decision per alert and cooldown, claimed under a key naming the cooldown's start, so the
      // alert still acts once the cooldown is over.
      const key =
        req.source === 'alert' && req.idempotencyKey !== undefined
          ? `${req.idempotencyKey}:cooldown:${cooling.since}`
          : undefined;
      const seen = key === undefined ? undefined : await tx.delivery(key, now);
      if (seen)
        return {
          decision: 'duplicate',
          message: `already decided on this alert in this cooldown (journal entry ${seen.actionId})`,
          claim: false,
        };
      return { decision: cooling.decision, message: cooling.message, claim: false, ...(key ? { alsoClaim: key } : {}) };
    },
  },
  {
    // Claimed: this alert's episode is handed to a person (BaremetalRemediationEscalated).
    name: 'cap_per_server',
    applies: isPower,
    check: async ({ deps, p, tx }) => {
      const capped = await checkCap(tx, p.req, deps.config.safety, p.now);
      return capped && { ...deny(capped, true)!, escalatedAfter: capped.count };
    },
  },
  {
    name: 'dry_run',
    check: ({ deps }) =>
      deps.config.dryRun ? { decision: 'dry_run', message: 'dry run: nothing sent upstream', claim: true } : undefined,
  },
  {
    name: 'budget',
    check: async ({ deps, p, tx }) => {
      const { config, account, logger } = deps;
      if ((await budgetLeft(tx, account, config.budgetPerHour, p.now)) > 0) return undefined;
      logger.warn(
        { action: p.req.action, server_id: p.req.serverId, principal: p.req.principal },
        'remediation budget exhausted: action denied',
      );
      const message = `budget of ${config.budgetPerHour} actions per hour is used up`;
      return { decision: 'denied_budget', message, claim: false };
    },
  },
  {
    // Every guard before allowed it: a request that needs a second operator waits for one (approvals.ts).
    name: 'approval',
    check: awaitApproval,
  },
];

/**
 * Decides on `p` in transaction `tx`: walks the guards (GUARDS unless `deps.guards`) in order until one answers, writes the
 * row and claims the delivery key. Returns the decision, whether the request became desired firewall
 * state and, when the cap per server escalated it, the power actions the cap counted (`escalatedAfter`; the
 * engine logs it once the transaction has committed). Throws ClaimConflict when the key was claimed concurrently (the caller rolls back and decides
 * again), JournalError.
 */
export async function decideIn(
  deps: GuardDeps,
  firewall: DesiredFirewallState,
  p: Pending,
  tx: StateQueries,
): Promise<Decided & { desiredRecorded: boolean; escalatedAfter?: number | undefined }> {
  const { req, now, digest } = p;
  const decide: DecideFn = async (decision, message, claim) => {
    const id = await tx.insert({ ...p.entry, decision, message: p.note(message) });
    if (claim && req.idempotencyKey !== undefined && !(await tx.claimDelivery(req.idempotencyKey, digest, id, now)))
      throw new ClaimConflict();
    return decision === 'executing'
      ? { id, decision: 'executed', message: '', send: true }
      : { id, decision, message, send: false };
  };
  const ctx: GuardContext = { deps, p, tx };
  for (const guard of deps.guards ?? GUARDS) {
    if (guard.applies && !guard.applies(req)) continue;
    const verdict = await guard.check(ctx);
    if (verdict === undefined) continue;
    if ('desiredState' in verdict) {
      const { recorded, ...decided } = await firewall.decide(req, now, decide, tx);
      return { ...decided, desiredRecorded: recorded };
    }
    const decided = await decide(verdict.decision, verdict.message, verdict.claim);
    if (verdict.alsoClaim !== undefined && !(await tx.claimDelivery(verdict.alsoClaim, digest, decided.id, now)))
      throw new ClaimConflict();
    return { ...decided, desiredRecorded: false, escalatedAfter: verdict.escalatedAfter };
  }
  return { ...(await decide('executing', '', true)), desiredRecorded: false };
}

/** What the journal row of a forced power call says first. */
const FORCED = 'forced by the operator past the attack guard';

/** A delivery key claimed by a concurrent transaction: the decision is rolled back and made again. */
export class ClaimConflict extends Error {
  constructor() {
    super('the delivery key was claimed concurrently');
  }
}
