/**
 * The API's parameter vocabularies, quoted from the API contract (§2, §3 and §4): the lowest layer that needs
 * them is the configuration (graph types, sensitivities); the upstream client validates requests against them.
 */
/** Graph `type` values (contract §4, Graphs). */
export const GRAPH_TYPES = ['port_bits', 'port_percent', 'port_errors', 'port_upkts'] as const;
export type GraphType = (typeof GRAPH_TYPES)[number];
/** Graph `scale` values (contract §4, Graphs). */
export const GRAPH_SCALES = ['day', 'week', 'month'] as const;
export type GraphScale = (typeof GRAPH_SCALES)[number];
/** Firewall history `scale` values (contract §4, Firewall history). */
export const FIREWALL_SCALES = ['hour', 'day', 'week'] as const;
export type FirewallScale = (typeof FIREWALL_SCALES)[number];
/** Firewall sensitivity values (contract §2). */
export const SENSITIVITIES = ['low', 'medium', 'normal', 'high'] as const;
export type Sensitivity = (typeof SENSITIVITIES)[number];
/** Firewall state: `1` = Always On, `0` = Redirect On Attack (contract §2). */
export const FIREWALL_STATES = ['1', '0'] as const;
export type FirewallState = (typeof FIREWALL_STATES)[number];
/** Cancellation `type` values (contract §3). */
export const CANCELLATION_TYPES = ['immediate', 'end', 'delete'] as const;
export type CancellationType = (typeof CANCELLATION_TYPES)[number];
/** A server's scheduled cancellation as its record says (the simulator's `cancellation`); '' when none. */
export const SCHEDULED_CANCELLATIONS = ['immediate', 'end'] as const;
export type ScheduledCancellation = (typeof SCHEDULED_CANCELLATIONS)[number] | '';
/** Service kinds that have a firewall history (contract §4). */
export const SERVICE_TYPES = ['dedicated', 'colocation', 'transit'] as const;
export type ServiceType = (typeof SERVICE_TYPES)[number];
