/**
 * The transport to the hosting API: one undici Agent with bounded connections, POST with a form-encoded body
 * and `Authorization: <key>` (per the API contract, §4–§5, and the public client's observed behaviour), a
 * shared concurrency limit, retries with backoff and jitter for reads only, and every failure mapped to a
 * typed UpstreamError. Every reply is bounded: a total deadline per attempt (headers and body together) and a
 * maximum body size, enforced while streaming. A `429`, or a `503` with `Retry-After`, pauses every request of
 * this client for that long. Every text that comes back passes the scrubber before anything keeps it.
 * Bytes in, errors out: the resource modules beside this file decide what the bytes mean.
 */
import { rootCertificates } from 'node:tls';
import { Agent, request, type Dispatcher } from 'undici';
import {
  ApiError,
  HttpStatusError,
  InvalidReplyError,
  RateLimitedError,
  ResponseTooLargeError,
  UpstreamCancelledError,
  UpstreamConnectionError,
  UpstreamError,
  UpstreamTimeoutError,
  UpstreamTlsError,
  type UpstreamContext,
} from '../errors.js';
import type { Scrubber } from '../scrub.js';
import { ApiKey } from './api-key.js';
import { baseUrlSecrets, checkBaseUrl } from '../config/base-url.js';
import { type BudgetPriority, RequestBudget } from './request-budget.js';

/** How many characters of an unexpected body an error keeps. */
export const EXCERPT_LENGTH = 200;

/** One finished HTTP attempt, reported to the observer (for `baremetal_api_*` metrics). */
export interface RequestEvent {
  operation: string;
  /** `success` or the UpstreamError's `outcome` */
  outcome: string;
  durationSeconds: number;
}

export interface UpstreamClientOptions {
  /** base address, e.g. `https://api.provider.example`; http:// only for loopback */
  baseUrl: string;
  /**
   * the secret key, sent as `Authorization: <key>`, never logged or put in an error; an ApiKey when it may be
   * replaced while the client runs (read per request)
   */
  apiKey: string | ApiKey;
  /** the other secrets the daemon knows (tokens, passwords, other accounts' keys), scrubbed from replies like the key */
  secrets?: readonly string[];
  /** total deadline of one attempt (connect, headers and body together), in milliseconds */
  timeoutMs: number;
  /** largest reply body read, in bytes (default 32 MiB); a larger one is aborted while streaming */
  maxResponseBytes?: number;
  /** requests in flight at once, shared by every caller of this client */
  concurrency: number;
  /** HTTP attempts per second at most (a token bucket shared by every caller; actions first); none when undefined */
  maxRequestsPerSecond?: number;
  /** retries of a failed read; writes are never retried */
  retries: number;
  /** smallest delay before a retry, in milliseconds (doubles each time, randomized ×1–2) */
  retryMinDelayMs?: number;
  /** extra PEM CA certificates trusted besides the system's */
  ca?: string;
  /** replaces the built-in Agent (tests pass undici's MockAgent) */
  dispatcher?: Dispatcher;
  /** called after every HTTP attempt */
  onRequest?: (event: RequestEvent) => void;
  /** ms since epoch (Retry-After pauses); injectable for tests */
  now?: () => number;
}

/** Default of `upstream.max_response_bytes`. */
export const DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024;
/** A Retry-After pause is clamped to this range, ms: an absurd or missing value must not stop polling for days. */
export const MIN_PAUSE_MS = 1_000;
export const MAX_PAUSE_MS = 3_600_000;
/** The pause after a 429 without a (readable) Retry-After, ms. */
export const DEFAULT_PAUSE_MS = 30_000;

/** Slots background reads (graphs, catalog) may hold at most: half the concurrency, at least one. */
export const backgroundSlots = (concurrency: number): number => Math.max(1, Math.floor(concurrency / 2));

/** A request: which operation, which path, which body parameters; `read` enables retries. */
export interface UpstreamRequest {
  operation: string;
  path: string;
  body: Record<string, string | undefined>;
  read: boolean;
  /** cancels the request (and its retries): a poll run's deadline, or shutdown */
  signal?: AbortSignal;
  /**
   * a read that waits behind every other read, for a slot and for a budget token: `true` for pictures and
   * reference data (graphs, catalog), which must never delay attack detection; default false
   */
  background?: boolean;
  /**
   * called each time an attempt of the request leaves for the API (it holds its slot and its budget token);
   * until the first call it was only queued. A poll cut at its deadline tells a slow reply from a queued
   * request so.
   */
  onSent?: () => void;
}

