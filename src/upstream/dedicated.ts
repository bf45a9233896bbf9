/**
 * Dedicated-server operations of the API (contract §4): listing, one server, power, graphs, console,
 * OS list, provisioning and reverse DNS. Each validates its parameters before sending anything
 * (InvalidParameterError) and throws UpstreamError on failure.
 */
import { InvalidReplyError } from '../errors.js';
import type { UpstreamClient } from './client.js';
import {
  decodeActionResult,
  decodeGraph,
  decodeOperatingSystems,
  type ActionResult,
  type OperatingSystem,
} from './decode.js';
import {
  decodeServer,
  serverListEntries,
  decodeServerEntries,
  type ServerList,
  type ServerRecord,
} from './decode-servers.js';
import { GRAPH_SCALES, GRAPH_TYPES, type GraphScale, type GraphType } from '../config/api-terms.js';
import { requireBashSyntax, requireHostname, requireId, requireIp, requireOneOf } from './params.js';
import { graphFromBytes } from './graph-reply.js';

const DEDICATED = '/api/v1/dedicated';

/**
 * Lists every dedicated server (contract §4, rule 1: no `server_id`). `signal` cancels the request. The
 * reply's shape is checked within the request; its records are decoded after it, in slices.
 */
export async function listServers(client: UpstreamClient, signal?: AbortSignal): Promise<ServerList> {
  const req = { operation: 'list_servers', path: DEDICATED, body: {}, read: true, ...(signal ? { signal } : {}) };
  return decodeServerEntries(await client.json(req, serverListEntries));
}

/** Fetches one server's record (contract §4, rule 1: with `server_id`). */
export async function getServer(client: UpstreamClient, serverId: string): Promise<ServerRecord> {
  const operation = 'get_server';
  const req = {
    operation,
    path: DEDICATED,
    body: { server_id: requireId(operation, 'server_id', serverId) },
    read: true,
  };
  return client.json(req, decodeServer);
}

/** The three power operations; `powerCycle` = off then on. Never retried. */
export type PowerAction = 'powercycle' | 'poweron' | 'poweroff';
const POWER_OPERATIONS = { powercycle: 'power_cycle', poweron: 'power_on', poweroff: 'power_off' } as const;

/** Sends a power action for `serverId` (contract §4). The reply's shape is undocumented. */
export async function power(client: UpstreamClient, action: PowerAction, serverId: string): Promise<ActionResult> {
  const operation = POWER_OPERATIONS[action];
  const req = {
    operation,
    path: `${DEDICATED}/${action}`,
    body: { server_id: requireId(operation, 'server_id', serverId) },
    read: false,
  };
  return client.json(req, decodeActionResult);
}

export const powerCycle = (client: UpstreamClient, serverId: string) => power(client, 'powercycle', serverId);
export const powerOn = (client: UpstreamClient, serverId: string) => power(client, 'poweron', serverId);
export const powerOff = (client: UpstreamClient, serverId: string) => power(client, 'poweroff', serverId);

/**
 * Fetches a port-traffic graph and returns the image bytes (base64-decoded, not yet checked). `signal` cancels
 * the request. A background read: it waits behind every other read of the client (a picture never delays
 * attack detection).
 */
export async function getGraph(
  client: UpstreamClient,
  serverId: string,
  type: GraphType,
  scale: GraphScale,
  signal?: AbortSignal,
): Promise<Buffer> {
  const operation = 'graphs';
  const body = {
    server_id: requireId(operation, 'server_id', serverId),
    type: requireOneOf(operation, 'type', type, GRAPH_TYPES),
    scale: requireOneOf(operation, 'scale', scale, GRAPH_SCALES),
  };
  const req = {
    operation,
    path: `${DEDICATED}/graphs`,
    body,
    read: true,
    background: true,
    ...(signal ? { signal } : {}),
  };
  return client.jsonFromBytes(req, graphFromBytes, decodeGraph);
}

/** Fetches the KVM/IPMI console launch descriptor (XML, a JNLP file; contract §4, rule 5). */
export async function getConsole(client: UpstreamClient, serverId: string): Promise<string> {
  const operation = 'console';
  const body = { server_id: requireId(operation, 'server_id', serverId) };
  return client.text({ operation, path: `${DEDICATED}/console`, body, read: false });
}

/**
 * Lists installable operating systems (contract §2, §4). `signal` cancels the request. A background read
 * (reference data): it waits behind every other read of the client.
 */
export async function listOperatingSystems(client: UpstreamClient, signal?: AbortSignal): Promise<OperatingSystem[]> {
  const req = {
    operation: 'list_operating_systems',
    path: `${DEDICATED}/provision/os_ids`,
    body: {},
    read: true,
    background: true,
    ...(signal ? { signal } : {}),
  };
  return client.json(req, decodeOperatingSystems);
}

/** Reply of a provisioning request (contract §4): the new root password. Never logged. */
export interface ProvisionResult {
  rootPassword: string;
}

/**
 * Installs `osid` on a server, with an optional post-install BASH script that must pass `bash -n`
 * (contract §4, rule 4). Never retried: a second install would wipe the first.
 */
export async function provision(
  client: UpstreamClient,
  params: { serverId: string; osid: string; postInstallation?: string },
): Promise<ProvisionResult> {
  const operation = 'provision';
  const body = {
    server_id: requireId(operation, 'server_id', params.serverId),
    osid: requireId(operation, 'osid', params.osid),
    post_installation:
      params.postInstallation === undefined ? undefined : await requireBashSyntax(operation, params.postInstallation),
  };
  const req = { operation, path: `${DEDICATED}/provision`, body, read: false };
  const reply = (await client.json(req)) as { error?: unknown; root_password?: unknown } | null;
  // Contract §7: the provisioning reply's success is `error: false`. No excerpt: the reply holds a password.
  if (reply?.error !== false || typeof reply.root_password !== 'string') {
    throw new InvalidReplyError(
      req,
      'expected {error: false, root_password}: the outcome of the installation is not confirmed',
      '',
    );
  }
  return { rootPassword: reply.root_password };
}

/** Sets the PTR record of `ip` on a server to `hostname` (contract §4, Reverse DNS; `type` is always `ptr`). */
export async function setReverseDns(
  client: UpstreamClient,
  params: { serverId: string; ip: string; hostname: string },
): Promise<ActionResult> {
  const operation = 'reverse_dns';
  const body = {
    server_id: requireId(operation, 'server_id', params.serverId),
    ip: requireIp(operation, params.ip),
    type: 'ptr',
    content: requireHostname(operation, params.hostname),
  };
  const req = { operation, path: `${DEDICATED}/dns`, body, read: false };
  return client.json(req, decodeActionResult);
}
