/**
 * The transport to the hosting API: one undici Agent with bounded connections and timeouts, POST with a
 * form-encoded body and `Authorization: <key>` (per the API contract, §4–§5, and the public client's
 * observed behaviour), a shared concurrency limit, retries with backoff and jitter for reads only, and
 * every failure mapped to a typed UpstreamError. Bytes in, errors out: the resource modules beside this
 * file decide what the bytes mean.
 */
import { rootCertificates } from 'node:tls';
import pLimit, { type LimitFunction } from 'p-limit';
import pRetry from 'p-retry';
import { Agent, request, type Dispatcher } from 'undici';
import {
  ApiError,
  HttpStatusError,
  InsecureUrlError,
  InvalidReplyError,
  UpstreamConnectionError,
  UpstreamError,
  UpstreamTimeoutError,
  UpstreamTlsError,
  type UpstreamContext,
} from '../errors.js';

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
  /** the secret key; sent as `Authorization: <key>`, never logged or put in an error */
  apiKey: string;
  /** connect, headers and body timeout, each, in milliseconds */
  timeoutMs: number;
  /** requests in flight at once, shared by every caller of this client */
  concurrency: number;
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
}

/** A request: which operation, which path, which body parameters; `read` enables retries. */
export interface UpstreamRequest {
  operation: string;
  path: string;
  body: Record<string, string | undefined>;
  read: boolean;
  /** cancels the request (and its retries): a poll run's deadline, or shutdown */
  signal?: AbortSignal;
}

const LOOPBACK = /^(localhost|127(?:\.\d{1,3}){3}|\[::1\])$/i;

/**
 * Returns the normalized base URL (no trailing slash). Throws InsecureUrlError for http:// to a
 * non-loopback host and TypeError for something that is not an http(s) URL.
 */
export function checkBaseUrl(baseUrl: string): string {
  const url = new URL(baseUrl);
  if (url.protocol === 'http:' && !LOOPBACK.test(url.hostname)) throw new InsecureUrlError(url.origin);
  if (url.protocol !== 'https:' && url.protocol !== 'http:') throw new TypeError(`unsupported protocol ${url.protocol}`);
  return url.href.replace(/\/+$/, '');
}

const TIMEOUT_CODES = new Set(['UND_ERR_CONNECT_TIMEOUT', 'UND_ERR_HEADERS_TIMEOUT', 'UND_ERR_BODY_TIMEOUT', 'ETIMEDOUT']);
const TLS_CODES = /^(ERR_TLS_|ERR_SSL_|CERT_|DEPTH_ZERO_SELF_SIGNED_CERT|SELF_SIGNED_CERT_IN_CHAIN|UNABLE_TO_(GET|VERIFY)_|ERR_OSSL_)/;

/** Maps an error thrown by undici to a typed UpstreamError. */
export function classifyTransportError(error: unknown, ctx: UpstreamContext): UpstreamError {
  const err = error as NodeJS.ErrnoException;
  const code = String(err?.code ?? (err?.cause as NodeJS.ErrnoException | undefined)?.code ?? '');
  const detail = `${code ? `${code}: ` : ''}${err?.message ?? String(error)}`;
  if (TIMEOUT_CODES.has(code) || err?.name === 'TimeoutError') return new UpstreamTimeoutError(ctx, `timed out (${detail})`, { cause: error });
  if (TLS_CODES.test(code)) return new UpstreamTlsError(ctx, `TLS failure (${detail})`, { cause: error });
  return new UpstreamConnectionError(ctx, `connection failed (${detail})`, { cause: error });
}

/** The HTTP client of the hosting API. Build one per process; `close()` it on shutdown. */
export class UpstreamClient {
  readonly baseUrl: string;
  readonly #apiKey: string;
  readonly #dispatcher: Dispatcher;
  readonly #ownsDispatcher: boolean;
  readonly #limit: LimitFunction;
  readonly #options: UpstreamClientOptions;

  constructor(options: UpstreamClientOptions) {
    this.baseUrl = checkBaseUrl(options.baseUrl);
    this.#apiKey = options.apiKey;
    this.#options = options;
    this.#limit = pLimit(options.concurrency);
    this.#ownsDispatcher = !options.dispatcher;
    this.#dispatcher =
      options.dispatcher ??
      new Agent({
        connections: options.concurrency,
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
    return this.#limit.pendingCount;
  }

  /** Sends the request and returns the parsed JSON reply. Throws UpstreamError. */
  async json(req: UpstreamRequest): Promise<unknown> {
    return this.#withRetry(req, async () => {
      const { status, text } = await this.#send(req);
      return this.#parseJson(req, status, text);
    });
  }

