/**
 * The outage gate (`remediation.safety.block_while_firing`), like kured's blocking alerts and Chaos Monkey's
 * pause during an outage: while Alertmanager holds an alert that matches every matcher of the gate (active,
 * silenced or inhibited alike: a silenced outage is still an outage), power actions are `denied_blocked`, the
 * message naming the blocking alert. Alertmanager is read at each decision, not from a cache: an outage that
 * began a second ago blocks — read just before the decision's transaction, never inside it (`readOutage`). When it cannot be read (no client, refused, timed out, a reply of another shape)
 * the action is denied too, as the attack guard denies on an unknown attack state: the gate exists because
 * acting during an outage is worse than not acting. So is an Alertmanager younger than
 * `remediation.alertmanager.resend_interval` (its `/api/v2/status`, read before and after the list): it keeps
 * alerts in memory only, and a restarted one lists nothing until Prometheus sends its firing alerts again —
 * an empty list then says nothing of an outage. The delivery is not claimed: the same alert acts after
 * the outage (a repeat of it, Alertmanager's `repeat_interval`).
 */
import type { AlertmanagerAlert, AlertmanagerStatus } from '../alertmanager/client.js';
import { type LabelMatcher, matchesAll, showMatcher } from '../config/matchers.js';
import { type GateRead, keptLabels, labelsJson, MAX_GATE_REASON } from '../store/rows.js';
import { byCodeUnits } from '../order.js';
import { upForResend } from './episode.js';
import type { Denial } from './guards.js';

/** What the gate reads of Alertmanager (alertmanager/client.ts implements it). */
export interface AlertReader {
  /** every alert Alertmanager holds that has not resolved; throws AlertmanagerError */
  alerts(): Promise<AlertmanagerAlert[]>;
  /** when this Alertmanager process started; throws AlertmanagerError */
  status(): Promise<AlertmanagerStatus>;
}

const KEY = 'remediation.safety.block_while_firing';

/** An alert as a message names it: `Name{label="value", …}` without the alertname among the labels. */
function shown(alert: AlertmanagerAlert): string {
  const { alertname, ...rest } = alert.labels;
  const labels = Object.entries(rest)
    .sort(([a], [b]) => byCodeUnits(a, b))
    .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
    .join(', ');
  return `${alertname ?? '(no alertname)'}{${labels}}`;
}

/**
 * What the gate knows of Alertmanager for one decision: the alerts it holds, or why they are unknown (a
 * sentence). Read before the decision's transaction (`readOutage`), so that a slow Alertmanager holds no
 * transaction, and handed to the guard with the request (decide.ts `Pending.outage`).
 */
export type OutageRead = { alerts: readonly AlertmanagerAlert[] } | { unknown: string };

/**
 * Alertmanager's alerts for the gate's decision on `req`, or undefined when the gate does not apply: no gate
 * configured (`gate` empty) or not a power action (`power` false). Never throws: a read that fails is `unknown`,
 * and so is one of an Alertmanager that started less than `resendMs` (remediation.alertmanager.resend_interval)
 * before `now()` (ms, taken after the read) or restarted while it was read.
 */
export async function readOutage(
  reader: AlertReader | undefined,
  gate: readonly LabelMatcher[],
  power: boolean,
  now: () => number,
  resendMs: number,
): Promise<OutageRead | undefined> {
  if (gate.length === 0 || !power) return undefined;
  if (reader === undefined) return { unknown: 'no Alertmanager in this process (remediation.alertmanager)' };
  try {
    const before = await reader.status();
    const alerts = await reader.alerts();
    const after = await reader.status();
    if (before.startedAt !== after.startedAt) return { unknown: 'Alertmanager restarted while it was read' };
    if (!upForResend(after, now(), resendMs))
      return {
        unknown: `Alertmanager started at ${new Date(after.startedAt).toISOString()}, less than remediation.alertmanager.resend_interval (${resendMs / 1000}s) ago: it may not list every firing alert yet`,
      };
    return { alerts };
  } catch (error) {
    return { unknown: `Alertmanager cannot be read (${error instanceof Error ? error.message : String(error)})` };
  }
}

/** The longest fingerprint a recorded reading keeps (Alertmanager's are 16 hex digits), characters. */
const MAX_FINGERPRINT = 128;

/** `text` cut to `max` characters, `…` marking a cut. */
const bounded = (text: string, max: number) => (text.length <= max ? text : `${text.slice(0, max - 1)}…`);

/**
 * What the gate read for a decision on `serverId` (`read`, journaled as the row's `gate`: store/rows.ts
 * GateRead) and its denial of the power action (undefined when no alert read before the decision matches it);
 * undefined when no gate is configured (`gate` empty): nothing read, nothing recorded. No I/O: the guard runs
 * inside the decision's transaction. A gate configured but nothing read (a reload added it between the read and
 * the decision) is unknown: denied. The alerts come from the Alertmanager client, which scrubbed its reply.
 */
export function checkOutageGate(
  read: OutageRead | undefined,
  gate: readonly LabelMatcher[],
  serverId: string,
): { read: GateRead; denial?: Denial } | undefined {
  if (gate.length === 0) return undefined;
  const unknown = (why: string) => ({
    read: { read: 'unknown', reason: bounded(why, MAX_GATE_REASON) } as const,
    denial: {
      decision: 'denied_blocked',
      message: `whether an outage alert fires is unknown: ${why}; power actions need it (${KEY})`,
    } as const,
  });
  if (read === undefined) return unknown('Alertmanager was not read before this decision');
  if ('unknown' in read) return unknown(read.unknown);
  const blocking = read.alerts.filter((a) => matchesAll(gate, a.labels));
  if (blocking.length === 0) return { read: { read: 'none_firing' } };
  const first = blocking[0]!;
  const labels = keptLabels(labelsJson(first.labels));
  const others = blocking.length > 1 ? ` (and ${blocking.length - 1} more)` : '';
  return {
    read: {
      read: 'blocked',
      alert: {
        alertname: first.labels.alertname === undefined ? null : bounded(first.labels.alertname, MAX_FINGERPRINT),
        fingerprint: bounded(first.fingerprint, MAX_FINGERPRINT),
        labels: labels ?? null,
      },
      more: blocking.length - 1,
    },
    denial: {
      decision: 'denied_blocked',
      message: `power actions are blocked while ${shown(first)} fires${others} (${KEY}: ${gate.map(showMatcher).join(', ')}); nothing sent to server ${serverId}`,
    },
  };
}
