/**
 * The simulator's HTTP(S) server: every operation of the API contract (§4) over POST, form or JSON
 * bodies, the key in `Authorization` or `HTTP_AUTHORIZATION` (§5.2), the contract's error shape (§7),
 * fault knobs (latency, error rate, malformed replies, HTML error pages) and a record of the calls it
 * received. Used by `demo`, the tests and the benchmark. The routes are in routes.ts, the fault knobs and
 * what they do in faults.ts; this file decides which request meets them.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import Fastify, { type FastifyInstance } from 'fastify';
import { afterFault, type FaultMode, type Faults, modeReply, rollFault } from './faults.js';
import { seededRandom } from './prng.js';
import { fail, type Params, routes } from './routes.js';
import { SimulatorState, type SimulatorOptions } from './state.js';

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
  const afterHandler = new WeakMap<object, FaultMode>();
  app.addHook('onSend', async (request, reply, payload) => {
    const wait = (faults.latencyMs ?? 0) - (performance.now() - (arrivals.get(request) ?? 0));
    if (wait > 0) await sleep(wait);
    const mode = afterHandler.get(request);
    return mode ? afterFault(mode, faults, request, reply, payload) : payload;
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
    const rolled = rollFault(reply, faults, random);
    if (rolled) return rolled;
    const mode = faults.mode;
    if (!mode || (faults.modeCount !== undefined && modeUsed >= faults.modeCount)) return;
    modeUsed++;
    const sent = modeReply(reply, mode, faults, key);
    if (sent) return sent;
    afterHandler.set(request, mode);
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
