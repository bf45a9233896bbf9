/**
 * Who may withdraw a request awaiting approval, one rule for the daemon (http/routes/approvals.ts) and for
 * `remediation test`'s `withdraw:` step (cli/remediation-test-steps.ts): an operator's request by its requester
 * only (another operator denies it instead); an alert's request by any operator of its account (the caller checks
 * the account and the role), since the alert's requester is Alertmanager's webhook principal, which is no person.
 */
import type { JournalEntry } from '../store/rows.js';

/** Why `by` may not withdraw `row`, as the 403 says it; undefined when it may. */
export function withdrawalRefusal(
  row: Pick<JournalEntry, 'id' | 'source' | 'principal'>,
  by: string,
): string | undefined {
  if (row.principal === by || row.source === 'alert') return undefined;
  return `principal ${by} did not ask for journal entry ${row.id}: only its requester (${row.principal ?? 'unknown'}) may withdraw it; an operator denies it instead`;
}
