/**
 * The simulator's HTTP(S) server: every operation of the API contract (§4) over POST, form or JSON
 * bodies, the key in `Authorization` or `HTTP_AUTHORIZATION` (§5.2), the contract's error shape (§7),
 * fault knobs (latency, error rate, malformed replies, HTML error pages) and a record of the calls it
 * received. Used by `demo`, the tests and the benchmark.
 */
import { Readable } from 'node:stream';
import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
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
  /**
   * A deterministic misbehaviour for every matching request (after the rates above did not apply):
   * - `success_false`: 200 `{success: false, message}` — the API refusing without the error shape;
   * - `error_true`: 200 `{error: true, message}` (contract §7);
   * - `error_false`: the action (power, PTR, firewall, cancellation) is carried out and confirmed in the
   *   contract's other success form, the provisioning one (§7): `{error: false, message}` instead of
   *   `{success: true, message}`; replies that are not action confirmations pass unchanged;
   * - `echo_key`: 500 `{error: true, message}` whose message echoes the key in the spelling `echoSpelling`;
   * - `huge`: 200 with a JSON body of `hugeBytes` bytes, streamed (never held in memory);
   * - `drip`: the normal reply, its body sent one byte every `dripIntervalMs`;
   * - `rate_limited`: `rateLimitStatus` (429) with `Retry-After: retryAfter`;
   * - `act_then_drop`: the operation is carried out, then the connection is destroyed without a reply;
   * - `act_then_hang`: the operation is carried out, the reply is held back `hangMs`.
   */
  mode?:
    | 'success_false'
    | 'error_true'
    | 'error_false'
    | 'echo_key'
    | 'huge'
    | 'drip'
    | 'rate_limited'
    | 'act_then_drop'
    | 'act_then_hang';
  /** apply `mode` to this many matching requests only, then behave (default: every one) */
  modeCount?: number;
  /** how `echo_key` spells the key: ECHO_SPELLINGS (default `php`, JSON-escaped with `\/`) */
  echoSpelling?: EchoSpelling;
  /** size of a `huge` body, bytes (default 64 MiB) */
  hugeBytes?: number;
  /** pause between two bytes of a `drip` body, ms (default 2000) */
  dripIntervalMs?: number;
  /** `Retry-After` value of a `rate_limited` reply: seconds or an HTTP date (default "30") */
  retryAfter?: string;
  /** status of a `rate_limited` reply (default 429) */
  rateLimitStatus?: 429 | 503;
  /** how long `act_then_hang` holds the reply back, ms (default 60000) */
  hangMs?: number;
  /** restrict faults (other than latency) to these paths */
  paths?: string[];
  /** restrict faults (other than latency) to requests for these server, colocation or transit ids */
  ids?: string[];
}

/**
 * The spellings in which an `echo_key` reply puts the key inside a JSON string, as an API that echoes what it
 * got might: `php` (json_encode's `\/`), `unicode` (every character `\u00XX`), `percent` (URL-encoded, `/`
 * kept), `upper` (upper-cased), `split` (a line break, `\n`, in the middle).
 */
export const ECHO_SPELLINGS = {
  php: (key: string) => JSON.stringify(key).slice(1, -1).replaceAll('/', '\\/'),
  unicode: (key: string) => [...key].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join(''),
  percent: (key: string) => encodeURIComponent(key).replaceAll('%2F', '/'),
  upper: (key: string) => JSON.stringify(key.toUpperCase()).slice(1, -1),
  split: (key: string) =>
    JSON.stringify(`${key.slice(0, key.length >> 1)}\n${key.slice(key.length >> 1)}`).slice(1, -1),
} as const;

/** A key spelling of `echo_key` (see ECHO_SPELLINGS). */
export type EchoSpelling = keyof typeof ECHO_SPELLINGS;

/**
 * One request the simulator received. The key is never recorded: only which header carried it and which of
 * the keys the simulator knows it was (`keyId`).
 */
export interface SimulatorCall {
  /** ms since epoch, by the simulator's clock */
  at: number;
  path: string;
  params: Record<string, string>;
  authHeader: 'authorization' | 'http_authorization' | 'none';
  /**
   * which key was sent: 0 the key the simulator started with (`apiKey`), 1, 2, … the keys `setApiKeys` added
   * later, in the order they were first given; undefined for a key it was never given (or none)
   */
  keyId: number | undefined;
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
  /**
   * the provider's rate limit: above `perSecond` requests in any sliding one-second window (by the
   * simulator's clock) per key, a request is answered `429` with `Retry-After: retryAfter` (default "1")
   * and not carried out
   */
  rateLimit?: { perSecond: number; retryAfter?: string };
}

