/**
 * The `firewall` and `firewall_under_attack` polls: hour-scale history of their services (every one, or the
 * quiet ones and those under attack apart when `schedules.firewall_under_attack` differs); each fails (or is
 * cancelled) alone. A run polls the next round-robin slice that fits in its period at the request budget.
 */
import type { AccountState } from '../collectors/account-state.js';
import {
  collectFirewallFailure,
  collectFirewallHistory,
  FirewallSeriesState,
  removeFirewallService,
  STALE_AFTER_FIREWALL_PERIODS,
  type ServiceRef,
} from '../collectors/firewall.js';
import { DEFAULT_SCHEDULES, underAttackPollApart } from '../config/schema.js';
import { getFirewallHistory } from '../upstream/firewall.js';
import { COVERAGE_REMEDY, firewallCoverage } from './budget-plan.js';
import {
  each,
  type PollContext,
  type PollDefinition,
  runDeadlineMs,
  schedulePeriodMs,
  type WorkResult,
} from './poll.js';
import { RoundRobin, runCapacity } from './round-robin.js';
import { yieldToLoop } from '../slices.js';
import { StaleLeaseError } from '../errors.js';
import { sameVersion } from '../metrics/state-family.js';

type FirewallJob = 'firewall' | 'firewall_under_attack';

/** What the firewall polls of one account remember between runs. */
interface FirewallMemory {
  /** round-robin coverage of each job, when a run cannot poll all its services within the budget */
  rounds: Record<FirewallJob, RoundRobin<ServiceRef>>;
  /** the start-up warning about the budget was logged */
  budgetWarned: boolean;
  /** the services in scope when the firewall state was last pruned of the others (AccountState.servicesVersion: counts, no inventory) */
  prunedFor: unknown[];
}

const memories = new WeakMap<AccountState, FirewallMemory>();

function memoryOf(state: AccountState): FirewallMemory {
  let memory = memories.get(state);
  if (!memory) {
    memory = {
      rounds: {
        firewall: new RoundRobin<ServiceRef>(FirewallSeriesState.key),
        firewall_under_attack: new RoundRobin<ServiceRef>(FirewallSeriesState.key),
      },
      budgetWarned: false,
      prunedFor: [],
    };
    memories.set(state, memory);
  }
  return memory;
}

export const firewallPoll = {
  name: 'firewall',
  defaultSchedule: DEFAULT_SCHEDULES.firewall,
  run: (context, signal) => pollFirewall(context, signal, 'firewall'),
  // What the polls read goes with the switch: its series follow (collectors/families.ts), also when switched on again.
  switchedOff: (context) => context.state.dropFirewall(),
} satisfies PollDefinition;

/** A job of its own only when its schedule differs from `firewall`'s (otherwise `firewall` polls every service). */
export const firewallUnderAttackPoll = {
  name: 'firewall_under_attack',
  defaultSchedule: DEFAULT_SCHEDULES.firewall,
  collector: 'firewall',
  enabled: (config) => underAttackPollApart(config.schedules),
  run: (context, signal) => pollFirewall(context, signal, 'firewall_under_attack'),
} satisfies PollDefinition;

