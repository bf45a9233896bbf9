/**
 * The simulator's HTTP(S) server: every operation of the API contract (§4) over POST, form or JSON
 * bodies, the key in `Authorization` or `HTTP_AUTHORIZATION` (§5.2), the contract's error shape (§7),
 * fault knobs (latency, error rate, malformed replies, HTML error pages) and a record of the calls it
 * received. Used by `demo`, the tests and the benchmark.
 */
import Fastify, { type FastifyInstance, type FastifyReply } from 'fastify';
import validator from 'validator';
import { renderGraph } from './graphs.js';
import { seededRandom } from './prng.js';
import { LOCATIONS, OPERATING_SYSTEMS, SimulatorState, type SimService, type SimulatorOptions } from './state.js';

/** Injected faults; rates are probabilities in [0, 1] applied per request, in this order. */
export interface Faults {
  /** time from a request's arrival to its reply, in milliseconds (processing included) */
  latencyMs?: number;
  /** HTML 502 page, as a proxy in front of the API would send */
  htmlErrorRate?: number;
  /** 500 with the contract's `{error: true, message}` */
  errorRate?: number;
  /** 200 with a body that is not valid JSON or not the documented shape */
  malformedRate?: number;
  /** restrict faults (other than latency) to these paths */
  paths?: string[];
  /** restrict faults (other than latency) to requests for these server, colocation or transit ids */
  ids?: string[];
}

/** One request the simulator received. The key is never recorded, only which header carried it. */
export interface SimulatorCall {
  /** ms since epoch, by the simulator's clock */
  at: number;
  path: string;
  params: Record<string, string>;
  authHeader: 'authorization' | 'http_authorization' | 'none';
}

export interface SimulatorServerOptions extends SimulatorOptions {
  /** the key clients must send (default `demo-key`) */
  apiKey?: string;
  host?: string;
  /** 0 picks a free port (default) */
  port?: number;
  /** serve HTTPS with this PEM key and certificate */
  tls?: { key: string | Buffer; cert: string | Buffer };
  faults?: Faults;
  /** keep at most this many calls (default 100000; oldest dropped) */
  maxRecordedCalls?: number;
}

export interface Simulator {
  /** base URL, e.g. `http://127.0.0.1:41234` */
  url: string;
  state: SimulatorState;
  calls: SimulatorCall[];
  /** calls to one path, optionally filtered by a parameter */
  callsTo(path: string, params?: Record<string, string>): SimulatorCall[];
  setFaults(faults: Faults): void;
  close(): Promise<void>;
}

type Params = Record<string, string>;
type Handler = (params: Params, reply: FastifyReply) => unknown;

const HTML_502 =
  '<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n';
const FIREWALL_WINDOWS: Record<string, number> = { hour: 3600, day: 86400, week: 604800 };
const GRAPH_TYPES = ['port_bits', 'port_percent', 'port_errors', 'port_upkts'];
const GRAPH_SCALES = ['day', 'week', 'month'];

/** The API's error reply (contract §7) with an HTTP status of the simulator's choosing. */
function fail(reply: FastifyReply, status: number, message: string) {
  return reply.code(status).send({ error: true, message });
}

function routes(state: SimulatorState, seed: number): Record<string, Handler> {
  const server = (p: Params, reply: FastifyReply) => {
    const s = p.server_id ? state.servers.get(p.server_id) : undefined;
    if (!s) fail(reply, p.server_id ? 404 : 400, p.server_id ? 'Server not found.' : 'Missing server_id.');
    return s;
  };
  const power = (next: 'on' | 'off' | 'cycle', message: string): Handler => (p, reply) => {
    const s = server(p, reply);
    if (!s) return reply;
    if (next !== 'cycle') s.power = next;
    else s.power = 'on';
    return { success: true, message };
  };
  const history = (type: SimService['serviceType'], idParam: string): Handler => (p, reply) => {
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
      if (!GRAPH_TYPES.includes(p.type ?? '') || !GRAPH_SCALES.includes(p.scale ?? '')) return fail(reply, 400, 'Invalid type or scale.');
      const png = await renderGraph(seed, p.server_id!, p.type!, p.scale!, state.now());
      return { success: true, base64: png.toString('base64') };
    },
    '/api/v1/dedicated/console': (p, reply) => {
      const s = server(p, reply);
      if (!s) return reply;
      return reply.type('application/x-java-jnlp-file').send(
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
      if (p.type !== 'ptr' || !validator.isFQDN(p.content ?? '')) return fail(reply, 400, 'Invalid PTR content.');
      return { success: true, message: 'PTR record updated.' };
    },
    '/api/v1/dedicated/firewall': history('dedicated', 'server_id'),
    '/api/v1/colocation/firewall': history('colocation', 'colocation_id'),
    '/api/v1/transit/firewall': history('transit', 'transit_id'),
    '/api/v1/dedicated/firewall/sensitivity': (p, reply) => {
      const ip = ipOf(p, reply);
      if (!ip) return reply;
      if (!['low', 'medium', 'normal', 'high'].includes(p.sensitivity ?? '')) return fail(reply, 400, 'Invalid sensitivity.');
      state.firewallSetting(ip).sensitivity = p.sensitivity as 'low';
      return { success: true, message: `IP ${ip} was updated.` };
    },
    '/api/v1/dedicated/firewall/state': (p, reply) => {
      const ip = ipOf(p, reply);
      if (!ip) return reply;
      if (p.state !== '0' && p.state !== '1') return fail(reply, 400, 'Invalid state.');
      // Contract §7: the refusal inside the window is an error reply; the real service sends it with 200.
      if (!state.setFirewallState(ip, p.state)) return fail(reply, 200, 'The IP firewall state was already updated in the last 2 minutes.');
      return { success: true, message: `The firewall state of IP ${ip} has been updated.` };
    },
    '/api/v1/reseller/billing/cancellation': (p, reply) => {
      const s = server(p, reply);
      if (!s) return reply;
      if (p.type === 'delete') s.cancellation = 'none';
      else if (p.type === 'immediate' || p.type === 'end') s.cancellation = p.type;
      else return fail(reply, 400, 'Invalid type.');
      return { success: true, message: p.type === 'delete' ? 'Cancellation request removed.' : 'Cancellation scheduled.' };
    },
    '/api/v1/reseller/locations': () => LOCATIONS,
  };
}

