/**
 * `GET /api/v1/discovery`: the in-scope servers of every account in Prometheus's HTTP SD format
 * (`[{"targets": ["<ip>[:port]"], "labels": {"__meta_baremetal_*": …}}]`, `application/json`), one target group
 * per server, for `http_sd_configs` (blackbox ICMP/TCP and node_exporter jobs). Behind `web.auth`, like `/metrics`.
 *
 * Query: `port` (1–65535; the target is `ip:port`, else the bare IP), and the exact-match filters `account`,
 * `location`, `status` (each repeatable: a server matches one of the values given). Anything else is a 400 in
 * the usual error shape. Until every account's first server list is known the reply is a 503 (Prometheus then
 * keeps the targets it had). On an HA follower the servers come from the shared directory (the leader's list).
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { BadRequestError, NotReadyError } from '../../errors.js';
import { queryInteger } from '../schemas.js';
import { byCodeUnits } from '../../order.js';

/** One server as discovery shows it (the fields of the server record, API contract §1). */
export interface DiscoveryServer {
  serverId: string;
  hostname: string;
  location: string;
  status: string;
  /** the scheduled cancellation (`immediate`, `end`), '' when none */
  cancellation: string;
  /** the main IP */
  ip: string;
  /** every IP of the server */
  ips: readonly string[];
}

/** Each account's in-scope servers by account name; `undefined` for an account whose first list is not known. */
export type DiscoverySource = () => ReadonlyMap<string, readonly DiscoveryServer[] | undefined>;

/** One target group of Prometheus's HTTP SD format. */
export interface TargetGroup {
  targets: string[];
  labels: Record<string, string>;
}

const FILTERS = ['account', 'location', 'status'] as const;
type Filter = (typeof FILTERS)[number];
/** the longest filter value and the most values per filter accepted */
const MAX_VALUE_LENGTH = 256;
const MAX_VALUES = 100;

/** The filters and port of a discovery query; throws BadRequestError for an unknown key or a bad value. */
export function discoveryQuery(query: Record<string, unknown>): {
  filters: Partial<Record<Filter, Set<string>>>;
  port: number | undefined;
} {
  const filters: Partial<Record<Filter, Set<string>>> = {};
  let port: number | undefined;
  for (const [key, raw] of Object.entries(query)) {
    if (key === 'port') {
      if (typeof raw !== 'string') throw new BadRequestError('port must be given once');
      port = queryInteger('port', raw, { min: 1, max: 65535 });
      continue;
    }
    if (!(FILTERS as readonly string[]).includes(key))
      throw new BadRequestError(
        `unknown query parameter ${JSON.stringify(key.slice(0, 64))}: expected port, ${FILTERS.join(', ')}`,
      );
    const values = Array.isArray(raw) ? raw : [raw];
    if (values.length > MAX_VALUES) throw new BadRequestError(`${key}: at most ${MAX_VALUES} values`);
    for (const value of values)
      if (typeof value !== 'string' || value.length === 0 || value.length > MAX_VALUE_LENGTH)
        throw new BadRequestError(`${key} must be a non-empty text of at most ${MAX_VALUE_LENGTH} characters`);
    filters[key as Filter] = new Set(values as string[]);
  }
  return { filters, port };
}

const bracketed = (ip: string) => (ip.includes(':') ? `[${ip}]` : ip);

/**
 * The target groups of `accounts` (account → servers), filtered, sorted by account then server id. Pure.
 * A server without a main IP is left out (it cannot be a target).
 */
export function targetGroups(
  accounts: ReadonlyMap<string, readonly DiscoveryServer[]>,
  options: ReturnType<typeof discoveryQuery>,
): TargetGroup[] {
  const { filters, port } = options;
  const groups: Array<TargetGroup & { key: string }> = [];
  for (const [account, servers] of accounts) {
    if (filters.account && !filters.account.has(account)) continue;
    for (const server of servers) {
      if (!server.ip) continue;
      if (filters.location && !filters.location.has(server.location)) continue;
      if (filters.status && !filters.status.has(server.status)) continue;
      groups.push({
        key: `${account}\u0000${server.serverId}`,
        targets: [port === undefined ? server.ip : `${bracketed(server.ip)}:${port}`],
        labels: {
          __meta_baremetal_account: account,
          __meta_baremetal_server_id: server.serverId,
          __meta_baremetal_hostname: server.hostname,
          __meta_baremetal_location: server.location,
          __meta_baremetal_status: server.status,
          __meta_baremetal_cancellation: server.cancellation,
          __meta_baremetal_ip: server.ip,
          __meta_baremetal_ips: server.ips.join(','),
        },
      });
    }
  }
  groups.sort((a, b) => byCodeUnits(a.key, b.key));
  return groups.map(({ targets, labels }) => ({ targets, labels }));
}

export function discoveryRoutes(app: FastifyInstance, deps: { discovery: DiscoverySource }): void {
  app.get('/api/v1/discovery', async (request: FastifyRequest<{ Querystring: Record<string, unknown> }>, reply) => {
    const query = discoveryQuery(request.query ?? {});
    const accounts = deps.discovery();
    const known = new Map<string, readonly DiscoveryServer[]>();
    for (const [account, servers] of accounts) {
      if (servers === undefined)
        throw new NotReadyError(`the first server list of account ${account} is not known yet`);
      known.set(account, servers);
    }
    return reply
      .type('application/json; charset=utf-8')
      .header('cache-control', 'no-store')
      .send(targetGroups(known, query));
  });
}
