/**
 * This replica's role when the accounts are shared out among the replicas (`database.share_accounts`): it leads
 * each account of its share while it holds that account's lease (shares.ts), starting the account's duties on
 * the claim and stopping them on the loss or the handover. `baremetal_leader{account}` is 1 for the accounts it
 * leads and 0 for the others; the daemon-wide series (no label) is not exposed, so that summing over the
 * replicas counts each account's leaders (BaremetalSplitBrain, BaremetalNoLeader).
 */
import type { Logger } from 'pino';
import type { Metrics } from '../metrics/definitions.js';
import type { AccountLeases } from '../store/postgres/leases.js';
import type { Membership } from '../store/postgres/membership.js';
import { Agreement } from './agreement.js';
import { NOT_YET_JOINED } from './role.js';
import { AccountShares, HANDED_OVER, type AccountSharesOptions } from './shares.js';

/** What leading one account means for the daemon. */
export interface AccountDuties {
  /** starts the account's duties (its first polls may go on after it resolves) */
  start(account: string): Promise<void>;
  /** stops them, cancelling its poll runs in flight; resolves when they have ended */
  stop(account: string): Promise<void>;
}

/** Timings of the shares, ms (shares.ts defaults). */
export type ShareTimings = Pick<AccountSharesOptions, 'leaseMs' | 'tickMs' | 'marginMs'>;

export interface SharedRoleDeps {
  logger: Logger;
  metrics: Pick<Metrics, 'leader' | 'haConfigMismatch' | 'haAccountUnled'>;
  accounts: readonly string[];
  duties: AccountDuties;
  /** a role changed (the exposition renders soon) */
  onChange: () => void;
  /** the heartbeat and the leases over the store's pool */
  coordination: { membership: Membership; leases: AccountLeases };
  /** scrubs a database error's message of the URL's secrets */
  reason: (error: unknown) => string;
}

export function startSharedRole(deps: SharedRoleDeps, timings: ShareTimings = {}) {
  const { metrics, duties, logger, onChange } = deps;
  const set = (account: string, leading: boolean) => {
    metrics.leader.set({ account }, leading ? 1 : 0);
    onChange();
  };
  for (const account of deps.accounts) set(account, false);
  const agreement = new Agreement({ logger, metrics, onChange });
  const shares = new AccountShares({
    ...deps.coordination,
    accounts: deps.accounts,
    logger,
    reason: deps.reason,
    onJudged: (judgement) => agreement.judged(judgement),
    ...timings,
    onGained: async ({ account }) => {
      set(account, true);
      await duties.start(account);
    },
    onLost: async ({ account }, reason) => {
      set(account, false);
      await duties.stop(account);
      if (reason !== HANDED_OVER)
        logger.warn({ account, reason }, 'following the account: its polls and deferred firewall changes stopped');
    },
  });
  shares.start();
  return {
    get leading() {
      return shares.led().length > 0;
    },
    leads: (account: string) => shares.leads(account),
    led: () => new Set(shares.led()),
    get problem() {
      return shares.problem;
    },
    get disagreement() {
      // Until it has agreed and claimed its share once, it cannot tell which accounts it leads: not ready yet.
      return agreement.problem ?? (shares.joined ? undefined : NOT_YET_JOINED);
    },
    /** test hooks (a paused process): see AccountShares.pauseHeartbeat */
    shares,
    stop: () => shares.stop(),
  };
}
