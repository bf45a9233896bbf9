/** Reseller operations (contract §4): cancellation of a server and the list of locations. */
import type { UpstreamClient } from './client.js';
import { decodeActionResult, decodeLocations, type ActionResult, type Location } from './decode.js';
import { CANCELLATION_TYPES, type CancellationType } from '../config/api-terms.js';
import { requireId, requireOneOf } from './params.js';

/** Schedules (`immediate`, `end`) or withdraws (`delete`) cancellation of a server (contract §3). Never retried. */
export async function setCancellation(
  client: UpstreamClient,
  serverId: string,
  type: CancellationType,
): Promise<ActionResult> {
  const operation = 'cancellation';
  const body = {
    server_id: requireId(operation, 'server_id', serverId),
    type: requireOneOf(operation, 'type', type, CANCELLATION_TYPES),
  };
  const req = { operation, path: '/api/v1/reseller/billing/cancellation', body, read: false };
  return client.json(req, decodeActionResult);
}

/**
 * Lists locations (reseller; record fields undocumented, contract §2). `signal` cancels the request. A
 * background read (reference data): it waits behind every other read of the client.
 */
export async function listLocations(client: UpstreamClient, signal?: AbortSignal): Promise<Location[]> {
  const req = {
    operation: 'locations',
    path: '/api/v1/reseller/locations',
    body: {},
    read: true,
    background: true,
    ...(signal ? { signal } : {}),
  };
  return client.json(req, decodeLocations);
}