/** What a caller of a read may add to it: its cancellation and whether it has been sent (UpstreamRequest). */
export type ReadOptions = Pick<UpstreamRequest, 'signal' | 'onSent'>;

const TIMEOUT_CODES = new Set([
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_HEADERS_TIMEOUT',
  'UND_ERR_BODY_TIMEOUT',
  'ETIMEDOUT',
]);
const TLS_CODES =
  /^(ERR_TLS_|ERR_SSL_|CERT_|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_(GET|VERIFY)_|ERR_OSSL_)/;
/** Failures before a connection existed: the request certainly never reached the API. */
const NOT_SENT_CODES = new Set([
  'ECONNREFUSED',
  'ENOTFOUND',
  'EAI_AGAIN',
  'EHOSTUNREACH',
  'ENETUNREACH',
  'UND_ERR_CONNECT_TIMEOUT',
  'UND_ERR_DESTROYED',
  'UND_ERR_CLOSED',
]);

/** Why an attempt's signal fired: the attempt's own deadline, or the caller's signal. */
type AbortReason = 'deadline' | 'cancelled';

/**
 * Maps an error thrown by undici to a typed UpstreamError. `aborted` says why the attempt was aborted, if it
 * was. A failure after the connection existed (a timeout, a reset) leaves a write's outcome unknown.
 */
export function classifyTransportError(error: unknown, ctx: UpstreamContext, aborted?: AbortReason): UpstreamError {
  const err = error as NodeJS.ErrnoException;
  const code = String(err?.code ?? (err?.cause as NodeJS.ErrnoException | undefined)?.code ?? '');
  const detail = `${code ? `${code}: ` : ''}${err?.message ?? String(error)}`;
  if (aborted === 'cancelled')
    return new UpstreamCancelledError(ctx, 'cancelled', { cause: error, outcomeUnknown: true });
  if (TLS_CODES.test(code)) return new UpstreamTlsError(ctx, `TLS failure (${detail})`, { cause: error });
  const outcomeUnknown = !NOT_SENT_CODES.has(code);
  if (aborted === 'deadline')
    return new UpstreamTimeoutError(ctx, 'timed out (deadline of the attempt elapsed)', {
      cause: error,
      outcomeUnknown,
    });
  if (TIMEOUT_CODES.has(code) || err?.name === 'TimeoutError')
    return new UpstreamTimeoutError(ctx, `timed out (${detail})`, { cause: error, outcomeUnknown });
  return new UpstreamConnectionError(ctx, `connection failed (${detail})`, { cause: error, outcomeUnknown });
}

/**
 * A `Retry-After` value (RFC 9110 §10.2.3: delay-seconds or an HTTP date) → ms from `now`, clamped to
 * MIN_PAUSE_MS…MAX_PAUSE_MS; DEFAULT_PAUSE_MS when absent or unreadable.
 */
export function retryAfterMs(value: string | string[] | undefined, now: number): number {
  const text = (Array.isArray(value) ? value[0] : value)?.trim() ?? '';
  let ms = DEFAULT_PAUSE_MS;
  if (/^\d{1,10}$/.test(text)) ms = Number(text) * 1000;
  else if (text !== '' && Number.isFinite(Date.parse(text))) ms = Date.parse(text) - now;
  return Math.min(MAX_PAUSE_MS, Math.max(MIN_PAUSE_MS, ms));
}

/** Resolves after `ms`, or rejects with the signal's reason when it fires first. */
function wait(ms: number, signal: AbortSignal | undefined): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(signal.reason);
    const onAbort = () => {
      clearTimeout(timer);
      reject(signal!.reason);
    };
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}

