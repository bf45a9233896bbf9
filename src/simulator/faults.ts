/**
 * The simulator's fault knobs (Faults) and what each does to a reply: the rates rolled before a request's
 * handler (an HTML 502, a contract error, a malformed body), the deterministic modes answered instead of the
 * handler (`success_false`, `echo_key`, `huge`, `rate_limited` …) and those applied to the handler's reply
 * (`drip`, `error_false`, `act_then_drop`, `act_then_hang`). Which request a fault applies to is the
 * server's (server.ts) to decide.
 */
import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { fail } from './routes.js';

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

/** A deterministic misbehaviour (Faults.mode). */
export type FaultMode = NonNullable<Faults['mode']>;

const HTML_502 =
  '<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>\r\n';

/**
 * The fault rates (`htmlErrorRate`, `errorRate`, `malformedRate`, in this order) rolled with `random` for one
 * request: the reply sent instead of the handler's, or undefined when none applies.
 */
export function rollFault(reply: FastifyReply, faults: Faults, random: () => number): FastifyReply | undefined {
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
  return undefined;
}

/**
 * A mode answered instead of the handler: the reply sent; undefined for a mode applied to the handler's reply
 * (afterFault). `key` is the key the request sent (echo_key spells it back).
 */
export function modeReply(reply: FastifyReply, mode: FaultMode, faults: Faults, key: string) {
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
      return undefined;
  }
}

/** A mode applied to the handler's reply `payload` (act_then_*, drip, error_false): the payload to send. */
export async function afterFault(
  mode: FaultMode,
  faults: Faults,
  request: FastifyRequest,
  reply: FastifyReply,
  payload: unknown,
): Promise<unknown> {
  if (mode === 'act_then_drop') {
    request.raw.socket.destroy();
    return payload;
  }
  if (mode === 'act_then_hang') await holdBack(request, faults.hangMs ?? 60_000);
  if (mode === 'drip') return drip(String(payload), faults.dripIntervalMs ?? 2000, reply);
  if (mode === 'error_false') return otherSuccessForm(payload);
  return payload;
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