  /** Sends the request and returns the raw text of a 2xx reply (the console's XML). Throws UpstreamError. */
  async text(req: UpstreamRequest): Promise<string> {
    return this.#withRetry(req, async () => {
      const { status, text } = await this.#send(req);
      const ctx = { operation: req.operation, path: req.path, status };
      const apiError = parseApiError(text);
      if (apiError !== undefined) throw new ApiError(ctx, this.#scrub(apiError));
      if (status < 200 || status >= 300) throw new HttpStatusError(ctx, this.#excerpt(text));
      return text;
    });
  }

  async close(): Promise<void> {
    if (this.#ownsDispatcher) await this.#dispatcher.close();
  }

  async #withRetry<T>(req: UpstreamRequest, attempt: () => Promise<T>): Promise<T> {
    const timed = () => this.#limit(() => this.#observe(req.operation, attempt));
    if (!req.read || this.#options.retries === 0) return timed();
    return pRetry(timed, {
      retries: this.#options.retries,
      minTimeout: this.#options.retryMinDelayMs ?? 250,
      maxTimeout: 5_000,
      factor: 2,
      randomize: true,
      shouldRetry: ({ error }) => error instanceof UpstreamError && error.retryable,
    });
  }

  async #observe<T>(operation: string, attempt: () => Promise<T>): Promise<T> {
    const started = performance.now();
    let outcome = 'success';
    try {
      return await attempt();
    } catch (error) {
      outcome = error instanceof UpstreamError ? error.outcome : 'error';
      throw error;
    } finally {
      this.#options.onRequest?.({ operation, outcome, durationSeconds: (performance.now() - started) / 1000 });
    }
  }

  async #send(req: UpstreamRequest): Promise<{ status: number; text: string }> {
    const form = new URLSearchParams();
    for (const [key, value] of Object.entries(req.body)) if (value !== undefined) form.set(key, value);
    try {
      const res = await request(`${this.baseUrl}${req.path}`, {
        method: 'POST',
        dispatcher: this.#dispatcher,
        headers: {
          authorization: this.#apiKey,
          'content-type': 'application/x-www-form-urlencoded',
          accept: 'application/json',
        },
        body: form.toString(),
        headersTimeout: this.#options.timeoutMs,
        bodyTimeout: this.#options.timeoutMs,
      });
      // Always drain the body, whatever the status, so the connection goes back to the pool.
      return { status: res.statusCode, text: await res.body.text() };
    } catch (error) {
      throw classifyTransportError(error, { operation: req.operation, path: req.path });
    }
  }

  #parseJson(req: UpstreamRequest, status: number, text: string): unknown {
    const ctx = { operation: req.operation, path: req.path, status };
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      if (status < 200 || status >= 300) throw new HttpStatusError(ctx, this.#excerpt(text));
      throw new InvalidReplyError(ctx, 'not JSON', this.#excerpt(text));
    }
    const apiError = errorMessageOf(parsed);
    if (apiError !== undefined) throw new ApiError(ctx, this.#scrub(apiError));
    if (status < 200 || status >= 300) throw new HttpStatusError(ctx, this.#excerpt(text));
    return parsed;
  }

  #excerpt(text: string): string {
    return this.#scrub(text.slice(0, EXCERPT_LENGTH));
  }

  /** An upstream that echoes the key back must not get it into our errors. */
  #scrub(text: string): string {
    return this.#apiKey ? text.replaceAll(this.#apiKey, '[REDACTED]') : text;
  }
}

/** `{error: true, message}` → message (contract §7); anything else → undefined. */
function errorMessageOf(parsed: unknown): string | undefined {
  if (parsed && typeof parsed === 'object' && (parsed as { error?: unknown }).error === true) {
    const message = (parsed as { message?: unknown }).message;
    return typeof message === 'string' ? message : 'error reply without a message';
  }
  return undefined;
}

function parseApiError(text: string): string | undefined {
  if (!text.trimStart().startsWith('{')) return undefined;
  try {
    return errorMessageOf(JSON.parse(text));
  } catch {
    return undefined;
  }
}