async function pollFirewall(context: PollContext, signal: AbortSignal, job: FirewallJob): Promise<WorkResult> {
  const { client, metrics, logger, config, state } = context;
  // Switched off: no request; what was read is forgotten, so no series is rendered (collectors/families.ts).
  if (config.collectors?.firewall === false) {
    state.dropFirewall();
    return { items: 0, failed: 0 };
  }
  const round = memoryOf(state).rounds[job];
  forgetUnlisted(state, memoryOf(state));
  const services = state.servicesOf(job);
  const slice = round.next(services, firewallCapacity(context, job));
  state.noteUnread(state.services());
  // The services whose request left for the API: cut at the deadline, only those are slow replies.
  const sent = new Set<ServiceRef>();
  const fetchOne = async (ref: ServiceRef) => {
    const onSent = () => sent.add(ref);
    const events = await getFirewallHistory(client, ref.serviceType, ref.serviceId, 'hour', undefined, {
      signal,
      onSent,
    });
    // A reply that arrives after the run was cancelled is not applied: the run has already ended.
    signal.throwIfAborted();
    // The server may have been removed while this request was in flight.
    if (ref.serviceType === 'dedicated' && !state.inventory.has(ref.serviceId)) return;
    const knownIps = ref.serviceType === 'dedicated' ? (state.inventory.get(ref.serviceId)?.ips ?? []) : [];
    collectFirewallHistory(state.firewallState, context, ref, events, {
      limits: config.firewall,
      now: context.now(),
      knownIps,
    });
    state.attacks.record(ref, events, context.now());
    round.covered(ref);
  };
  const result = await each(slice, client.concurrency, signal, fetchOne, (ref, error) => {
    // As on success: a server the server list dropped while this request was in flight gets no series back.
    if (ref.serviceType === 'dedicated' && !state.inventory.has(ref.serviceId)) return;
    const fields = { service_type: ref.serviceType, service_id: ref.serviceId };
    if (signal.aborted) {
      // Cut at the deadline: a reply that drips or hangs goes to the back of the round-robin, so that it
      // never heads every run; a request still queued for a token or a slot was not slow, was not read,
      // and heads the next run like the items never started.
      round.cancelled(ref, sent.has(ref));
      if (!sent.has(ref)) return;
      collectFirewallFailure(state.firewallState, ref, context.now());
      logger.warn(fields, 'firewall history poll cancelled');
    } else {
      collectFirewallFailure(state.firewallState, ref, context.now());
      round.covered(ref);
      logger.warn({ ...fields, err: error }, 'firewall history poll failed');
    }
  });
  // Each a loop over every service (10,000 at the bench's size): each in a turn of the event loop of its own,
  // after the last reply's, so that a scrape waits for one of them at most (issue 43).
  await yieldToLoop();
  metrics.pollItemsPending.set({ account: context.account, poll: job }, round.pending(services));
  await yieldToLoop();
  state.oldestReadAgeSeconds = (state.oldestRead()?.ageMs ?? 0) / 1000;
  await yieldToLoop();
  await saveLedger(context, state.services());
  return result;
}

/**
 * History requests one run of the firewall job may make within the request budget: the run's deadline at
 * the budget, less a margin and, when the services under attack have a job of their own, less what that
 * job spends in the same time. Graphs and catalog take nothing from it: their requests wait behind the
 * firewall polls' in the budget (upstream/request-budget.ts) and use what the runs leave.
 */
export function firewallCapacity(context: PollContext, job: FirewallJob): number {
  const { client, config, state } = context;
  const rate = client.budget?.ratePerSecond;
  if (rate === undefined) return Number.POSITIVE_INFINITY;
  const periodMs = schedulePeriodMs(config.schedules[job]);
  const capacity = runCapacity(rate, runDeadlineMs(periodMs));
  if (job === 'firewall_under_attack' || !state.splitsFirewall) return capacity;
  const attackedPerPeriod =
    state.servicesOf('firewall_under_attack').length *
    (periodMs / schedulePeriodMs(config.schedules.firewall_under_attack));
  return Math.max(1, Math.floor(capacity - attackedPerPeriod));
}

/**
 * Warns once, after the first server list, when the firewall services do not fit in one run at the
 * budget: they are then covered round-robin over several runs (budget-plan.ts); more loudly when every
 * service is then read less often than every STALE_AFTER_FIREWALL_PERIODS periods.
 */