/** The HTTP client of the hosting API. Build one per process; `close()` it on shutdown. */
export class UpstreamClient {
  readonly baseUrl: string;
  /** the key in force: each request reads it when it is sent (a rotation applies to the next request) */
  readonly apiKey: ApiKey;
  readonly #dispatcher: Dispatcher;
  readonly #ownsDispatcher: boolean;
  /** reads in flight under the concurrency limit */
  #active = 0;
  /** of which background reads (at most backgroundSlots) */
  #activeBackground = 0;
  /** reads waiting for a slot, first come first served: every waiting read before any waiting background read */
  readonly #queued: { read: Array<() => void>; background: Array<() => void> } = { read: [], background: [] };
  /** attempts in flight per caller signal (a poll run's): one abort listener per signal, not one per attempt */
  readonly #following = new WeakMap<AbortSignal, Set<AbortController>>();
  /** the request budget (token bucket), when `maxRequestsPerSecond` is set */
  readonly budget: RequestBudget | undefined;
  readonly #options: UpstreamClientOptions;
  readonly #maxBytes: number;
  readonly #now: () => number;
  /**
   * Removes every key in force since start and `secrets` from every text the upstream sends, however spelled
   * (see scrub.ts).
   */
  readonly scrub: Scrubber;
  /** ms since epoch until which every request waits (a Retry-After pause); 0 = not paused */
  #pausedUntil = 0;

  constructor(options: UpstreamClientOptions) {
    this.baseUrl = checkBaseUrl(options.baseUrl);
    this.apiKey = typeof options.apiKey === 'string' ? new ApiKey(options.apiKey) : options.apiKey;
    this.#options = options;
    this.#maxBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    this.#now = options.now ?? Date.now;
    this.apiKey.alsoScrub([...(options.secrets ?? []), ...baseUrlSecrets(options.baseUrl)]);
    this.scrub = this.apiKey.scrub;
    this.budget =
      options.maxRequestsPerSecond === undefined
        ? undefined
        : new RequestBudget({ ratePerSecond: options.maxRequestsPerSecond });
    this.#ownsDispatcher = !options.dispatcher;
    this.#dispatcher =
      options.dispatcher ??
      new Agent({
        // Two more than the reads may hold: an action never waits for a poll's connection.
        connections: options.concurrency + 2,
        connect: {
          timeout: options.timeoutMs,
          ...(options.ca ? { ca: [...rootCertificates, options.ca] } : {}),
        },
        headersTimeout: options.timeoutMs,
        bodyTimeout: options.timeoutMs,
        keepAliveTimeout: 30_000,
      });
  }

  /** Requests in flight at once, at most. */
  get concurrency(): number {
    return this.#options.concurrency;
  }

  /** Requests waiting for a slot under the concurrency limit. */
  get pendingCount(): number {
    return this.#queued.read.length + this.#queued.background.length;
  }

  /** ms since epoch until which requests wait after a Retry-After; 0 when not paused. */
  get pausedUntil(): number {
    return this.#pausedUntil > this.#now() ? this.#pausedUntil : 0;
  }