export interface Simulator {
  /** base URL, e.g. `http://127.0.0.1:41234` */
  url: string;
  state: SimulatorState;
  calls: SimulatorCall[];
  /** requests answered 429 by the `rateLimit` knob */
  readonly rateLimited: number;
  /** calls to one path, optionally filtered by a parameter */
  callsTo(path: string, params?: Record<string, string>): SimulatorCall[];
  setFaults(faults: Faults): void;
  /**
   * The keys accepted from now on (a provider's key rotation: the new key, and the old one while both are
   * valid); the first is the one the `echo_key` fault echoes. Each key keeps the `keyId` it was first given.
   */
  setApiKeys(keys: readonly string[]): void;
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
      if (p.type !== 'ptr' || !validator.isFQDN(p.content ?? '')) return fail(reply, 400, 'Invalid PTR content.');
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

/** An action's `{success: true, message}` as `{error: false, message}` (contract §7); anything else unchanged. */
function otherSuccessForm(payload: unknown): unknown {
  if (typeof payload !== 'string') return payload;
  let reply: unknown;
  try {
    reply = JSON.parse(payload);
  } catch {
    return payload;
  }
  const keys = reply && typeof reply === 'object' ? Object.keys(reply).sort().join(',') : '';
  if (keys !== 'message,success' || (reply as { success: unknown }).success !== true) return payload;
  return JSON.stringify({ error: false, message: (reply as { message: unknown }).message });
}

/** `{"success":true,"firewall":"xxxx…"}` of `bytes` bytes, generated while it is sent. */
function hugeBody(bytes: number): Readable {
  const head = '{"success":true,"firewall":"';
  const tail = '"}';
  let left = Math.max(0, bytes - head.length - tail.length);
  const chunk = Buffer.alloc(64 * 1024, 'x');
  let started = false;
  return new Readable({
    read() {
      if (!started) {
        started = true;
        this.push(head);
        return;
      }
      if (left <= 0) {
        this.push(tail);
        this.push(null);
        return;
      }
      const n = Math.min(left, chunk.length);
      left -= n;
      this.push(n === chunk.length ? chunk : chunk.subarray(0, n));
    },
  });
}

/** The body `text`, one byte every `intervalMs` (stops when the client goes away). */
function drip(text: string, intervalMs: number, reply: FastifyReply): Readable {
  const bytes = Buffer.from(text);
  let i = 0;
  let timer: NodeJS.Timeout | undefined;
  reply.header('content-length', bytes.length);
  const stream = new Readable({
    read() {
      if (i >= bytes.length) return void this.push(null);
      timer = setTimeout(() => this.push(bytes.subarray(i, ++i)), i === 0 ? 0 : intervalMs);
    },
    destroy(error, callback) {
      clearTimeout(timer);
      callback(error);
    },
  });
  return stream;
}

/** Waits `ms`, or until the client closes the connection. */
function holdBack(request: FastifyRequest, ms: number): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    request.raw.socket.once('close', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}

/**
 * The provider's rate limit (`rateLimit.perSecond`): a function that is true when `key` has had that many requests
 * accepted in the second before `at` (simulator clock, ms), and otherwise counts this one. Never true without a limit.
 */
function rateLimiter(perSecond: number | undefined): (key: string, at: number) => boolean {
  /** per key: arrival times of the requests accepted in the last second */
  const windows = new Map<string, number[]>();
  return (key, at) => {
    if (perSecond === undefined) return false;
    const window = windows.get(key) ?? [];
    windows.set(key, window);
    while (window.length > 0 && window[0]! <= at - 1000) window.shift();
    if (window.length >= perSecond) return true;
    window.push(at);
    return false;
  };
}

/** Starts a simulator on loopback (default port 0) and resolves once it listens. */
export async function startSimulator(options: SimulatorServerOptions = {}): Promise<Simulator> {
  let accepted = [options.apiKey ?? 'demo-key'];
  /** every key the simulator was given → its keyId */
  const keyIds = new Map(accepted.map((k, i) => [k, i]));
  const state = new SimulatorState(options);
  const random = seededRandom((options.seed ?? 1) * 7919);
  let faults: Faults = { ...options.faults };
  let modeUsed = 0;
  const calls: SimulatorCall[] = [];
  const maxCalls = options.maxRecordedCalls ?? 100_000;
  const overLimit = rateLimiter(options.rateLimit?.perSecond);
  let rateLimited = 0;
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
  /** Requests the current `mode` applies to after the handler ran (act_then_*, drip). */
  const afterHandler = new WeakMap<object, NonNullable<Faults['mode']>>();
  app.addHook('onSend', async (request, reply, payload) => {
    const wait = (faults.latencyMs ?? 0) - (performance.now() - (arrivals.get(request) ?? 0));
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    const mode = afterHandler.get(request);
    if (mode === 'act_then_drop') {
      request.raw.socket.destroy();
      return payload;
    }
    if (mode === 'act_then_hang') await holdBack(request, faults.hangMs ?? 60_000);
    if (mode === 'drip') return drip(String(payload), faults.dripIntervalMs ?? 2000, reply);
    if (mode === 'error_false') return otherSuccessForm(payload);
    return payload;
  });
  app.addHook('preHandler', async (request, reply) => {
    const header =
      request.headers.authorization !== undefined
        ? 'authorization'
        : request.headers.http_authorization !== undefined
          ? 'http_authorization'
          : 'none';
    const params: Params = {};
    for (const [k, v] of Object.entries((request.body ?? {}) as Record<string, unknown>)) params[k] = String(v);
    const key = header === 'none' ? undefined : request.headers[header];
    const keyId = typeof key === 'string' ? keyIds.get(key) : undefined;
    calls.push({ at: state.now(), path: request.url.split('?')[0]!, params, authHeader: header, keyId });
    if (calls.length > maxCalls) calls.splice(0, calls.length - maxCalls);
    if (typeof key !== 'string' || !accepted.includes(key)) return fail(reply, 401, 'Invalid API key.');
    if (overLimit(key, calls.at(-1)!.at)) {
      rateLimited++;
      return reply
        .code(429)
        .header('retry-after', options.rateLimit?.retryAfter ?? '1')
        .send({ error: true, message: 'Too many requests.' });
    }
    if (faults.paths && !faults.paths.includes(request.url)) return;
    if (faults.ids && !faults.ids.includes(params.server_id ?? params.colocation_id ?? params.transit_id ?? '')) return;
    const roll = random();
    const html = faults.htmlErrorRate ?? 0;
    const error = html + (faults.errorRate ?? 0);
    const malformed = error + (faults.malformedRate ?? 0);
    if (roll < html) return reply.code(502).type('text/html').send(HTML_502);
    if (roll < error) return fail(reply, 500, 'An unexpected error occurred.');
    if (roll < malformed)
      return reply
        .code(200)
        .type('application/json')
        .send(random() < 0.5 ? '{"success":true,"firewall":[{"id":' : '42');
    const mode = faults.mode;
    if (!mode || (faults.modeCount !== undefined && modeUsed >= faults.modeCount)) return;
    modeUsed++;
    switch (mode) {
      case 'success_false':
        return reply.code(200).send({ success: false, message: 'The request could not be completed.' });
      case 'error_true':
        return fail(reply, 200, 'An unexpected error occurred.');
      case 'echo_key':
        // PHP's json_encode escapes "/" as "\/": the key comes back in a spelling a plain search misses.
        return reply
          .code(500)
          .type('application/json')
          .send(
            `{"error":true,"message":"Invalid key ${ECHO_SPELLINGS[faults.echoSpelling ?? 'php'](key)} for this operation."}`,
          );
      case 'huge':
        return reply
          .code(200)
          .type('application/json')
          .send(hugeBody(faults.hugeBytes ?? 64 * 1024 * 1024));
      case 'rate_limited':
        return reply
          .code(faults.rateLimitStatus ?? 429)
          .header('retry-after', faults.retryAfter ?? '30')
          .send({ error: true, message: 'Too many requests.' });
      default:
        afterHandler.set(request, mode);
    }
  });
  for (const [path, handler] of Object.entries(routes(state, options.seed ?? 1))) {
    app.post(path, async (request, reply) => handler((request.body ?? {}) as Params, reply));
  }
  app.setNotFoundHandler((_request, reply) => fail(reply, 404, 'Unknown endpoint.'));
  app.setErrorHandler((error, _request, reply) =>
    fail(reply, (error as { statusCode?: number }).statusCode ?? 500, (error as Error).message),
  );

  await app.listen({ host: options.host ?? '127.0.0.1', port: options.port ?? 0 });
  const address = app.server.address();
  const port = typeof address === 'object' && address ? address.port : 0;
  const host = options.host && options.host !== '0.0.0.0' ? options.host : '127.0.0.1';
  return {
    url: `${options.tls ? 'https' : 'http'}://${host.includes(':') ? `[${host}]` : host}:${port}`,
    state,
    calls,
    get rateLimited() {
      return rateLimited;
    },
    callsTo: (path, params = {}) =>
      calls.filter((c) => c.path === path && Object.entries(params).every(([k, v]) => c.params[k] === v)),
    setFaults: (next) => {
      faults = { ...next };
      modeUsed = 0;
    },
    setApiKeys: (keys) => {
      accepted = [...keys];
      for (const k of keys) if (!keyIds.has(k)) keyIds.set(k, keyIds.size);
    },
    close: () => app.close(),
  };
}
