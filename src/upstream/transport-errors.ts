/**
 * Transport failures of the hosting API's client: an error thrown by undici (or the network stack beneath it)
 * mapped to a typed UpstreamError, and whether the request can have reached the API (a write's outcome).
 */
import {
  BaremetalError,
  UpstreamCancelledError,
  UpstreamConnectionError,
  type UpstreamContext,
  type UpstreamError,
  UpstreamTimeoutError,
  UpstreamTlsError,
} from '../errors.js';

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
export type AbortReason = 'deadline' | 'cancelled';

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
 * The code a failed attempt is counted under in a run's log line: the transport's own code where one caused it
 * (`UND_ERR_INVALID_ARG`, `ECONNREFUSED`, `ERR_INVALID_CHAR`), else the error's (`BM_ERR_API`, `BM_ERR_TIMEOUT`);
 * a cancellation is `BM_ERR_CANCELLED` whatever aborted it.
 */
export function failureCode(error: unknown): string {
  if (error instanceof UpstreamCancelledError) return error.code;
  const cause = (error as { cause?: { code?: unknown } } | undefined)?.cause?.code;
  if (typeof cause === 'string' && cause !== '') return cause;
  return error instanceof BaremetalError ? error.code : 'error';
}
