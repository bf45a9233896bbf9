/**
 * `GET /api/v1/attacks`: the events of the latest firewall history of every service under attack, per
 * service and IP, as the provider reported them (`raw` text included), for a Grafana table or an alert
 * template. Behind `web.auth` when it is set, like `/metrics`. The reply is a top-level array of objects, one
 * per account, service and IP, so that fields can be added without breaking readers.
 */
import type { FastifyInstance } from 'fastify';
import type { AttackLog } from '../../collectors/attacks.js';
import { accountSchema, configuredAccount } from '../schemas.js';
import { byCodeUnits } from '../../order.js';

/** One service's IP under attack. */
export interface AttackEntry {
  /** the account (config `accounts[].name`; `default` in the single-account form) */
  account: string;
  service_type: string;
  service_id: string;
  ip: string;
  /** ISO 8601 time of the poll that returned these events */
  polled_at: string;
  /** newest first */
  events: Array<{
    id: string /** ISO 8601, or null when the event had no readable time */;
    time: string | null;
    raw: string;
  }>;
}

const iso = (ms: number | undefined) => (ms === undefined ? null : new Date(ms).toISOString());

/** The reply's entries of every account (account name → its log), sorted by account, service type, service id and IP. Pure. */
export function attackEntries(logs: ReadonlyMap<string, AttackLog>): AttackEntry[] {
  const entries: AttackEntry[] = [];
  for (const [account, log] of logs)
    for (const service of log.services.values()) {
      const perIp = new Map<string, AttackEntry['events']>();
      for (const event of service.events) {
        const list = perIp.get(event.ip) ?? [];
        perIp.set(event.ip, list);
        list.push({ id: event.id, time: iso(event.time), raw: event.raw });
      }
      for (const [ip, events] of perIp) {
        entries.push({
          account,
          service_type: service.serviceType,
          service_id: service.serviceId,
          ip,
          polled_at: new Date(service.polledAt).toISOString(),
          events,
        });
      }
    }
  const key = (e: AttackEntry) => [e.account, e.service_type, e.service_id, e.ip];
  return entries.sort((a, b) => byCodeUnits(key(a).join('\u0000'), key(b).join('\u0000')));
}

/**
 * `GET /api/v1/attacks[?account=NAME]`: every account's entries, or one account's; an unknown account is a
 * 400 (`BM_ERR_BAD_REQUEST`), as on the action endpoints.
 */
export function attackRoutes(app: FastifyInstance, deps: { attacks: ReadonlyMap<string, AttackLog> }): void {
  app.get<{ Querystring: { account?: string } }>(
    '/api/v1/attacks',
    // An unknown parameter (`?acount=eu`) is a 400, not every account's entries.
    {
      schema: { querystring: { type: 'object', additionalProperties: false, properties: { account: accountSchema } } },
    },
    async (request, reply) => {
      const name = request.query.account;
      const logs =
        name === undefined
          ? deps.attacks
          : new Map([[name, configuredAccount(deps.attacks, name, 'querystring/account').entry]]);
      return reply.header('cache-control', 'no-store').send(attackEntries(logs));
    },
  );
}
