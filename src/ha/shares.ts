/**
 * Leadership per account: every `tickMs` this replica refreshes its heartbeat (store/postgres/membership.ts),
 * judges whether it agrees with the live replicas' terms (terms.ts: while it disagrees it leads nothing and
 * hands over what it led), computes from the agreeing live replicas which accounts are its share
 * (assignment.ts: every replica computes the same; nothing is claimed at the first heartbeat, so that replicas
 * starting together see each other first), and then, account by account, claims the lease of an account that became its share, renews the lease
 * of one it leads, and hands over one that is no longer its share (its duties end first, then the lease is
 * released, so the next leader claims it at its next tick and the two never act together).
 *
 * It leads an account only while it can prove it: a lease is trusted until the time the renewal was *sent*
 * plus the lease, less a margin (the database's expiry is later than that), and `leads(account)` checks that
 * time synchronously, so a poll asks it before each step. A heartbeat or renewal that fails or is refused, or a
 * lease that runs out (the process was paused, the database is slow), demotes that account at once; the
 * database refuses the old epoch's writes anyway (store/postgres/leases.ts `fenced`).
 */
import { performance } from 'node:perf_hooks';
import type { Logger } from 'pino';
import type { AccountLeases } from '../store/postgres/leases.js';
import type { Membership } from '../store/postgres/membership.js';
import { assignAccounts } from './assignment.js';
import { judge, type Judgement } from './terms.js';
import { Ticker } from './ticker.js';

/** This replica leads `account` under the lease `epoch` (bigint as text). */
export interface AccountTerm {
  account: string;
  epoch: string;
}

export interface AccountSharesOptions {
  membership: Pick<Membership, 'replica' | 'bootId' | 'terms' | 'members' | 'leave'>;
  leases: Pick<AccountLeases, 'claim' | 'renew' | 'release'>;
  /** the configured accounts */
  accounts: readonly string[];
  logger: Logger;
  /** this replica now leads the account; the account's next change waits for the returned promise */
  onGained: (term: AccountTerm) => void | Promise<void>;
  /** this replica no longer leads the account (`reason`: why); its duties must end before the promise resolves */
  onLost: (term: AccountTerm, reason: string) => void | Promise<void>;
  /** the lease of `ha_replicas` and `ha_leases`, ms (default 10000) */
  leaseMs?: number;
  /** between two heartbeats, ms (default 2000) */
  tickMs?: number;
  /** a lease is trusted until this long before it would expire, ms (default 2000) */
  marginMs?: number;
  /** what each heartbeat's judgement of the membership found (ha/agreement.ts reports it) */
  onJudged?: (judgement: Judgement) => void;
  /** the message of a database error, scrubbed of the URL's secrets (default: the error's message) */
  reason?: (error: unknown) => string;
}

export const SHARES_DEFAULTS = { leaseMs: 10_000, tickMs: 2_000, marginMs: 2_000 };

/** The reason given to onLost when the replica stops (a graceful handover, not a fault). */
export const HANDED_OVER = 'this replica is stopping';

interface Held extends AccountTerm {
  /** performance.now() until which the lease is trusted */
  trustedUntil: number;
  /** demotes the account when the lease runs out unrenewed (a heartbeat stuck on a hung network) */
  watchdog?: NodeJS.Timeout;
}