/** Starts a simulator on loopback (default port 0) and resolves once it listens. */
export async function startSimulator(options: SimulatorServerOptions = {}): Promise<Simulator> {
  const apiKey = options.apiKey ?? 'demo-key';
  const state = new SimulatorState(options);
  const random = seededRandom((options.seed ?? 1) * 7919);
  let faults: Faults = { ...options.faults };
  const calls: SimulatorCall[] = [];
  const maxCalls = options.maxRecordedCalls ?? 100_000;
  const app: FastifyInstance = Fastify({ logger: false, ...(options.tls ? { https: options.tls } : {}) });

  app.addContentTypeParser('application/x-www-form-urlencoded', { parseAs: 'string' }, (_req, body, done) => {
    done(null, Object.fromEntries(new URLSearchParams(body as string)));
  });
  // Latency is the time from a request's arrival to its reply: parsing and handling happen inside it,
  // as they would on a real server far away, rather than being added after it.
  const arrivals = new WeakMap<object, number>();
  app.addHook('onRequest', async (request) => {
    arrivals.set(request, performance.now());
  });
  app.addHook('onSend', async (request, _reply, payload) => {
    const wait = (faults.latencyMs ?? 0) - (performance.now() - (arrivals.get(request) ?? 0));
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    return payload;
  });
  app.addHook('preHandler', async (request, reply) => {
    const header = request.headers.authorization !== undefined ? 'authorization' : request.headers.http_authorization !== undefined ? 'http_authorization' : 'none';
    const params: Params = {};
    for (const [k, v] of Object.entries((request.body ?? {}) as Record<string, unknown>)) params[k] = String(v);
    calls.push({ at: state.now(), path: request.url.split('?')[0]!, params, authHeader: header });
    if (calls.length > maxCalls) calls.splice(0, calls.length - maxCalls);
    const key = header === 'none' ? undefined : request.headers[header];
    if (key !== apiKey) return fail(reply, 401, 'Invalid API key.');
    if (faults.paths && !faults.paths.includes(request.url)) return;
    if (faults.ids && !faults.ids.includes(params.server_id ?? params.colocation_id ?? params.transit_id ?? '')) return;
    const roll = random();
    const html = faults.htmlErrorRate ?? 0;
    const error = html + (faults.errorRate ?? 0);
    const malformed = error + (faults.malformedRate ?? 0);
    if (roll < html) return reply.code(502).type('text/html').send(HTML_502);
    if (roll < error) return fail(reply, 500, 'An unexpected error occurred.');
    if (roll < malformed) return reply.code(200).type('application/json').send(random() < 0.5 ? '{"success":true,"firewall":[{"id":' : '42');
  });
  for (const [path, handler] of Object.entries(routes(state, options.seed ?? 1))) {
    app.post(path, async (request, reply) => handler((request.body ?? {}) as Params, reply));
  }
  app.setNotFoundHandler((_request, reply) => fail(reply, 404, 'Unknown endpoint.'));
  app.setErrorHandler((error, _request, reply) => fail(reply, (error as { statusCode?: number }).statusCode ?? 500, (error as Error).message));

  await app.listen({ host: options.host ?? '127.0.0.1', port: options.port ?? 0 });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const host = options.host && options.host !== '0.0.0.0' ? options.host : '127.0.0.1';
  return {
    url: `${options.tls ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${port}`,
    state,
    calls,
    callsTo: (path, params = {}) => calls.filter((c) => c.path === path && Object.entries(params).every(([k, v]) => c.params[k] === v)),
    setFaults: (next) => {
      faults = { ...next };
    },
    close: () => app.close(),
  };
}
