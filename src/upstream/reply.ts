/**
 * Reading a reply of the hosting API: its body bounded by `upstream.max_response_bytes` while streaming, its
 * `Retry-After` pause, and its text turned into JSON, an API error (contract §7) or an HTTP status error with
 * an excerpt. The text arrives scrubbed: the client (client.ts) scrubs a body's raw text once, and that one
 * linear pass also removes every secret a JSON string's escapes could spell (scrub.ts), so the JSON is parsed
 * without a reviver, on V8's fast path. The client decides when to send, retry and pause.
 */
import type { Dispatcher } from 'undici';
import {
  ApiError,
  HttpStatusError,
  InvalidReplyError,
  ResponseTooLargeError,
  type UpstreamContext,
} from '../errors.js';

/** How many characters of an unexpected body an error keeps. */
export const EXCERPT_LENGTH = 200;

/** Default of `upstream.max_response_bytes`. */
export const DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024;
/** A Retry-After pause is clamped to this range, ms: an absurd or missing value must not stop polling for days. */
export const MIN_PAUSE_MS = 1_000;
export const MAX_PAUSE_MS = 3_600_000;
/** The pause after a 429 without a (readable) Retry-After, ms. */
export const DEFAULT_PAUSE_MS = 30_000;

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

/**
 * A reply's body, at most `maxBytes`: a declared Content-Length over the cap is refused before reading
 * (ResponseTooLargeError), a chunked body is abandoned once past it. Read whatever the status, so the
 * connection goes back to the pool. Transport failures while reading are thrown as undici raised them.
 */
export async function readBody(res: Dispatcher.ResponseData, maxBytes: number, ctx: UpstreamContext): Promise<Buffer> {
  const declared = Number(res.headers['content-length']);
  if (!Number.isFinite(declared)) return readCapped(res.body, maxBytes, ctx);
  if (declared > maxBytes) {
    // dump() reads at most a small amount, then closes the connection.
    await res.body.dump().catch(() => undefined);
    throw new ResponseTooLargeError(
      ctx,
      `reply of ${declared} bytes exceeds upstream.max_response_bytes (${maxBytes})`,
    );
  }
  return readDeclared(res.body);
}

/** A body of undeclared length (chunked), read as a stream and abandoned past `maxBytes`. */
async function readCapped(body: Dispatcher.ResponseData['body'], maxBytes: number, ctx: UpstreamContext) {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body as AsyncIterable<Buffer>) {
    size += chunk.length;
    // Leaving the loop by a throw destroys the stream and its connection.
    if (size > maxBytes) {
      throw new ResponseTooLargeError(
        ctx,
        `reply exceeds upstream.max_response_bytes (${maxBytes}); aborted after ${size} bytes`,
      );
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size);
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
export const excerpt = (text: string): string => text.slice(0, EXCERPT_LENGTH);

/**
 * The JSON of a reply whose raw text was scrubbed (client.ts; scrub.ts covers every decoded spelling). Throws
 * ApiError for `{error: true, message}`, HttpStatusError for a non-2xx status, InvalidReplyError for a 2xx that
 * is not JSON (a write's outcome then unknown: `read` false). Parsed without a reviver: a second, per-string
 * scrub took V8 off its fast path (issue 43), and the raw text's one scrub already covers every spelling.
 */
export function parseJsonReply(ctx: UpstreamContext & { status: number }, text: string, read: boolean) {
  const { status } = ctx;
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    if (status < 200 || status >= 300) throw new HttpStatusError(ctx, excerpt(text));
    // A write answered 2xx without JSON does not say whether it acted (decodeActionResult's rule).
    throw new InvalidReplyError(ctx, 'not JSON', excerpt(text), { outcomeUnknown: !read });
  }
  const apiError = errorMessageOf(parsed);
  if (apiError !== undefined) throw new ApiError(ctx, apiError);
  if (status < 200 || status >= 300) throw new HttpStatusError(ctx, excerpt(text));
  return parsed;
}

/**
 * The (scrubbed) text of a 2xx reply (the console's XML). Throws ApiError when it is an API error's JSON after
 * all, HttpStatusError for a non-2xx status.
 */
export function textReply(ctx: UpstreamContext & { status: number }, text: string): string {
  const apiError = parseApiError(text);
  if (apiError !== undefined) throw new ApiError(ctx, apiError);
  if (ctx.status < 200 || ctx.status >= 300) throw new HttpStatusError(ctx, excerpt(text));
  return text;
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
