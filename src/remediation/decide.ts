/**
 * The guard pipeline of one request: the policy that decides, inside one journal transaction, whether a
 * request is sent, deferred, held for approval or denied (engine.ts runs it and executes the result). The
 * order: idempotency (`checkDelivery`), target (`checkTarget`); a power action then through the attack
 * corroboration (`checkAttack`, unless an operator forces it) and the account's circuit breaker
 * (`checkCircuit`); a firewall-state request becomes desired state (desired-firewall.ts); any other action
 * goes on through cooldown (`checkCooldown`), the cap per server (`checkCap`, power actions), dry run, the
 * hourly budget (`budgetLeft`) and, last, a second operator's approval. Every check is in guards.ts.
 */
import type { Logger } from 'pino';
import type { Config } from '../config/types.js';
import { labelsJson, type NewEntry } from '../store/rows.js';
import type { StateQueries } from '../store/store.js';
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
  const entry: NewEntry = {
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
  };
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
 * Decides on `p` in transaction `tx`: runs the guards, writes the row and claims the delivery key. Returns the
 * decision and whether the request became desired firewall state. Throws ClaimConflict when the key was
 * claimed concurrently (the caller rolls back and decides again), JournalError.
 */
export async function decideIn(
  deps: GuardDeps,
  firewall: DesiredFirewallState,
  p: Pending,
  tx: StateQueries,
): Promise<Decided & { desiredRecorded: boolean }> {
  const { req, now, digest, needsApproval, awaiting } = p;
  const { config, account } = deps;
  const decide: DecideFn = async (decision, message, claim) => {
    const id = await tx.insert({ ...p.entry, decision, message: p.note(message) });
    if (claim && req.idempotencyKey !== undefined && !(await tx.claimDelivery(req.idempotencyKey, digest, id, now)))
      throw new ClaimConflict();
    return decision === 'executing'
      ? { id, decision: 'executed', message: '', send: true }
      : { id, decision, message, send: false };
  };
  const made = async (decided: Promise<Decided>) => ({ ...(await decided), desiredRecorded: false });
  const denial = (await checkDelivery(tx, req, digest, now)) ?? checkTarget(deps.targets, req);
  if (denial) return made(decide(denial.decision, denial.message, false));
  // Not claimed: the attack may end, an operator may close the breaker, and another replica (the
  // leader, which has the attack data) decides on the same delivery.
  const powerDenial = await powerGuards(deps, tx, req, now);
  if (powerDenial) return made(decide(powerDenial.decision, powerDenial.message, false));
  // Firewall state is desired state: a change inside its window is deferred, not denied; one that needs
  // approval becomes desired state only once approved.
  if (req.action === 'firewall_state' && needsApproval) return made(decide('awaiting_approval', awaiting, true));
  if (req.action === 'firewall_state') {
    const { recorded, ...decided } = await firewall.decide(req, now, decide, tx);
    return { ...decided, desiredRecorded: recorded };
  }
  const cooling = await checkCooldown(tx, req, now);
  if (cooling) {
    // An alert delivered again inside this cooldown (to another replica, or retried) is a duplicate: one
    // cooldown decision per alert and cooldown, claimed under a key naming the cooldown's start, so the
    // alert still acts once the cooldown is over.
    const key =
      req.source === 'alert' && req.idempotencyKey !== undefined
        ? `${req.idempotencyKey}:cooldown:${cooling.since}`
        : undefined;
    const seen = key === undefined ? undefined : await tx.delivery(key, now);
    if (seen) {
      const message = `already decided on this alert in this cooldown (journal entry ${seen.actionId})`;
      return made(decide('duplicate', message, false));
    }
    const decided = await decide(cooling.decision, cooling.message, false);
    if (key !== undefined && !(await tx.claimDelivery(key, digest, decided.id, now))) throw new ClaimConflict();
    return { ...decided, desiredRecorded: false };
  }
  if (POWER_ACTIONS.has(req.action)) {
    // Claimed: this alert's episode is handed to a person (BaremetalRemediationEscalated).
    const capped = await checkCap(tx, req, config.safety, now);
    if (capped) return made(decide(capped.decision, capped.message, true));
  }
  if (config.dryRun) return made(decide('dry_run', 'dry run: nothing sent upstream', true));
  if ((await budgetLeft(tx, account, config.budgetPerHour, now)) <= 0) {
    deps.logger.warn(
      { action: req.action, server_id: req.serverId, principal: req.principal },
      'remediation budget exhausted: action denied',
    );
    return made(decide('denied_budget', `budget of ${config.budgetPerHour} actions per hour is used up`, false));
  }
  // Every guard allowed it: a request that needs a second operator waits for one (approvals.ts).
  if (needsApproval) return made(decide('awaiting_approval', awaiting, true));
  return made(decide('executing', '', true));
}

/** The attack corroboration and the circuit breaker, for power actions only. */
async function powerGuards(
  deps: GuardDeps,
  tx: StateQueries,
  req: ActionRequest,
  now: number,
): Promise<Denial | undefined> {
  if (!POWER_ACTIONS.has(req.action)) return undefined;
  const { targets, config } = deps;
  const attacked = checkAttack(targets, req, config.safety, now, deps.firewallPeriodMs());
  if (attacked) return attacked;
  const open = await checkCircuit(tx, req, config.safety, targets.serversInScope?.() ?? 0, now);
  if (open) deps.logger.error({ action: req.action, server_id: req.serverId }, open.message);
  return open;
}

/** What the journal row of a forced power call says first. */
const FORCED = 'forced by the operator past the attack guard';

/** A delivery key claimed by a concurrent transaction: the decision is rolled back and made again. */
export class ClaimConflict extends Error {
  constructor() {
    super('the delivery key was claimed concurrently');
  }
}