export class AccountShares {
  readonly #o: AccountSharesOptions & typeof SHARES_DEFAULTS;
  readonly #held = new Map<string, Held>();
  /** each account's role changes, in order */
  readonly #transitions = new Map<string, Promise<void>>();
  /** the heartbeats */
  readonly #ticker = new Ticker(async () => {
    await this.#tick();
    return this.#o.tickMs;
  });
  #problem: string | undefined = 'the database has not answered yet';
  /**
   * heartbeats written since the start or the last failed one: the first only makes this replica seen (one
   * replica starting, or coming back after an outage, with another sees it next)
   */
  #beats = 0;
  #joined = false;

  constructor(options: AccountSharesOptions) {
    this.#o = { ...SHARES_DEFAULTS, ...options };
    if (this.#o.marginMs >= this.#o.leaseMs || this.#o.tickMs >= this.#o.leaseMs - this.#o.marginMs)
      throw new Error('account shares: the heartbeat must come well within the lease (tick < lease - margin)');
  }

  get replica(): string {
    return this.#o.membership.replica;
  }

  /** Whether this replica leads `account` now: it holds a lease it can still trust. */
  leads(account: string): boolean {
    return this.term(account) !== undefined;
  }

  /** The term under which this replica leads `account` now, or undefined. */
  term(account: string): AccountTerm | undefined {
    const held = this.#held.get(account);
    if (!held || performance.now() >= held.trustedUntil) return undefined;
    return { account, epoch: held.epoch };
  }

  /** The accounts this replica leads now, in config order. */
  led(): string[] {
    return this.#o.accounts.filter((account) => this.leads(account));
  }

  /** True once this replica has agreed with the live replicas and claimed its share once (readiness). */
  get joined(): boolean {
    return this.#joined;
  }

  /** Why the database does not answer (readiness), or undefined when the last heartbeat reached it. */
  get problem(): string | undefined {
    return this.#problem;
  }

  /** Starts the heartbeat: at once, then every `tickMs`. */
  start(): void {
    this.#ticker.start();
  }

  /**
   * Stops: every account led is handed over (its duties end, then its lease is released) and the heartbeat
   * row deleted, so that the other replicas take the accounts over at their next tick, not a lease later.
   */
  async stop(): Promise<void> {
    await this.#ticker.stop();
    await Promise.all([...this.#held.keys()].map((account) => this.#handOver(account, HANDED_OVER)));
    await this.#o.membership.leave().catch(() => undefined);
  }

  /**
   * Test hook: the heartbeat stops, as when its statement hangs on a dead network or the process is paused; the
   * leases are no longer renewed, and each account is demoted when its lease runs out (the watchdog).
   */
  pauseHeartbeat(): void {
    this.#ticker.pause();
  }

  /** Test hook: the heartbeat starts again, at once. */
  resumeHeartbeat(): void {
    this.start();
  }

  async #tick(): Promise<void> {
    // First of all: a lease that ran out while this replica could not renew it (paused, slow database).
    for (const [account, held] of this.#held)
      if (performance.now() >= held.trustedUntil) this.#lose(account, 'its lease ran out before it was renewed');
    let beat: Awaited<ReturnType<Membership['members']>>;
    try {
      beat = await this.#o.membership.members();
      this.#problem = undefined;
    } catch (error) {
      this.#problem = this.#reason(error);
      for (const account of this.#held.keys()) this.#lose(account, `the heartbeat failed: ${this.#problem}`);
      // After an outage the others' rows may have expired: the first replica back would see itself alone and
      // claim every account. It claims again only at its second heartbeat, once the others (who retry every
      // tick too) could beat again.
      this.#beats = 0;
      return;
    }
    const { membership } = this.#o;
    const judgement = judge(
      { replica: membership.replica, bootId: membership.bootId, terms: membership.terms },
      beat.live,
      beat.singleLeaderLocked,
      this.#o.tickMs,
    );
    this.#o.onJudged?.(judgement);
    if (judgement.mismatch) {
      // Leads nothing while it disagrees: every account is handed over (its duties end, its lease released).
      const why = `this replica disagrees with the live replicas (${judgement.mismatch.reason})`;
      await Promise.all([...this.#held.keys()].map((account) => this.#handOver(account, why)));
      return;
    }
    // Replicas that start together: each claims its share only once it could see the others' first heartbeats.
    if (++this.#beats < 2) return;
    const assignment = assignAccounts(this.#o.accounts, judgement.members);
    await Promise.all(
      this.#o.accounts.map((account) => this.#settle(account, assignment.get(account) === this.replica)),
    );
    this.#joined = true;
  }

  /** Makes `account`'s lease agree with the assignment: claim, renew or hand over. */
  async #settle(account: string, mine: boolean): Promise<void> {
    const held = this.#held.get(account);
    if (held && !mine) return this.#handOver(account, 'the account is now another replica’s share');
    if (!mine) return;
    const sentAt = performance.now();
    try {
      if (held) {
        if (await this.#o.leases.renew(account, held.epoch)) this.#trust(held, sentAt);
        else this.#lose(account, 'its lease is no longer current (another replica claimed it)');
        return;
      }
      const epoch = await this.#o.leases.claim(account);
      if (epoch === undefined) return;
      // Stopped meanwhile: the claim is given back rather than left to expire.
      if (this.#ticker.stopped) return void (await this.#o.leases.release(account, epoch));
      const term: Held = { account, epoch, trustedUntil: 0 };
      this.#held.set(account, term);
      this.#trust(term, sentAt);
      this.#o.logger.info(
        { account, epoch },
        'leading the account: this replica polls it and applies its deferred firewall changes',
      );
      this.#transition(account, () => this.#o.onGained({ account, epoch }));
    } catch (error) {
      if (held) this.#lose(account, `renewing its lease failed: ${this.#reason(error)}`);
    }
  }

  #reason(error: unknown): string {
    return this.#o.reason ? this.#o.reason(error) : error instanceof Error ? error.message : String(error);
  }

  /** Trusts `held` until a lease after `sentAt` less the margin, and watches that time. */
  #trust(held: Held, sentAt: number): void {
    held.trustedUntil = sentAt + this.#o.leaseMs - this.#o.marginMs;
    clearTimeout(held.watchdog);
    held.watchdog = setTimeout(
      () => {
        if (this.#held.get(held.account) === held && performance.now() >= held.trustedUntil)
          this.#lose(held.account, 'its lease ran out before it was renewed');
      },
      Math.max(0, held.trustedUntil - performance.now()) + 1,
    );
    held.watchdog.unref();
  }

  /** Stops leading `account` at once (a fault): its duties stop; the lease is left to expire. */
  #lose(account: string, reason: string): void {
    const held = this.#held.get(account);
    if (!held) return;
    this.#held.delete(account);
    clearTimeout(held.watchdog);
    this.#o.logger.warn(
      { account, epoch: held.epoch, reason },
      'no longer leading the account: its polls and deferred firewall changes stop',
    );
    this.#transition(account, () => this.#o.onLost(held, reason));
  }

  /** A planned handover: the duties end, then the lease is released for the next leader. */
  async #handOver(account: string, reason: string): Promise<void> {
    const held = this.#held.get(account);
    if (!held) return;
    this.#held.delete(account);
    clearTimeout(held.watchdog);
    if (reason !== HANDED_OVER) this.#o.logger.info({ account, epoch: held.epoch, reason }, 'handing the account over');
    this.#transition(account, () => this.#o.onLost(held, reason));
    await this.#transitions.get(account);
    await this.#o.leases
      .release(account, held.epoch)
      .catch((error: unknown) =>
        this.#o.logger.warn(
          { account, reason: this.#reason(error) },
          'cannot release the lease: the next leader takes the account over once it expires',
        ),
      );
  }

  #transition(account: string, change: () => void | Promise<void>): void {
    const next = (this.#transitions.get(account) ?? Promise.resolve())
      .then(change)
      .catch((error: unknown) =>
        this.#o.logger.error({ account, reason: this.#reason(error) }, 'changing the account’s role failed'),
      );
    this.#transitions.set(account, next);
  }
}