  /**
   * Sends the request and returns the parsed JSON reply, or `decode(reply, ctx)` of it: decoding runs inside
   * the attempt, so an unreadable reply is reported (outcome `invalid_reply`) like any other failure.
   * Throws UpstreamError.
   */
  async json(req: UpstreamRequest): Promise<unknown>;
  async json<T>(req: UpstreamRequest, decode: (reply: unknown, ctx: UpstreamContext) => T): Promise<T>;
  async json<T>(req: UpstreamRequest, decode?: (reply: unknown, ctx: UpstreamContext) => T): Promise<T | unknown> {
    return this.#withRetry(req, async (signal) => {
      const { status, text } = await this.#send(req, signal);
      const parsed = this.#parseJson(req, status, text);
      return decode ? decode(parsed, { operation: req.operation, path: req.path, status }) : parsed;
    });
  }

  /** Sends the request and returns the (scrubbed) text of a 2xx reply (the console's XML). Throws UpstreamError. */
  async text(req: UpstreamRequest): Promise<string> {
    return this.#withRetry(req, async (signal) => {
      const { status, text } = await this.#send(req, signal);
      const ctx = { operation: req.operation, path: req.path, status };
      const apiError = parseApiError(text, this.scrub);
      if (apiError !== undefined) throw new ApiError(ctx, apiError);
      if (status < 200 || status >= 300) throw new HttpStatusError(ctx, excerpt(text));
      return text;
    });
  }

  async close(): Promise<void> {
    if (this.#ownsDispatcher) await this.#dispatcher.close();
  }

  /**
   * The attempts of one request: a read is retried (after a backoff of `retryMinDelayMs` doubling each time,
   * randomized ×1–2, at most 5 s) when its error is retryable or a 429, unless its signal was aborted; a
   * write is sent once. A loop rather than p-retry: the success path, taken by nearly every one of a poll's
   * 10,000 requests, then costs no options object, validation or extra promises.
   */
  async #withRetry<T>(req: UpstreamRequest, attempt: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const ctx = { operation: req.operation, path: req.path };
    const retries = req.read ? this.#options.retries : 0;
    for (let retry = 0; ; retry++) {
      try {
        return await this.#attempt(req, ctx, attempt);
      } catch (error) {
        const retryable = error instanceof UpstreamError && (error.retryable || error instanceof RateLimitedError);
        if (retry >= retries || req.signal?.aborted || !retryable) throw error;
        const minMs = this.#options.retryMinDelayMs ?? 250;
        const delayMs = Math.min(Math.round((Math.random() + 1) * minMs * 2 ** retry), 5_000);
        // Not cancellable: a cancelled request's next attempt ends at once as cancelled (and is counted so).
        if (delayMs > 0) await wait(delayMs, undefined);
      }
    }
  }

  /**
   * One attempt. A write: the Retry-After pause (refused at once), a token of the budget, sent at once; it
   * skips the concurrency queue so that it never waits behind polls. A read: a slot under the concurrency
   * limit, then the pause, then a token, then sent. The slot comes first so that a granted token is spent
   * at once: a read that took its token and then queued for a slot would go out later in a bunch with
   * the others queued, and the upstream would see more than the budget's rate plus its burst in a second.
   * A background read waits behind every other read, for its slot and for its token, and background reads
   * hold at most half the slots: a slow picture never keeps attack detection from a slot.
   */
  async #attempt<T>(
    req: UpstreamRequest,
    ctx: UpstreamContext,
    attempt: (signal: AbortSignal) => Promise<T>,
  ): Promise<T> {
    if (!req.read) {
      if (this.#pausedUntil !== 0) await this.#waitForPause(req, ctx);
      if (this.budget && !this.budget.tryTake('write')) await this.#takeBudget(req, ctx);
      else if (this.pausedUntil !== 0) throw new RateLimitedError(ctx, this.pausedUntil);
      req.onSent?.();
      return this.#observe(req, attempt);
    }
    const priority = req.background ? 'background' : 'read';
    if (this.#canStart(priority)) this.#holdSlot(priority);
    else await new Promise<void>((resolve) => this.#queued[priority].push(resolve));
    try {
      if (req.signal?.aborted) throw new UpstreamCancelledError(ctx, 'cancelled while waiting for a slot');
      if (this.#pausedUntil !== 0) await this.#waitForPause(req, ctx);
      if (this.budget && !this.budget.tryTake(priority)) await this.#takeBudget(req, ctx, priority);
      req.onSent?.();
      return await this.#observe(req, attempt);
    } finally {
      this.#releaseSlot(priority);
    }
  }

  /**
   * A read may take a slot: one is free and, for a background read, no other read waits and background
   * reads hold fewer than BACKGROUND_SLOTS of them (slow pictures never hold every slot: issue 33).
   */
  #canStart(priority: 'read' | 'background'): boolean {
    if (this.#active >= this.#options.concurrency) return false;
    if (priority === 'read') return true;
    return this.#queued.read.length === 0 && this.#activeBackground < backgroundSlots(this.#options.concurrency);
  }

  #holdSlot(priority: 'read' | 'background'): void {
    this.#active++;
    if (priority === 'background') this.#activeBackground++;
  }

  /** Frees a slot and passes it on: to the next waiting read, else to the next waiting background read. */
  #releaseSlot(priority: 'read' | 'background'): void {
    this.#active--;
    if (priority === 'background') this.#activeBackground--;
    for (const next of ['read', 'background'] as const) {
      if (this.#queued[next].length === 0 || !this.#canStart(next)) continue;
      this.#holdSlot(next);
      this.#queued[next].shift()!();
      return;
    }
  }

  /**
   * A read waits out a Retry-After pause (cancellable by its signal); a write is refused at once without being
   * sent: an action must not fire minutes after it was decided.
   */
  async #waitForPause(req: UpstreamRequest, ctx: UpstreamContext): Promise<void> {
    const until = this.pausedUntil;
    if (until === 0) return;
    if (!req.read) throw new RateLimitedError(ctx, until);
    try {
      await wait(until - this.#now(), req.signal);
    } catch (error) {
      throw new UpstreamCancelledError(ctx, 'cancelled while the API asked us to wait', { cause: error });
    }
  }

  /**
   * One token of the request budget per attempt, actions first. A write still waiting when a Retry-After
   * pause begins is refused like one that arrived during it.
   */
  async #takeBudget(req: UpstreamRequest, ctx: UpstreamContext, priority: BudgetPriority = 'write'): Promise<void> {
    if (!this.budget) return;
    try {
      await this.budget.take(priority, req.signal);
    } catch (error) {
      throw new UpstreamCancelledError(ctx, 'cancelled while waiting for the request budget', { cause: error });
    }
    if (!req.read && this.pausedUntil !== 0) throw new RateLimitedError(ctx, this.pausedUntil);
  }

  /** Runs one attempt under its own deadline (and the caller's signal) and reports it to the observer. */
  async #observe<T>(req: UpstreamRequest, attempt: (signal: AbortSignal) => Promise<T>): Promise<T> {
    const started = performance.now();
    let outcome = 'success';
    const controller = new AbortController();
    const deadline = setTimeout(() => controller.abort('deadline' satisfies AbortReason), this.#options.timeoutMs);
    const following = req.signal && this.#follow(req.signal, controller);
    try {
      return await attempt(controller.signal);
    } catch (error) {
      outcome = error instanceof UpstreamError ? error.outcome : 'error';
      throw error;
    } finally {
      clearTimeout(deadline);
      following?.delete(controller);
      this.#options.onRequest?.({
        operation: req.operation,
        outcome,
        durationSeconds: (performance.now() - started) / 1000,
      });
    }
  }

  /**
   * Aborts `controller` (as cancelled) when `signal` aborts. One listener per signal, on the set of its
   * attempts in flight: a poll run's signal would otherwise get and lose a listener per request.
   */
  #follow(signal: AbortSignal, controller: AbortController): Set<AbortController> {
    let attempts = this.#following.get(signal);
    if (!attempts) {
      const set = new Set<AbortController>();
      attempts = set;
      this.#following.set(signal, set);
      signal.addEventListener(
        'abort',
        () => {
          for (const each of set) each.abort('cancelled' satisfies AbortReason);
          set.clear();
        },
        { once: true },
      );
    }
    if (signal.aborted) controller.abort('cancelled' satisfies AbortReason);
    else attempts.add(controller);
    return attempts;
  }

  /**
   * One HTTP exchange: the body is read as a stream and aborted past `maxResponseBytes`; the text returned is
   * already scrubbed. A 429 (or 503 with Retry-After) starts a pause and throws RateLimitedError.
   */
  async #send(req: UpstreamRequest, signal: AbortSignal): Promise<{ status: number; text: string }> {
    const form = new URLSearchParams();
    for (const [key, value] of Object.entries(req.body)) if (value !== undefined) form.set(key, value);
    const ctx: UpstreamContext = { operation: req.operation, path: req.path };
    const reason = () => (signal.aborted ? (signal.reason as AbortReason) : undefined);
    let res: Dispatcher.ResponseData;
    try {
      res = await request(`${this.baseUrl}${req.path}`, {
        method: 'POST',
        dispatcher: this.#dispatcher,
        headers: {
          authorization: this.apiKey.current,
          'content-type': 'application/x-www-form-urlencoded',
          accept: 'application/json',
        },
        body: form.toString(),
        signal,
        headersTimeout: this.#options.timeoutMs,
        bodyTimeout: this.#options.timeoutMs,
      });
    } catch (error) {
      throw classifyTransportError(error, ctx, reason());
    }
    ctx.status = res.statusCode;
    const retryAfter = res.headers['retry-after'];
    if (res.statusCode === 429 || (res.statusCode === 503 && retryAfter !== undefined)) {
      await res.body.dump().catch(() => undefined);
      const until = this.#now() + retryAfterMs(retryAfter, this.#now());
      this.#pausedUntil = Math.max(this.#pausedUntil, until);
      this.budget?.pauseFor(until - this.#now());
      throw new RateLimitedError(ctx, until);
    }
    const declared = Number(res.headers['content-length']);
    if (Number.isFinite(declared) && declared > this.#maxBytes) {
      // dump() reads at most a small amount, then closes the connection.
      await res.body.dump().catch(() => undefined);
      throw new ResponseTooLargeError(
        ctx,
        `reply of ${declared} bytes exceeds upstream.max_response_bytes (${this.#maxBytes})`,
      );
    }
    // Read whatever the status, so the connection goes back to the pool; stop at the size cap.
    let body: Buffer;
    try {
      body = Number.isFinite(declared) ? await readDeclared(res.body) : await this.#readCapped(res.body, ctx);
    } catch (error) {
      if (error instanceof UpstreamError) throw error;
      throw classifyTransportError(error, ctx, reason());
    }
    return { status: res.statusCode, text: this.scrub(body.toString('utf8')) };
  }

  /** A body of undeclared length (chunked), read as a stream and abandoned past `maxResponseBytes`. */
  async #readCapped(body: Dispatcher.ResponseData['body'], ctx: UpstreamContext): Promise<Buffer> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of body as AsyncIterable<Buffer>) {
      size += chunk.length;
      // Leaving the loop by a throw destroys the stream and its connection.
      if (size > this.#maxBytes) {
        throw new ResponseTooLargeError(
          ctx,
          `reply exceeds upstream.max_response_bytes (${this.#maxBytes}); aborted after ${size} bytes`,
        );
      }
      chunks.push(chunk);
    }
    return Buffer.concat(chunks, size);
  }

  #parseJson(req: UpstreamRequest, status: number, text: string): unknown {
    const ctx = { operation: req.operation, path: req.path, status };
    let parsed: unknown;
    try {
      parsed = parseScrubbed(text, this.scrub);
    } catch {
      if (status < 200 || status >= 300) throw new HttpStatusError(ctx, excerpt(text));
      // A write answered 2xx without JSON does not say whether it acted (decodeActionResult's rule).
      throw new InvalidReplyError(ctx, 'not JSON', excerpt(text), { outcomeUnknown: !req.read });
    }
    const apiError = errorMessageOf(parsed);
    if (apiError !== undefined) throw new ApiError(ctx, apiError);
    if (status < 200 || status >= 300) throw new HttpStatusError(ctx, excerpt(text));
    return parsed;
  }
}

