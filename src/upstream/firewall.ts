/**
 * Firewall (DDoS protection) operations (contract §4): history for dedicated, colocation and transit
 * services, and the sensitivity and state settings of a dedicated server's IP.
 */
import type { UpstreamClient } from './client.js';
import type { ReadOptions } from './request.js';
import { decodeActionResult, decodeFirewallHistory, type ActionResult, type FirewallEvent } from './decode.js';
import {
  FIREWALL_SCALES,
  FIREWALL_STATES,
  SENSITIVITIES,
  type FirewallScale,
  type FirewallState,
  type Sensitivity,
  type ServiceType,
} from '../config/api-terms.js';
import { requireId, requireIp, requireOneOf } from './params.js';

/** Per service type: the path and the name of its id parameter (contract §4). */
export const FIREWALL_HISTORY = {
  dedicated: { path: '/api/v1/dedicated/firewall', idParam: 'server_id', operation: 'firewall_history_dedicated' },
  colocation: {
    path: '/api/v1/colocation/firewall',
    idParam: 'colocation_id',
    operation: 'firewall_history_colocation',
  },
  transit: { path: '/api/v1/transit/firewall', idParam: 'transit_id', operation: 'firewall_history_transit' },
} as const satisfies Record<ServiceType, { path: string; idParam: string; operation: string }>;

/**
 * Fetches the firewall history of a service for `scale`, for one `ip` or (omitted) all its IPs
 * (contract §4, rule 2). Returns the decoded events; throws InvalidReplyError for an unreadable reply.
 * `options.signal` cancels the request (a poll run's deadline, shutdown); `options.onSent` is called when
 * it leaves for the API (until then it only waits for a slot or a budget token).
 */
export function getFirewallHistory(
  client: UpstreamClient,
  serviceType: ServiceType,
  id: string,
  scale: FirewallScale,
  ip?: string,
  options: ReadOptions = {},
): Promise<FirewallEvent[]> {
  // Not `async` (the client's promise is returned as it is, one promise and two microtasks fewer a request);
  // a parameter refused still rejects, as from an async function.
  const spec = FIREWALL_HISTORY[serviceType];
  let body: Record<string, string | undefined>;
  try {
    body = {
      [spec.idParam]: requireId(spec.operation, spec.idParam, id),
      scale: requireOneOf(spec.operation, 'scale', scale, FIREWALL_SCALES),
      ip: ip === undefined ? undefined : requireIp(spec.operation, ip),
    };
  } catch (error) {
    return Promise.reject(error);
  }
  return client.json(
    { operation: spec.operation, path: spec.path, body, read: true, ...options },
    decodeFirewallHistory,
  );
}

export const getDedicatedFirewallHistory = (c: UpstreamClient, serverId: string, scale: FirewallScale, ip?: string) =>
  getFirewallHistory(c, 'dedicated', serverId, scale, ip);
export const getColocationFirewallHistory = (
  c: UpstreamClient,
  colocationId: string,
  scale: FirewallScale,
  ip?: string,
) => getFirewallHistory(c, 'colocation', colocationId, scale, ip);
export const getTransitFirewallHistory = (c: UpstreamClient, transitId: string, scale: FirewallScale, ip?: string) =>
  getFirewallHistory(c, 'transit', transitId, scale, ip);

/** Sets the firewall sensitivity of an IP of a server (contract §3). Never retried. */
export async function setFirewallSensitivity(
  client: UpstreamClient,
  params: { serverId: string; ip: string; sensitivity: Sensitivity },
): Promise<ActionResult> {
  const operation = 'firewall_sensitivity';
  const body = {
    server_id: requireId(operation, 'server_id', params.serverId),
    ip: requireIp(operation, params.ip),
    sensitivity: requireOneOf(operation, 'sensitivity', params.sensitivity, SENSITIVITIES),
  };
  const req = { operation, path: '/api/v1/dedicated/firewall/sensitivity', body, read: false };
  return client.json(req, decodeActionResult);
}

/**
 * Sets the firewall state of an IP: `1` Always On, `0` Redirect On Attack (contract §3). At most once per
 * IP every 2 minutes (§8); inside that window the API answers an ApiError. Never retried.
 */
export async function setFirewallState(
  client: UpstreamClient,
  params: { serverId: string; ip: string; state: FirewallState },
): Promise<ActionResult> {
  const operation = 'firewall_state';
  const body = {
    server_id: requireId(operation, 'server_id', params.serverId),
    ip: requireIp(operation, params.ip),
    state: requireOneOf(operation, 'state', params.state, FIREWALL_STATES),
  };
  const req = { operation, path: '/api/v1/dedicated/firewall/state', body, read: false };
  return client.json(req, decodeActionResult);
}
