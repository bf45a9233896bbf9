/**
 * A reload's policy on pending firewall changes: one asked for by an alert that no firewall-state rule names
 * any more is cancelled (desired-firewall.ts applies the rest). Also the journal row of a pending change.
 */
import type { Logger } from 'pino';
import type { Config } from '../config/types.js';
import type { Metrics } from '../metrics/definitions.js';
import type { DesiredFirewall, NewEntry } from '../store/rows.js';
import { makeRequest, requestRow } from './request.js';
import type { StateStore } from '../store/store.js';
import type { ActionDecision } from './types.js';

/** What cancelling needs: desired-firewall.ts's `DesiredFirewallDeps` but the client (nothing is sent). */
export interface CancelDeps {
  account: string;
  store: StateStore;
  logger: Logger;
  metrics: Metrics;
  config: Config['remediation'];
  /** ms since epoch */
  now: () => number;
  /** counts a finished decision (metrics, gauges) */
  record: (action: string, result: ActionDecision) => Promise<ActionDecision>;
}

/**
 * After a reload: cancels the pending changes asked for by an alert that no firewall-state rule names any
 * more (the alert of the latest row that set the desired state), unless `inFlight` says its call is being made. The IP keeps its applied state; each
 * cancellation is journaled (decision `cancelled`, source `pending`, message `cancelled: …`) and counted in `baremetal_action_requests_total`. Changes an operator asked for stay. Returns
 * how many were cancelled. Throws JournalError.
 */
export async function cancelWithoutRule(deps: CancelDeps, inFlight: (d: DesiredFirewall) => boolean): Promise<number> {
  // Its series follows the row once `record` reads the rows back (desired-rows.ts).
  const { account, store, config, record } = deps;
  const ruled = new Set(config.rules.filter((r) => r.action === 'firewall_state').map((r) => r.alertname));
  let cancelled = 0;
  for (const listed of (await store.allDesired(account)).filter((d) => d.pending)) {
    const now = deps.now();
    const step = await store.transaction(account, async (tx) => {
      const d = await tx.desired(account, listed.serverId, listed.ip);
      if (!d?.pending || inFlight(d)) return undefined;
      const rows = await tx.list({ account, serverId: d.serverId, action: 'firewall_state', limit: ORIGIN_ROWS });
      const origin = rows.find(
        (r) => r.ip === d.ip && r.value === d.desiredState && (r.source === 'alert' || r.source === 'operator'),
      );
      if (origin?.source !== 'alert' || origin.alertname === null || ruled.has(origin.alertname)) return undefined;
      const kept = d.appliedState;
      await tx.saveDesired({ ...d, desiredState: kept ?? d.desiredState, pending: false, attempts: 0 });
      const message = `cancelled: no remediation rule for alert ${origin.alertname} any more (configuration reload); state ${d.desiredState} not sent${kept === null ? '' : `, the IP stays in state ${kept}`}`;
      return { d, kept, message, id: await tx.insert({ ...pendingEntry(d, now), decision: 'cancelled', message }) };
    });
    if (!step) continue;
    cancelled++;
    deps.logger.warn(
      { server_id: step.d.serverId, ip: step.d.ip, principal: step.d.principal, journal_id: step.id },
      'pending firewall change cancelled: its remediation rule was removed',
    );
    await record('firewall_state', { id: step.id, decision: 'cancelled', message: step.message });
  }
  return cancelled;
}

/** Journal rows of a server read to find the request that set an IP's desired state. */
const ORIGIN_ROWS = 200;

/**
 * A journal row for a pending change, decided by the daemon itself (source `pending`), under the principal of
 * the request that set the desired state: the row of its request (request.ts `requestRow`).
 */
export function pendingEntry(d: DesiredFirewall, now: number): NewEntry {
  return requestRow(makeRequest({ kind: 'due', desired: d }), now);
}
