/**
 * The simulator's routes: every operation of the API contract (§4) as a handler of the form parameters,
 * answering from the simulated state (state.ts) and with the contract's error shape (§7) for bad input.
 */
import type { FastifyReply } from 'fastify';
import isFQDNModule from 'validator/lib/isFQDN.js';
import { renderGraph } from './graphs.js';
import { LOCATIONS, OPERATING_SYSTEMS, type SimService, type SimulatorState } from './state.js';

const isFQDN = isFQDNModule.default; // validator's per-function module: a CommonJS default

export type Params = Record<string, string>;
export type Handler = (params: Params, reply: FastifyReply) => unknown;

const FIREWALL_WINDOWS: Record<string, number> = { hour: 3600, day: 86400, week: 604800 };
const GRAPH_TYPES = ['port_bits', 'port_percent', 'port_errors', 'port_upkts'];
const GRAPH_SCALES = ['day', 'week', 'month'];

/** The API's error reply (contract §7) with an HTTP status of the simulator's choosing. */
export function fail(reply: FastifyReply, status: number, message: string) {
  return reply.code(status).send({ error: true, message });
}

/** Path → handler, for every operation of the contract. */
export function routes(state: SimulatorState, seed: number): Record<string, Handler> {
  const server = (p: Params, reply: FastifyReply) => {
    const s = p.server_id ? state.servers.get(p.server_id) : undefined;
    if (!s) fail(reply, p.server_id ? 404 : 400, p.server_id ? 'Server not found.' : 'Missing server_id.');
    return s;
  };
  const power =
    (next: 'on' | 'off' | 'cycle', message: string): Handler =>
    (p, reply) => {
      const s = server(p, reply);
      if (!s) return reply;
      if (next !== 'cycle') s.power = next;
      else s.power = 'on';
      return { success: true, message };
    };
  const history =
    (type: SimService['serviceType'], idParam: string): Handler =>
    (p, reply) => {
      const service = state.service(type, p[idParam] ?? '');
      if (!service) return fail(reply, 404, `Unknown ${idParam}.`);
      const window = FIREWALL_WINDOWS[p.scale ?? ''];
      if (!window) return fail(reply, 400, 'Invalid scale.');
      if (p.ip && !service.ips.includes(p.ip)) return fail(reply, 400, 'IP does not belong to this service.');
      return { success: true, firewall: state.history(service, window, p.ip) };
    };
  const ipOf = (p: Params, reply: FastifyReply) => {
    const s = server(p, reply);
    if (!s) return undefined;
    if (!p.ip || !s.ips.includes(p.ip)) {
      fail(reply, 400, 'IP does not belong to this server.');
      return undefined;
    }
    return p.ip;
  };
  return {
    '/api/v1/dedicated': (p, reply) => {
      if (p.server_id === undefined) return [...state.servers.values()].map((s) => state.record(s));
      const s = server(p, reply);
      return s ? state.record(s) : reply;
    },
    '/api/v1/dedicated/powercycle': power('cycle', 'Power cycle initiated.'),
    '/api/v1/dedicated/poweron': power('on', 'Power on initiated.'),
    '/api/v1/dedicated/poweroff': power('off', 'Power off initiated.'),
    '/api/v1/dedicated/graphs': async (p, reply) => {
      if (!server(p, reply)) return reply;
      if (!GRAPH_TYPES.includes(p.type ?? '') || !GRAPH_SCALES.includes(p.scale ?? ''))
        return fail(reply, 400, 'Invalid type or scale.');
      const png = await renderGraph(seed, p.server_id!, p.type!, p.scale!, state.now());
      return { success: true, base64: png.toString('base64') };
    },
    '/api/v1/dedicated/console': (p, reply) => {
      const s = server(p, reply);
      if (!s) return reply;
      return reply
        .type('application/x-java-jnlp-file')
        .send(
          `<?xml version="1.0" encoding="UTF-8"?>\n<jnlp spec="1.0+" codebase="https://${s.ips[0]}:443">\n` +
            `  <information><title>KVM console ${s.serverId}</title><vendor>Simulated IPMI</vendor></information>\n` +
            `  <resources><j2se version="1.8+"/><jar href="avctKVM.jar" download="eager" main="true"/></resources>\n` +
            `  <application-desc main-class="com.avocent.kvm.client.Main"><argument>ip=${s.ips[0]}</argument></application-desc>\n</jnlp>\n`,
        );
    },
    '/api/v1/dedicated/provision/os_ids': () => OPERATING_SYSTEMS,
    '/api/v1/dedicated/provision': (p, reply) => {
      const s = server(p, reply);
      if (!s) return reply;
      if (!OPERATING_SYSTEMS.some((os) => os.id === p.osid)) return fail(reply, 400, 'Invalid osid.');
      return { error: false, root_password: `sim-${s.serverId}-${p.osid}-pw` };
    },
    '/api/v1/dedicated/dns': (p, reply) => {
      if (!ipOf(p, reply)) return reply;
      if (p.type !== 'ptr' || !isFQDN(p.content ?? '')) return fail(reply, 400, 'Invalid PTR content.');
      return { success: true, message: 'PTR record updated.' };
    },
    '/api/v1/dedicated/firewall': history('dedicated', 'server_id'),
    '/api/v1/colocation/firewall': history('colocation', 'colocation_id'),
    '/api/v1/transit/firewall': history('transit', 'transit_id'),
    '/api/v1/dedicated/firewall/sensitivity': (p, reply) => {
      const ip = ipOf(p, reply);
      if (!ip) return reply;
      if (!['low', 'medium', 'normal', 'high'].includes(p.sensitivity ?? ''))
        return fail(reply, 400, 'Invalid sensitivity.');
      state.firewallSetting(ip).sensitivity = p.sensitivity as 'low';
      return { success: true, message: `IP ${ip} was updated.` };
    },
    '/api/v1/dedicated/firewall/state': (p, reply) => {
      const ip = ipOf(p, reply);
      if (!ip) return reply;
      if (p.state !== '0' && p.state !== '1') return fail(reply, 400, 'Invalid state.');
      // Contract §7: the refusal inside the window is an error reply; the real service sends it with 200.
      if (!state.setFirewallState(ip, p.state))
        return fail(reply, 200, 'The IP firewall state was already updated in the last 2 minutes.');
      return { success: true, message: `The firewall state of IP ${ip} has been updated.` };
    },
    '/api/v1/reseller/billing/cancellation': (p, reply) => {
      const s = server(p, reply);
      if (!s) return reply;
      if (p.type === 'delete') s.cancellation = 'none';
      else if (p.type === 'immediate' || p.type === 'end') s.cancellation = p.type;
      else return fail(reply, 400, 'Invalid type.');
      return {
        success: true,
        message: p.type === 'delete' ? 'Cancellation request removed.' : 'Cancellation scheduled.',
      };
    },
    '/api/v1/reseller/locations': () => LOCATIONS,
  };
}
