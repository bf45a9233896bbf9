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
import type { DesiredFirewall, GateRead, NewEntry } from '../store/rows.js';
import type { StateQueries } from '../store/store.js';
import type { Decision } from '../store/decisions.js';
import { BUDGET_RETRY_MS, type DesiredFirewallState, dueAtWhy } from './desired-firewall.js';
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
import { type AlertReader, checkOutageGate, type OutageRead, readOutage } from './outage-gate.js';
import { DEFAULT_RESEND_INTERVAL_MS, heldDenial, resolutionOf, resolvedAt } from './episode.js';
import { requestDigest } from './outcome.js';
import { makeRequest, requestRow } from './request.js';
import { type ActionDecision, type ActionRequest, POWER_ACTIONS, type TargetDirectory, type Verdict } from './types.js';

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
  /** Alertmanager's alerts for the outage gate, read before the transaction (`prepare`); absent: not read */
  outage?: OutageRead | undefined;
}

/** Builds the journal row (decision `executing`, request.ts `requestRow`) and the rest of what deciding `req` at `now` (ms) needs. */
export function pending(req: ActionRequest, config: Config['remediation'], now: number): Pending {
  const entry = requestRow(req, now);
  // Whether the call is forced is the row's (requestRow decides it once).
  const forced = entry.forced === true;
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

/**
 * `pending` for `req`, with what its guards read outside the transaction read first: Alertmanager's alerts
 * for the outage gate (a power request with a gate configured), so that a slow Alertmanager holds no
 * transaction (on SQLite every decision waits for the one in progress). `now` is taken after the read.
 */
export async function prepare(req: ActionRequest, deps: GuardDeps, now: () => number): Promise<Pending> {
  const outage = await readOutage(
    deps.alertmanager,
    deps.config.safety.blockWhileFiring,
    isPower(req),
    now,
    deps.config.alertmanager?.resendIntervalMs ?? DEFAULT_RESEND_INTERVAL_MS,
  );
  return { ...pending(req, deps.config, now()), ...(outage ? { outage } : {}) };
}

/** What a guard sees: one request being decided, inside the decision's transaction. */
export interface GuardContext {
  deps: GuardDeps;
  /** the request, its journal row, its digest, whether it needs approval */
  p: Pending;
  /** the transaction's queries: whatever a guard reads or writes is part of the decision */
  tx: StateQueries;
  /** desired firewall state: its guard records a firewall change here, the later guards read it */
  firewall: DesiredFirewallState;
  /** a firewall change's desired state once recorded (or, for a due change, as listed) */
  desired?: DesiredFirewall;
  /** the latest `until` a guard deferred a firewall change to: the guards after it do not judge it now */
  deferral?: { until: number; why: string };
  /** what the outage gate read, once its guard ran: the row decided then records it (its `gate`) */
  gate?: GateRead;
}

export type { Verdict };

/** One guard: the requests it applies to (absent: every request) and its check, undefined to let the request through. */
export interface Guard {
  /** named in docs/architecture.md and in the tests that walk the list */
  name: string;
  applies?: (req: ActionRequest) => boolean;
  check: (ctx: GuardContext) => Verdict | undefined | Promise<Verdict | undefined>;
}

const isPower = (req: ActionRequest) => POWER_ACTIONS.has(req.action);
const isFirewallState = (req: ActionRequest) => req.action === 'firewall_state';
/** A request as it is asked for: not a desired firewall change come due (its target was judged when asked). */
const isAsked = (req: ActionRequest) => req.source !== 'pending';
/** A request made for a firing alert's episode (a rule's, an approval of one, a ladder's step). */
const ofFiringEpisode = (req: ActionRequest) => req.alert !== undefined && req.alert.status !== 'resolved';
const deny = (denial: Denial | undefined, claim = false): Verdict | undefined =>
  denial && { decision: denial.decision, message: denial.message, claim };

/** A request that needs a second operator waits for one (claimed: approvals.ts runs it once approved). */
const awaitApproval = ({ p }: GuardContext): Verdict | undefined =>
  p.needsApproval ? { decision: 'awaiting_approval', message: p.awaiting, claim: true } : undefined;

/**
 * The guards, in the order they run, for every path: an alert's request, an operator's, an approval's, and a
 * desired firewall change that came due (source `pending`). A denial before the claim (delivery, target,
 * attack, breaker) leaves the delivery unclaimed. A firewall-state request is recorded as desired state (after
 * its approval) and then deferred rather than denied: by its hold or backoff, by the cooldown (the API's
 * window), by the budget; a deferred change comes due later and walks the list again.
 */
export const GUARDS: readonly Guard[] = [
  {
    // Nothing is sent for a resolved episode (episode.ts): an approval's execution, a ladder's next step, a
    // firing delivery repeated after the resolution. First, so that a repeat reads `resolved`, not `duplicate`;
    // nothing claimed (the delivery's key may be claimed already).
    name: 'episode',
    applies: ofFiringEpisode,
    check: async ({ tx, p }) => {
      const resolution = await resolutionOf(tx, p.entry);
      return resolution && { decision: 'resolved', message: `${resolvedAt(resolution)}; nothing sent`, claim: false };
    },
  },
  {
    name: 'delivery',
    check: async ({ tx, p }) => deny(await checkDelivery(tx, p.req, p.digest, p.now)),
  },
  {
    // An approver's denial holds for the same alert labels for the rule's cooldown, whatever the episode
    // (episode.ts `heldDenial`); nothing claimed: a repeat after the cooldown asks again.
    name: 'denial',
    applies: ofFiringEpisode,
    check: async ({ tx, p }) => {
      const denied = await heldDenial(tx, p.req, p.now);
      if (denied === undefined) return undefined;
      const at = denied.completedAt ?? denied.createdAt;
      const until = new Date(at + p.req.cooldownMs).toISOString();
      return {
        decision: 'denied_by_approver',
        message: `denied by ${denied.approver} at ${new Date(at).toISOString()} for these alert labels (journal entry ${denied.id}); the denial holds until ${until} (the rule's cooldown); nothing sent`,
        claim: false,
      };
    },
  },
  { name: 'target', applies: isAsked, check: ({ deps, p }) => deny(checkTarget(deps.targets, p.req)) },
  {
    name: 'attack',
    applies: isPower,
    check: ({ deps, p }) => deny(checkAttack(deps.targets, p.req, deps.config.safety, p.now, deps.firewallPeriodMs())),
  },
  {
    name: 'outage_gate',
    applies: isPower,
    // Reads what `prepare` read before the transaction: no I/O inside it. What it read is kept for the row,
    // whichever guard decides it (the gate's denial, a later guard, the call).
    check: (ctx) => {
      const checked = checkOutageGate(ctx.p.outage, ctx.deps.config.safety.blockWhileFiring, ctx.p.req.serverId);
      if (checked === undefined) return undefined;
      ctx.gate = checked.read;
      return deny(checked.denial);
    },
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
  {
    // Records the change as desired state (desired-firewall.ts): nothing to do, held by dry run, or deferred.
    name: 'desired_state',
    applies: isFirewallState,
    check: async (ctx) => {
      const { desired, verdict } = await ctx.firewall.admit(ctx.p.req, ctx.p.now, ctx.tx, ctx.desired);
      if (desired) ctx.desired = desired;
      return verdict;
    },
  },
  {
    name: 'cooldown',
    check: async (ctx) => {
      const { tx, p } = ctx;
      const { req, now } = p;
      // A firewall change's window counts from its last call or its last applied state, whichever is later.
      const cooling = await checkCooldown(tx, req, now, ctx.desired);
      if (!cooling) return undefined;
      if (ctx.desired) {
        const until = cooling.since! + ctx.desired.cooldownMs;
        return { defer: { until, why: dueAtWhy(until) } };
      }
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
    check: async ({ deps, p, tx, desired, deferral }) => {
      // A change deferred already is judged on the budget when it comes due.
      if (deferral) return undefined;
      const { config, account, logger } = deps;
      if ((await budgetLeft(tx, account, config.budgetPerHour, p.now)) > 0) return undefined;
      logger.warn(
        { action: p.req.action, server_id: p.req.serverId, ip: p.req.ip, principal: p.req.principal },
        desired
          ? 'remediation budget exhausted: pending firewall change waits'
          : 'remediation budget exhausted: action denied',
      );
      if (desired) return { defer: { until: p.now + BUDGET_RETRY_MS, why: 'budget used up; retried when it allows' } };
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

/** What deciding found: a final decision, or a claimed row whose call is to be made (`send`). */
export type Decided = ActionDecision & { send: boolean };

/**
 * Decides on `p` in transaction `tx`: walks the guards (GUARDS unless `deps.guards`) in order until one
 * answers with a decision, writes the row (the one place a decision's row is written) and claims the delivery
 * key. A deferral does not stop the walk: the latest one wins, and the change is saved due then and journaled
 * `deferred` — or, for a due change (`due`, as listed), only saved due then: the result is undefined.
 * Returns the decision, whether the request was recorded as desired firewall state and, when the cap per
 * server escalated it, the power actions it counted (`escalatedAfter`; the engine logs it once committed).
 * Throws ClaimConflict when the key was claimed concurrently (the caller rolls back and decides again),
 * JournalError.
 */
export async function decideIn(
  deps: GuardDeps,
  firewall: DesiredFirewallState,
  p: Pending,
  tx: StateQueries,
): Promise<Decided & { desiredRecorded: boolean; escalatedAfter?: number | undefined }> {
  // Only a due change's walk can end without a row.
  return (await walk(deps, firewall, p, tx))!;
}

/**
 * Decides on desired firewall change `d`, listed as due at `now` (ms), in `tx`: the same walk (source
 * `pending`). Undefined when a guard deferred it (saved due later, no row); else its row, `send` when its
 * call is to be made. Throws JournalError.
 */
export function decideDue(
  deps: GuardDeps,
  firewall: DesiredFirewallState,
  d: DesiredFirewall,
  now: number,
  tx: StateQueries,
): Promise<Decided | undefined> {
  return walk(deps, firewall, pending(makeRequest({ kind: 'due', desired: d }), deps.config, now), tx, d);
}

async function walk(
  deps: GuardDeps,
  firewall: DesiredFirewallState,
  p: Pending,
  tx: StateQueries,
  due?: DesiredFirewall,
): Promise<(Decided & { desiredRecorded: boolean; escalatedAfter?: number | undefined }) | undefined> {
  const { req, now, digest } = p;
  const ctx: GuardContext = { deps, p, tx, firewall, ...(due ? { desired: due } : {}) };
  const decide = async (decision: Decision | 'executing', message: string, claim: boolean): Promise<Decided> => {
    const gate = ctx.gate === undefined ? {} : { gate: ctx.gate };
    const id = await tx.insert({ ...p.entry, decision, message: p.note(message), ...gate });
    if (claim && req.idempotencyKey !== undefined && !(await tx.claimDelivery(req.idempotencyKey, digest, id, now)))
      throw new ClaimConflict();
    // The unscoped key too, first come first kept: a replica of an older version (a rolling upgrade) sees it.
    if (claim && req.legacyIdempotencyKey !== undefined)
      await tx.claimDelivery(req.legacyIdempotencyKey, digest, id, now);
    return decision === 'executing'
      ? { id, decision: 'executed', message: '', send: true }
      : { id, decision, message, send: false };
  };
  const recorded = () => ctx.desired !== undefined && due === undefined;
  for (const guard of deps.guards ?? GUARDS) {
    if (guard.applies && !guard.applies(req)) continue;
    const verdict = await guard.check(ctx);
    if (verdict === undefined) continue;
    if ('defer' in verdict) {
      if (ctx.deferral === undefined || verdict.defer.until > ctx.deferral.until) ctx.deferral = verdict.defer;
      continue;
    }
    const decided = await decide(verdict.decision, verdict.message, verdict.claim);
    if (verdict.alsoClaim !== undefined && !(await tx.claimDelivery(verdict.alsoClaim, digest, decided.id, now)))
      throw new ClaimConflict();
    return { ...decided, desiredRecorded: recorded(), escalatedAfter: verdict.escalatedAfter };
  }
  if (ctx.deferral !== undefined) {
    await tx.saveDesired({ ...ctx.desired!, dueAt: ctx.deferral.until });
    if (due) return undefined;
    const decided = await decide('deferred', `state ${req.value} pending: ${ctx.deferral.why}`, true);
    return { ...decided, desiredRecorded: recorded() };
  }
  return { ...(await decide('executing', '', true)), desiredRecorded: recorded() };
}

/** What the journal row of a forced power call says first. */
const FORCED = 'forced by the operator past the attack guard';

/** A delivery key claimed by a concurrent transaction: the decision is rolled back and made again. */
export class ClaimConflict extends Error {
  constructor() {
    super('the delivery key was claimed concurrently');
  }
}
