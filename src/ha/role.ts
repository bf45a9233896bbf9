/**
 * This replica's role. With SQLite there is one replica: it leads from the start. With PostgreSQL it leads
 * only while its elector holds the leader lock (leader.ts): its duties (polls, schedules, the remediation
 * tickers that apply deferred firewall changes) start on election and stop on demotion, while HTTP keeps
 * serving. `baremetal_leader` is 1 or 0 accordingly.
 */
import type { Logger } from 'pino';
import type { Config } from '../config/types.js';
import type { Metrics } from '../metrics/definitions.js';
import { LeaderElector, STOPPING, type LeaderElectorOptions } from './leader.js';
import type { TermsWatch } from './terms-watch.js';

/** Readiness while a replica has not yet compared its terms with the live replicas (its first heartbeats). */
export const NOT_YET_JOINED = 'this replica has not yet compared its terms with the live replicas';

/** What leading means for the daemon. */
export interface Duties {
  /** starts them (the first polls may go on after it resolves) */
  start(): Promise<void>;
  /** stops them, cancelling poll runs in flight; resolves when they have ended */
  stop(): Promise<void>;
}

/** Timings of the election, ms (leader.ts defaults). */
export type ElectionTimings = Pick<LeaderElectorOptions, 'retryMs' | 'heartbeatMs' | 'timeoutMs' | 'sessionTimeoutMs'>;

export interface Role {
  /** true while this replica leads (with shared accounts: leads at least one) */
  readonly leading: boolean;
  /** true while this replica leads `account` (with one leader: while it leads) */
  leads(account: string): boolean;
  /** with shared accounts: the accounts this replica leads now (undefined with one leader for all) */
  led?(): ReadonlySet<string>;
  /** why the shared database does not answer the election (readiness); always undefined with SQLite */
  readonly problem: string | undefined;
  /** why this replica disagrees with the live replicas and leads nothing (readiness, ha/terms.ts); undefined with SQLite */
  readonly disagreement?: string | undefined;
  /** stops leading (the duties end first), then lets another replica take over */
  stop(): Promise<void>;
}

export function startRole(
  database: Config['database'],
  deps: {
    logger: Logger;
    metrics: Pick<Metrics, 'leader'>;
    duties: Duties;
    onChange: () => void;
    /** with PostgreSQL: this replica's heartbeat row and judgement; it tries for the lock only while it agrees */
    watch?: {
      terms: TermsWatch;
      disagreement: () => string | undefined;
      /** registers what to do when the replica comes to agree */
      onAgreed: (f: () => void) => void;
    };
  },
  timings: ElectionTimings = {},
): Role {
  const { metrics, duties, onChange, logger } = deps;
  const set = (leading: boolean) => {
    metrics.leader.set(leading ? 1 : 0);
    onChange();
  };
  if (database.kind === 'sqlite') {
    set(true);
    // Started at once: what start() does is synchronous up to the first polls.
    void duties.start();
    return { leading: true, leads: () => true, problem: undefined, stop: () => duties.stop() };
  }
  set(false);
  let leading = false;
  const elector = new LeaderElector({
    url: database.url,
    redactedUrl: database.redactedUrl,
    logger,
    ...timings,
    ...(deps.watch ? { mayLead: () => deps.watch!.terms.agrees } : {}),
    onElected: async () => {
      leading = true;
      set(true);
      await duties.start();
    },
    onDemoted: async (reason) => {
      // At once: webhooks stop reading this replica's account state before its runs are cancelled.
      leading = false;
      set(false);
      await duties.stop();
      if (reason !== STOPPING)
        logger.warn({ reason }, 'following: polls and deferred firewall changes stopped; webhooks and /metrics go on');
    },
  });
  deps.watch?.terms.start();
  elector.start();
  deps.watch?.onAgreed(() => elector.nudge());
  return {
    get leading() {
      return leading;
    },
    leads: () => leading,
    get problem() {
      return elector.problem;
    },
    get disagreement() {
      const watch = deps.watch;
      if (!watch) return undefined;
      // Until it has agreed and tried for the lock once, it cannot tell whether it will lead: not ready yet.
      return watch.disagreement() ?? (watch.terms.agrees && elector.attempted ? undefined : NOT_YET_JOINED);
    },
    stop: async () => {
      await elector.stop();
      await deps.watch?.terms.stop();
      await duties.stop();
    },
  };
}
