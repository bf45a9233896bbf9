import { replay } from '../../src/cli/remediation-replay.js';
import { DEFAULT_SCHEDULES } from '../../src/config/schema.js';
import type { Config, RemediationRule } from '../../src/config/types.js';
import type { engineHarness } from './remediation.js';

type Harness = Awaited<ReturnType<typeof engineHarness>>;
type JournalRows = Awaited<ReturnType<Harness['journal']['list']>>;

/**
 * The config `remediation replay` reads for a harness's history: its remediation config `remediation` with
 * `rules` (and `change`), the default firewall schedule, the one account `default`.
 */
export function replayConfig(
  remediation: Config['remediation'],
  rules: RemediationRule[],
  change: Partial<Config['remediation']> = {},
) {
  return {
    remediation: { ...remediation, rules, ...change },
    schedules: { firewall: DEFAULT_SCHEDULES.firewall } as Config['schedules'],
    accounts: [{ name: 'default' }] as Config['accounts'],
  };
}

/**
 * Replays the history of `h` (its account `default`) as `remediation replay` does, with `replayConfig(h.config, rules)`,
 * over `rows` (default: its journal's first 100 rows, oldest first) and the account's recorded circuit, between
 * `from` and `to` (ms since the epoch).
 */
export async function replayHarness(
  h: Harness,
  rules: RemediationRule[],
  window: { from: number; to: number },
  rows?: JournalRows,
) {
  const recorded = rows ?? (await h.journal.list({ limit: 100 })).reverse();
  return replay(replayConfig(h.config, rules), {
    rows: recorded,
    circuits: new Map([['default', await h.journal.circuit('default')]]),
    ...window,
  });
}
