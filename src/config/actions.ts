/**
 * The remediation actions, one entry each: what a rule or an operator can ask for. Everything that names an
 * action derives from this table: the rule schema and the principals' `actions` (config/schema.ts), the
 * default cooldowns, which actions the power guards and the cap count (remediation/decide.ts, the store's SQL),
 * the operator routes and their body schemas (http/routes/actions.ts, `POST /api/v1/actions/<name>`), the
 * metric's `action` and `operation` labels (metrics/definitions.ts) and the docs generated from them. How an
 * action is sent upstream is the one layer above that may not live here (config is the lowest layer): its
 * sender is the entry of the same name in remediation/execute.ts `SENDERS`, a `Record` over this table's names,
 * so an action without a sender does not compile.
 */
import { SENSITIVITIES } from './api-terms.js';

const MIN = 60_000;

/** One action. */
export interface ActionSpec {
  /** `power` actions pass the attack guard, the circuit breaker and the cap per server; `firewall` ones act on one IP */
  kind: 'power' | 'firewall';
  /** the upstream operation it sends (`baremetal_api_requests_total{operation}`) */
  operation: string;
  /**
   * minimum time between two executions on one target, ms: power 30 minutes, firewall the API's 2 minutes
   * (contract §8); a rule's `cooldown` replaces it (never below 2 minutes for firewall state), operator calls
   * always use it
   */
  defaultCooldownMs: number;
  /**
   * the value the action sets, for an action on an IP: its field in the operator's body and the values accepted
   * there (exactly these JSON values: an enum, never a coercion); absent: the action takes no value
   */
  value?: { field: string; values: readonly (string | number)[] };
}

/** The actions. */
export const ACTION_SPECS = {
  powercycle: { kind: 'power', operation: 'power_cycle', defaultCooldownMs: 30 * MIN },
  poweron: { kind: 'power', operation: 'power_on', defaultCooldownMs: 30 * MIN },
  poweroff: { kind: 'power', operation: 'power_off', defaultCooldownMs: 30 * MIN },
  // The README documents `"state": 0 or 1`; the strings "0"/"1" are the API's own form.
  firewall_state: {
    kind: 'firewall',
    operation: 'firewall_state',
    defaultCooldownMs: 2 * MIN,
    value: { field: 'state', values: ['0', '1', 0, 1] },
  },
  firewall_sensitivity: {
    kind: 'firewall',
    operation: 'firewall_sensitivity',
    defaultCooldownMs: 2 * MIN,
    value: { field: 'sensitivity', values: SENSITIVITIES },
  },
} as const satisfies Record<string, ActionSpec>;

export type ActionName = keyof typeof ACTION_SPECS;

/** The action names, in the table's order. */
export const ACTIONS = Object.keys(ACTION_SPECS) as readonly ActionName[] as readonly [ActionName, ...ActionName[]];

/** Default cooldown per action, in ms (ActionSpec `defaultCooldownMs`). */
export const DEFAULT_COOLDOWN_MS = Object.fromEntries(
  ACTIONS.map((a) => [a, ACTION_SPECS[a].defaultCooldownMs]),
) as Record<ActionName, number>;

/** The actions the power guards (attack, circuit breaker, cap per server) apply to. */
export const POWER_ACTIONS: ReadonlySet<ActionName> = new Set(ACTIONS.filter((a) => ACTION_SPECS[a].kind === 'power'));