/**
 * A body whose Content-Length was checked against the cap: HTTP/1.1 framing ends it after that many bytes,
 * so it is read whole (undici's collector, cheaper than iterating the stream).
 */
async function readDeclared(body: Dispatcher.ResponseData['body']): Promise<Buffer> {
  const bytes = await body.bytes();
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

/** The start of a (scrubbed) reply, for an error message. */
const excerpt = (text: string): string => text.slice(0, EXCERPT_LENGTH);

/** `{error: true, message}` → message (contract §7); anything else → undefined. */
function errorMessageOf(parsed: unknown): string | undefined {
  if (parsed && typeof parsed === 'object' && (parsed as { error?: unknown }).error === true) {
    const message = (parsed as { message?: unknown }).message;
    return typeof message === 'string' ? message : 'error reply without a message';
  }
  return undefined;
}

/**
 * A reply's JSON with every decoded string scrubbed: the raw text is scrubbed already, but a JSON escape
 * (`\u0041`, `\n` inside the key) spells a secret the raw text does not show. Only a string with an escape can
 * decode to something its raw text did not say, so a reply without a backslash is parsed as it is.
 */
function parseScrubbed(text: string, scrub: Scrubber): unknown {
  if (!text.includes('\\')) return JSON.parse(text);
  return JSON.parse(text, (_key, value: unknown) => (typeof value === 'string' ? scrub(value) : value));
}

function parseApiError(text: string, scrub: Scrubber): string | undefined {
  if (!text.trimStart().startsWith('{')) return undefined;
  try {
    return errorMessageOf(parseScrubbed(text, scrub));
  } catch {
    return undefined;
  }
}
