/**
 * What `/readyz` waits for: each account's first servers poll, then its first firewall poll of the listed
 * servers (a run that began after the server list was read: daemon/accounts.ts), worked at least partly — a
 * power action is decided on a server's firewall history (remediation/guards.ts `checkAttack`). A poll that
 * fails outright — a wrong key, the API down — keeps the daemon unready, naming the poll and the error (a
 * failed servers poll also as the firewall poll's: it `waits for a server list`). A follower does not poll: it
 * is ready while the shared database and the journal answer.
 */
import type { AccountRuntime } from './accounts.js';
import { DATABASE_UNREACHABLE } from '../config/database-url.js';
import type { JobName } from '../config/schema.js';
import type { StateStore } from '../store/store.js';

export interface ReadinessSources {
  accounts: ReadonlyMap<string, Pick<AccountRuntime, 'name' | 'workedOnce' | 'lastProblem'>>;
  /** whether this replica leads (polls) `account` */
  leads: (account: string) => boolean;
  /** the election's problem, with replicas: the shared database does not answer */
  electionProblem: () => string | undefined;
  /** with replicas: why this one disagrees with the live replicas (ha/terms.ts), leading nothing */
  disagreement?: () => string | undefined;
  store: Pick<StateStore, 'problem' | 'healthy' | 'kind'>;
  /** false while `collectors.firewall` switches the firewall poll off: it is not waited for */
  firewallPolled: () => boolean;
}

/** The reasons the daemon is not ready, in sentences; empty when it is. */
export function readinessOf(s: ReadinessSources): () => string[] {
  return () => {
    const polls = [...s.accounts.values()].filter((account) => s.leads(account.name));
    const reasons = polls.flatMap((account) =>
      (['servers', 'firewall'] as JobName[])
        .filter((job) => job !== 'firewall' || s.firewallPolled())
        .filter((job) => !account.workedOnce.has(job))
        .map((job) => {
          const poll = `${job} poll${s.accounts.size > 1 ? ` of account ${account.name}` : ''}`;
          const problem = account.lastProblem.get(job);
          if (problem !== undefined) return `the ${poll} has not succeeded yet: ${problem}`;
          // Without a list it reads no server's history: the servers poll's failure, named too, is why.
          if (job === 'firewall' && account.lastProblem.has('servers')) return `the ${poll} waits for a server list`;
          return `the first ${poll} has not finished`;
        }),
    );
    // /readyz is open to anyone: a database's problem names the part only (host, port, user and database are
    // in the log line that reported it).
    if (s.electionProblem() !== undefined) reasons.push(`the shared database does not answer: ${DATABASE_UNREACHABLE}`);
    // Names replicas and account names only (never a URL): what an operator needs to fix the config.
    const disagreement = s.disagreement?.();
    if (disagreement !== undefined) reasons.push(disagreement);
    const detail = s.store.problem ?? (s.store.healthy() ? undefined : 'it does not answer');
    const problem = detail !== undefined && s.store.kind === 'postgres' ? `state ${DATABASE_UNREACHABLE}` : detail;
    if (problem !== undefined) reasons.push(`the journal is unavailable (remediation disabled): ${problem}`);
    return reasons;
  };
}
