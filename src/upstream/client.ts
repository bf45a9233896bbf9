/**
 * The transport to the hosting API: one undici Agent with bounded connections, POST with a form-encoded body
 * and `Authorization: <key>` (per the API contract, §4–§5, and the public client's observed behaviour), a
 * shared concurrency limit, retries with backoff and jitter for reads only, and every failure mapped to a
 * typed UpstreamError. Every reply is bounded: a total deadline per attempt (headers and body together) and a
 * maximum body size, enforced while streaming. A `429`, or a `503` with `Retry-After`, pauses every request of
 * this client for that long. Every text that comes back passes the scrubber before anything keeps it.
 * Bytes in, errors out: the resource modules beside this file decide what the bytes mean. The mechanisms live
 * beside it: reply reading and its limits in reply.ts, the mapping of transport failures in transport-errors.ts,
 * the read slots in slots.ts, each attempt's deadline (and its settling, whatever the transport does) in
 * attempt-signal.ts, a run's failed attempts in failure-tally.ts, the request shapes in request.ts.
 */
import { type IncomingHttpHeaders, validateHeaderValue } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { rootCertificates } from 'node:tls';
import { Agent, type Dispatcher } from 'undici';
import {
  RateLimitedError,
  UpstreamCancelledError,
  type UpstreamContext,
  UpstreamError,
  UpstreamRequestError,
} from '../errors.js';
import type { Scrubber } from '../scrub.js';
import { ApiKey } from './api-key.js';
import { baseUrlSecrets, checkBaseUrl } from '../config/base-url.js';
import { type BudgetPriority, RequestBudget } from './request-budget.js';
import {
  type CollectedReply,
  collectReply,
  DEFAULT_MAX_RESPONSE_BYTES,
  parseJsonReply,
  retryAfterMs,
  textReply,
} from './reply.js';
import { type Attempt, AttemptSignals, settleBy, type StuckAttempts } from './attempt-signal.js';
import { formBody, type RequestEvent, type UpstreamRequest } from './request.js';
import { ReadSlots } from './slots.js';
import { APART_ABOVE_CHARS, yieldToLoop } from '../slices.js';
import { FailureTally } from './failure-tally.js';
import { type AbortReason, classifyTransportError } from './transport-errors.js';

/**
 * A reply that pauses every request (a 429, or a 503 with Retry-After): its body is not read, only discarded, and
 * the pause starts even when that body fails, stalls or is cut short by an abort (reply.ts `collectReply`).
 */
const pauses = (statusCode: number, headers: IncomingHttpHeaders): boolean =>
  statusCode === 429 || (statusCode === 503 && headers['retry-after'] !== undefined);

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
  /**
   * called when the transport kept an attempt after its abort for longer than `timeoutMs` (it holds requests it
   * will never send: issue 38); a client that owns its Agent replaces it then, and says so with `renewed`
   */
  onTransportStuck?: (event: { operation: string; renewed: boolean }) => void;
}

/** Decodes a parsed reply; `scrub` is the client's, for text nested in the reply that is parsed again. */
export type ReplyDecoder<T> = (reply: unknown, ctx: UpstreamContext, scrub: Scrubber) => T;

/** The HTTP client of the hosting API. Build one per process; `close()` it on shutdown. */
export class UpstreamClient {
  readonly baseUrl: string;
  /** the key in force: each request reads it when it is sent (a rotation applies to the next request) */
  readonly apiKey: ApiKey;
  /** the transport; replaced (when owned) once it holds requests it will never send */
  #dispatcher: Dispatcher;
  readonly #ownsDispatcher: boolean;
  /** failed attempts per caller signal (a poll run's), by failure code: why a run that was cut short failed */
  readonly #failures = new FailureTally();
  readonly #slots: ReadSlots;
  /** each attempt's deadline, and the caller's signal followed */
  readonly #attempts = new AttemptSignals();
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
  /** the headers sent with the key in force (`#headers`) */
  #headersOf: Record<string, string> | undefined;
  /** origin and path per API path (`#target`) */
  readonly #targets = new Map<string, { origin: string; path: string }>();
  /** what settleBy does with an attempt the transport still holds past its deadline (one object, not one per attempt) */
  readonly #stuck: StuckAttempts;