export function warnBudget(context: PollContext): void {
  const memory = memoryOf(context.state);
  if (memory.budgetWarned) return;
  memory.budgetWarned = true;
  const { client, config, logger } = context;
  const requests = context.state.services().length;
  const capacity = firewallCapacity(context, 'firewall');
  if (requests <= capacity) return;
  const periodMs = schedulePeriodMs(config.schedules.firewall);
  const coverage = firewallCoverage(requests, capacity, periodMs);
  const fields = {
    poll: 'firewall',
    requests,
    max_requests_per_second: client.budget?.ratePerSecond,
    schedule: config.schedules.firewall,
    period_seconds: periodMs / 1000,
    per_run: capacity,
    runs_per_round: coverage.runs,
    read_every_seconds: coverage.everyMs / 1000,
  };
  const message = `the firewall poll's ${requests} requests do not fit in its period at upstream.max_requests_per_second; each run polls ${capacity} services round-robin, every service once every ${coverage.runs} runs (${coverage.everyMs / 1000}s)`;
  if (coverage.stale)
    logger.warn(
      fields,
      `${message}: more than ${STALE_AFTER_FIREWALL_PERIODS} firewall periods, attacks are seen late and power actions are denied as stale; ${COVERAGE_REMEDY}`,
    );
  else logger.warn(fields, message);
}

/**
 * Forgets the firewall state and the attack log (`/api/v1/attacks`) of services no longer polled (a colocation
 * or transit id a reload removed; a server leaves with the server list): memory only, their series are not
 * rendered already.
 */
function forgetUnlisted(state: AccountState, memory: FirewallMemory): void {
  // Only when the services in scope changed: not a set of every key at each run.
  const version = state.servicesVersion();
  if (sameVersion(version, memory.prunedFor)) return;
  memory.prunedFor = version;
  const listed = new Set(state.services().map(FirewallSeriesState.key));
  for (const key of [
    ...state.firewallState.services.keys(),
    ...state.firewallState.failedBeforeRead.keys(),
    ...state.attacks.services.keys(),
  ]) {
    if (listed.has(key)) continue;
    const ref = FirewallSeriesState.ref(key);
    removeFirewallService(state.firewallState, ref);
    state.attacks.remove(ref);
  }
}

/**
 * Persists the event ids of the latest histories, plus those restored for services still polled but not
 * yet read by this process. A write that fails is logged: the counts are right until the next restart.
 */
async function saveLedger(context: PollContext, services: ServiceRef[]): Promise<void> {
  const { ledger, logger, state } = context;
  if (!ledger) return;
  const current = new Set(services.map((ref) => FirewallSeriesState.key(ref)));
  for (const key of state.firewallState.restored.keys())
    if (!current.has(key)) state.firewallState.restored.delete(key);
  const ids = new Map<string, ReadonlySet<string>>(state.firewallState.restored);
  for (const [key, series] of state.firewallState.services) ids.set(key, series.seenIds);
  // Most runs see the histories they saw before: no JSON of every id on the event loop, no file write.
  if (state.savedIds && sameIds(ids, state.savedIds)) return;
  try {
    await ledger.save(ids);
    state.savedIds = ids;
  } catch (error) {
    // With the accounts shared among replicas the database refused a write under a lease no longer current:
    // another replica leads the account now and counts from the ids it read (not a fault of the store).
    if (error instanceof StaleLeaseError)
      logger.warn(
        { err: error },
        'not saving the attack event ids: this replica no longer holds the account’s lease (the database refused the write); its leader keeps them',
      );
    else
      logger.warn(
        { err: error },
        'cannot save the attack event ids (state directory or database): after a restart, events still reported count again',
      );
  }
}

/** The same services with the same event ids (a set compared by content only when it is another object). */
function sameIds(a: ReadonlyMap<string, ReadonlySet<string>>, b: ReadonlyMap<string, ReadonlySet<string>>): boolean {
  if (a.size !== b.size) return false;
  for (const [key, ids] of a) {
    const before = b.get(key);
    if (before === ids) continue;
    if (!before || before.size !== ids.size) return false;
    for (const id of ids) if (!before.has(id)) return false;
  }
  return true;
}