  constructor(options: UpstreamClientOptions) {
    this.baseUrl = checkBaseUrl(options.baseUrl);
    this.apiKey = typeof options.apiKey === 'string' ? new ApiKey(options.apiKey) : options.apiKey;
    this.#options = options;
    this.#slots = new ReadSlots(options.concurrency);
    this.#maxBytes = options.maxResponseBytes ?? DEFAULT_MAX_RESPONSE_BYTES;
    this.#now = options.now ?? Date.now;
    this.apiKey.alsoScrub([...(options.secrets ?? []), ...baseUrlSecrets(options.baseUrl)]);
    this.scrub = this.apiKey.scrub;
    this.budget =
      options.maxRequestsPerSecond === undefined
        ? undefined
        : new RequestBudget({ ratePerSecond: options.maxRequestsPerSecond });
    this.#stuck = { stuckAfterMs: options.timeoutMs, onStuck: (ctx) => this.#transportStuck(ctx) };
    this.#ownsDispatcher = !options.dispatcher;
    this.#dispatcher = options.dispatcher ?? this.#newAgent();
  }

  #newAgent(): Agent {
    const { concurrency, timeoutMs, ca } = this.#options;
    return new Agent({
      // Two more than the reads may hold: an action never waits for a poll's connection.
      connections: concurrency + 2,
      connect: { timeout: timeoutMs, ...(ca ? { ca: [...rootCertificates, ca] } : {}) },
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
      keepAliveTimeout: 30_000,
    });
  }

  /** Requests in flight at once, at most. */
  get concurrency(): number {
    return this.#options.concurrency;
  }

  /** Requests waiting for a slot under the concurrency limit. */
  get pendingCount(): number {
    return this.#slots.pendingCount;
  }

  /** Reads holding a slot under the concurrency limit now. */
  get activeCount(): number {
    return this.#slots.activeCount;
  }

  /**
   * The failed attempts of the requests that carried `signal` (a poll run's), by failure code
   * (transport-errors.ts `failureCode`, e.g. `UND_ERR_INVALID_ARG`, `BM_ERR_TIMEOUT`): why a run failed or was
   * cut short, for its log line.
   */
  failuresOf(signal: AbortSignal): ReadonlyMap<string, number> {
    return this.#failures.of(signal);
  }

  /** ms since epoch until which requests wait after a Retry-After; 0 when not paused. */
  get pausedUntil(): number {
    return this.#pausedUntil > this.#now() ? this.#pausedUntil : 0;
  }

  /**
   * Sends the request and returns the parsed JSON reply, or `decode(reply, ctx, scrub)` of it: decoding runs
   * inside the attempt, so an unreadable reply is reported (outcome `invalid_reply`) like any other failure;
   * `scrub` is the client's, for a decoder that parses text nested in the reply (decodeFirewallHistory).
   * Throws UpstreamError.
   */
  json(req: UpstreamRequest): Promise<unknown>;
  json<T>(req: UpstreamRequest, decode: ReplyDecoder<T>): Promise<T>;
  // Not `async`: #withRetry's promise is returned as it is, without a promise (and two microtasks) around it.
  json<T>(req: UpstreamRequest, decode?: ReplyDecoder<T>): Promise<T | unknown> {
    return this.#withRetry(req, async (attempt) => {
      const { status, text } = await this.#send(req, attempt);
      // A large reply (the server list) is parsed in a turn of the event loop of its own, and decoded in
      // another (slices.ts): a scrape or a timer waits for one of them at most.
      const large = text.length > APART_ABOVE_CHARS;
      if (large) await yieldToLoop();
      const parsed = parseJsonReply({ operation: req.operation, path: req.path, status }, text, req.read);
      if (large) await yieldToLoop();
      return decode ? decode(parsed, { operation: req.operation, path: req.path, status }, this.scrub) : parsed;
    });
  }

  /**
   * As json() with `decode`, but a 2xx reply's bytes go to `fromBytes` first, unscrubbed and never made text:
   * it returns the value (having scrubbed whatever text of the reply it parsed), or undefined and then the
   * reply is scrubbed, parsed and decoded as json() does. For a reply that is mostly data that never becomes
   * text (a graph's base64, graph-reply.ts).
   */
  // Not `async`, as json(): a graphs poll sends hundreds of these.
  jsonFromBytes<T>(
    req: UpstreamRequest,
    fromBytes: (body: Buffer, scrub: Scrubber) => T | undefined,
    decode: ReplyDecoder<T>,
  ): Promise<T> {
    return this.#withRetry(req, async (attempt) => {
      const { status, body } = await this.#send(req, attempt, true);
      const read = status >= 200 && status < 300 ? fromBytes(body!, this.scrub) : undefined;
      if (read !== undefined) return read;
      if (body!.length > APART_ABOVE_CHARS) await yieldToLoop();
      const ctx = { operation: req.operation, path: req.path, status };
      return decode(parseJsonReply(ctx, this.scrub(body!.toString('utf8')), req.read), ctx, this.scrub);
    });
  }

  /** Sends the request and returns the (scrubbed) text of a 2xx reply (the console's XML). Throws UpstreamError. */
  text(req: UpstreamRequest): Promise<string> {
    return this.#withRetry(req, async (attempt) => {
      const { status, text } = await this.#send(req, attempt);
      return textReply({ operation: req.operation, path: req.path, status }, text);
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
  async #withRetry<T>(req: UpstreamRequest, attempt: (attempt: Attempt) => Promise<T>): Promise<T> {
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
        // Cancelled while waiting, it ends at once as cancelled; what the attempt failed with is its cause (and
        // was counted when it failed).
        if (delayMs > 0)
          await sleep(delayMs, undefined, req.signal && { signal: req.signal }).catch(() => {
            throw new UpstreamCancelledError(ctx, 'cancelled while waiting to retry', { cause: error });
          });
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
  async #attempt<T>(req: UpstreamRequest, ctx: UpstreamContext, attempt: (attempt: Attempt) => Promise<T>): Promise<T> {
    if (!req.read) {
      if (this.#pausedUntil !== 0) await this.#waitForPause(req, ctx);
      if (this.budget && !this.budget.tryTake('write')) await this.#takeBudget(req, ctx);
      else if (this.pausedUntil !== 0) throw new RateLimitedError(ctx, this.pausedUntil);
      req.onSent?.();
      return this.#observe(req, attempt);
    }
    const priority = req.background ? 'background' : 'read';
    const queued = this.#slots.acquire(priority, req.signal);
    if (queued)
      await queued.catch((cause: unknown) => {
        throw new UpstreamCancelledError(ctx, 'cancelled while waiting for a slot', { cause });
      });
    try {
      if (req.signal?.aborted) throw new UpstreamCancelledError(ctx, 'cancelled while waiting for a slot');
      if (this.#pausedUntil !== 0) await this.#waitForPause(req, ctx);
      if (this.budget && !this.budget.tryTake(priority)) await this.#takeBudget(req, ctx, priority);
      req.onSent?.();
      return await this.#observe(req, attempt);
    } finally {
      this.#slots.release(priority);
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
      await sleep(until - this.#now(), undefined, req.signal && { signal: req.signal });
    } catch (error) {
      // The library rejects with an AbortError whose cause is the signal's reason: the cause kept is the reason.
      const cause = req.signal?.aborted ? req.signal.reason : error;
      throw new UpstreamCancelledError(ctx, 'cancelled while the API asked us to wait', { cause });
    }
  }

  /**
   * One token of the request budget per attempt, actions first. A write still waiting when a Retry-After
   * pause begins is refused like one that arrived during it.
   */
  async #takeBudget(req: UpstreamRequest, ctx: UpstreamContext, priority: BudgetPriority = 'write'): Promise<void> {
    if (!this.budget) return;
    // A write waits for its token no longer than one attempt's deadline: an action is sent soon or not at all.
    const waitUntil = req.read ? undefined : AbortSignal.timeout(this.#options.timeoutMs);
    const signal = waitUntil && req.signal ? AbortSignal.any([req.signal, waitUntil]) : (waitUntil ?? req.signal);
    try {
      await this.budget.take(priority, signal);
    } catch (error) {
      if (waitUntil?.aborted && !req.signal?.aborted)
        throw new UpstreamCancelledError(ctx, 'not sent: no request budget token within upstream.timeout', {
          cause: error,
        });
      throw new UpstreamCancelledError(ctx, 'cancelled while waiting for the request budget', { cause: error });
    }
    if (!req.read && this.pausedUntil !== 0) throw new RateLimitedError(ctx, this.pausedUntil);
  }

  /** Runs one attempt under its own deadline (and the caller's signal) and reports it to the observer. */
  async #observe<T>(req: UpstreamRequest, attempt: (attempt: Attempt) => Promise<T>): Promise<T> {
    const started = performance.now();
    let outcome = 'success';
    const current = this.#attempts.start(this.#options.timeoutMs, req.signal);
    try {
      return await settleBy(attempt(current), current, req, this.#stuck);
    } catch (error) {
      outcome = error instanceof UpstreamError ? error.outcome : 'error';
      if (req.signal) this.#failures.count(req.signal, error);
      throw error;
    } finally {
      current.end();
      this.#options.onRequest?.({
        operation: req.operation,
        outcome,
        durationSeconds: (performance.now() - started) / 1000,
      });
    }
  }

  /**
   * The transport holds an attempt it will never settle: new requests go to a new Agent; the old one is
   * closed (what it still runs may finish) and destroyed once every attempt it ran is past its deadline.
   */
  #transportStuck(req: UpstreamContext): void {
    const renewed = this.#ownsDispatcher;
    if (renewed) {
      const old = this.#dispatcher;
      this.#dispatcher = this.#newAgent();
      old.close().catch(() => undefined);
      setTimeout(() => old.destroy().catch(() => undefined), 2 * this.#options.timeoutMs).unref();
    }
    this.#options.onTransportStuck?.({ operation: req.operation, renewed });
  }

  /**
   * One HTTP exchange: the body is collected into one buffer by a dispatch handler (reply.ts `collectReply`) and
   * abandoned past `maxResponseBytes`; the text returned is
   * already scrubbed; with `bytes`, the body's bytes instead, as they came (no text). A 429 (or 503 with
   * Retry-After) starts a pause and throws RateLimitedError.
   */
  async #send(
    req: UpstreamRequest,
    attempt: Attempt,
    bytes = false,
  ): Promise<{ status: number; text: string; body?: Buffer }> {
    const ctx: UpstreamContext = { operation: req.operation, path: req.path };
    const { signal } = attempt;
    const reason = () => (signal.aborted ? (signal.reason as AbortReason) : undefined);
    const headers = this.#headers(ctx);
    const target = this.#target(req.path);
    let res: CollectedReply;
    try {
      // The dispatcher's own dispatch(): undici's top-level request() would parse the URL again each time, and
      // its Readable body costs a stream per reply (issue 53).
      res = await collectReply(
        this.#dispatcher,
        {
          origin: target.origin,
          path: target.path,
          method: 'POST',
          headers,
          body: formBody(req.body),
          headersTimeout: this.#options.timeoutMs,
          bodyTimeout: this.#options.timeoutMs,
        },
        { maxBytes: this.#maxBytes, ctx, attempt, discard: pauses },
      );
    } catch (error) {
      if (error instanceof UpstreamError) throw error;
      throw classifyTransportError(error, ctx, reason());
    }
    ctx.status = res.statusCode;
    if (pauses(res.statusCode, res.headers)) {
      const until = this.#now() + retryAfterMs(res.headers['retry-after'], this.#now());
      this.#pausedUntil = Math.max(this.#pausedUntil, until);
      this.budget?.pauseFor(until - this.#now());
      throw new RateLimitedError(ctx, until);
    }
    const { body } = res;
    if (bytes) return { status: res.statusCode, text: '', body };
    if (body.length > APART_ABOVE_CHARS) await yieldToLoop();
    return { status: res.statusCode, text: this.scrub(body.toString('utf8')) };
  }

  /**
   * The headers of a request with the key in force, made (and the key checked) once per key. undici refuses a
   * header it cannot send by throwing at dispatch, which leaves its connection counted busy for good (issue 38):
   * such a key is refused here, before undici sees it. Node's check is undici's character rule.
   */
  #headers(ctx: UpstreamContext): Record<string, string> {
    const authorization = this.apiKey.current;
    if (this.#headersOf?.authorization === authorization) return this.#headersOf;
    try {
      validateHeaderValue('authorization', authorization);
    } catch (cause) {
      throw new UpstreamRequestError(ctx, 'the API key in force cannot be sent as a header (check api_key_file)', {
        cause,
      });
    }
    this.#headersOf = {
      authorization,
      'content-type': 'application/x-www-form-urlencoded',
      accept: 'application/json',
    };
    return this.#headersOf;
  }

  /** Where a path of the API is sent: origin and path as undici's request() would make them, once per path. */
  #target(path: string): { origin: string; path: string } {
    let target = this.#targets.get(path);
    if (!target) {
      const url = new URL(`${this.baseUrl}${path}`);
      target = { origin: url.origin, path: `${url.pathname}${url.search}` };
      this.#targets.set(path, target);
    }
    return target;
  }
}
