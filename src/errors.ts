/**
 * The error catalogue. Every error this project raises on purpose is one of these classes, each with a
 * stable `code` (documented in docs/errors.md; a unit test checks the two agree), an HTTP status where one
 * applies, and the original `cause` kept. Messages carry context — the operation, the path, the status,
 * the API's own message — and never the API key or a token.
 */

/** The code of an error reply for a failure that is none of these classes (a bug): 500, message "internal error". */
export const INTERNAL_ERROR_CODE = 'BM_ERR_INTERNAL';

/** Base class: `code` is stable and unique per class; `statusCode` is the HTTP status this project answers with. */
export class BaremetalError extends Error {
  readonly code: string = 'BM_ERR';
  readonly statusCode: number = 500;
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = new.target.name;
  }
}

/** A configuration file or environment value is invalid; `problems` has one line per key. */
export class ConfigError extends BaremetalError {
  override readonly code = 'BM_ERR_CONFIG';
  constructor(
    readonly problems: string[],
    options?: { cause?: unknown },
  ) {
    super(`invalid configuration:\n  ${problems.join('\n  ')}`, options);
  }
}

/** A parameter for an upstream operation failed validation; no request was sent. */
export class InvalidParameterError extends BaremetalError {
  override readonly code = 'BM_ERR_INVALID_PARAMETER';
  override readonly statusCode = 400;
  constructor(
    readonly operation: string,
    readonly parameter: string,
    detail: string,
  ) {
    super(`${operation}: invalid parameter "${parameter}": ${detail}`);
  }
}

/** The upstream base URL is not HTTPS and not loopback (per the API contract, §5.4: HTTPS only). */
export class InsecureUrlError extends BaremetalError {
  override readonly code = 'BM_ERR_INSECURE_URL';
  constructor(readonly url: string) {
    super(`refusing plain-HTTP upstream "${url}": the API requires HTTPS (only loopback hosts may use http://)`);
  }
}

/** Context common to every failure of one upstream request. */
export interface UpstreamContext {
  /** operation name, e.g. `firewall_history_dedicated` */
  operation: string;
  /** request path, e.g. `/api/v1/dedicated/firewall` */
  path: string;
  /** HTTP status of the reply, when one arrived */
  status?: number;
}

/** Base class of every upstream failure; `retryable` says whether a read may be retried. */
export class UpstreamError extends BaremetalError {
  override readonly code: string = 'BM_ERR_UPSTREAM';
  override readonly statusCode: number = 502;
  readonly retryable: boolean = false;
  /** label value for `baremetal_api_requests_total{outcome}` */
  readonly outcome: string = 'error';
  readonly operation: string;
  readonly path: string;
  readonly status: number | undefined;
  /**
   * Whether the request may have reached the API and been acted on although no reply says so (a timeout or a
   * connection lost after the body was sent). For a write this makes the outcome `unknown`, not `failed`.
   */
  readonly outcomeUnknown: boolean;
  constructor(ctx: UpstreamContext, detail: string, options?: { cause?: unknown; outcomeUnknown?: boolean }) {
    super(
      `${ctx.operation} [POST] "${ctx.path}": ${ctx.status === undefined ? '' : `${ctx.status} `}${detail}`,
      options,
    );
    this.operation = ctx.operation;
    this.path = ctx.path;
    this.status = ctx.status;
    this.outcomeUnknown = options?.outcomeUnknown ?? false;
  }
}

/** The API answered `{error: true, message}` (per the API contract, §7), whatever the HTTP status. */
export class ApiError extends UpstreamError {
  override readonly code = 'BM_ERR_API';
  override readonly outcome = 'api_error';
  constructor(
    ctx: UpstreamContext,
    /** the API's own `message` */
    readonly apiMessage: string,
  ) {
    super(ctx, `API error: ${apiMessage}`);
    // A 5xx with the API's error shape is still a server-side hiccup worth retrying for reads.
    this.retryable = ctx.status !== undefined && ctx.status >= 500;
  }
  override readonly retryable: boolean;
}

/** A non-2xx reply without the API's error shape. 5xx and 429 are retryable for reads. */
export class HttpStatusError extends UpstreamError {
  override readonly code = 'BM_ERR_HTTP_STATUS';
  override readonly outcome = 'http_error';
  override readonly retryable: boolean;
  constructor(
    ctx: UpstreamContext & { status: number },
    readonly bodyExcerpt: string,
  ) {
    super(ctx, `unexpected HTTP status${bodyExcerpt ? `: ${bodyExcerpt}` : ''}`);
    this.retryable = ctx.status >= 500 || ctx.status === 429;
  }
}

/** The reply was not JSON, or JSON of the wrong shape; `bodyExcerpt` holds its first 200 characters. */
export class InvalidReplyError extends UpstreamError {
  override readonly code = 'BM_ERR_INVALID_REPLY';
  override readonly outcome = 'invalid_reply';
  override readonly retryable: boolean;
  constructor(
    ctx: UpstreamContext,
    detail: string,
    readonly bodyExcerpt: string,
    /** `outcomeUnknown`: a write's reply that does not say whether it acted (its outcome is `unknown`) */
    options?: { outcomeUnknown?: boolean },
  ) {
    super(
      ctx,
      `invalid reply: ${detail}${bodyExcerpt ? ` (body starts: ${JSON.stringify(bodyExcerpt)})` : ''}`,
      options,
    );
    // A proxy's HTML 502 page is transient; a 200 with a wrong shape is not.
    this.retryable = ctx.status === undefined || ctx.status >= 500 || ctx.status === 429;
  }
}

/** Connect, headers or body timeout elapsed. */
export class UpstreamTimeoutError extends UpstreamError {
  override readonly code = 'BM_ERR_TIMEOUT';
  override readonly outcome = 'timeout';
  override readonly retryable = true;
}

/** The reply body exceeded `upstream.max_response_bytes`; it was aborted while streaming, never buffered whole. */
export class ResponseTooLargeError extends UpstreamError {
  override readonly code = 'BM_ERR_TOO_LARGE';
  override readonly outcome = 'too_large';
}

/**
 * The API answered 429, or 503 with `Retry-After`: it asks us to slow down. Every request to this upstream
 * pauses until `retryAt` (ms since epoch); reads are not retried before then.
 */
export class RateLimitedError extends UpstreamError {
  override readonly code = 'BM_ERR_RATE_LIMITED';
  override readonly outcome = 'rate_limited';
  constructor(
    ctx: UpstreamContext,
    /** ms since epoch until which the upstream is paused */
    readonly retryAt: number,
    options?: { cause?: unknown },
  ) {
    super(ctx, `rate limited: paused until ${new Date(retryAt).toISOString()}`, options);
  }
}

/** The request was cancelled before it finished: its poll run reached its deadline, or the daemon is stopping. */
export class UpstreamCancelledError extends UpstreamError {
  override readonly code = 'BM_ERR_CANCELLED';
  override readonly outcome = 'cancelled';
}

/** TLS handshake or certificate verification failed. Not retried: it will fail again. */
export class UpstreamTlsError extends UpstreamError {
  override readonly code = 'BM_ERR_TLS';
  override readonly outcome = 'tls_error';
}

/** Connection refused, reset or closed early. */
export class UpstreamConnectionError extends UpstreamError {
  override readonly code = 'BM_ERR_CONNECTION';
  override readonly outcome = 'connection_error';
  override readonly retryable = true;
}

/**
 * The request could not leave: undici refused it at dispatch (a header it cannot send, such as a key holding
 * a line break). Nothing reached the API (a write's outcome is `failed`), and sending it again fails again.
 */
export class UpstreamRequestError extends UpstreamError {
  override readonly code = 'BM_ERR_REQUEST';
  override readonly outcome = 'invalid_request';
}

/** A graph reply's `base64` did not decode to a valid image. */
export class GraphDecodeError extends BaremetalError {
  override readonly code = 'BM_ERR_GRAPH_DECODE';
  constructor(detail: string, options?: { cause?: unknown }) {
    super(`graph image rejected: ${detail}`, options);
  }
}

/** A request to this daemon's HTTP API named something that does not exist. */
export class NotFoundError extends BaremetalError {
  override readonly code = 'BM_ERR_NOT_FOUND';
  override readonly statusCode = 404;
}

/** The journal (SQLite) cannot be opened, read or written: the request fails with 503 so that it is retried. */
export class JournalError extends BaremetalError {
  override readonly code = 'BM_ERR_JOURNAL';
  override readonly statusCode = 503;
}

/**
 * A write for an account was refused by PostgreSQL because the lease epoch it carries is no longer the
 * account's (ha_leases): another replica leads the account now, or this one's lease expired. Nothing was written.
 */
export class StaleLeaseError extends BaremetalError {
  override readonly code = 'BM_ERR_STALE_LEASE';
  override readonly statusCode = 503;
  constructor(
    readonly account: string,
    readonly epoch: string,
  ) {
    super(
      `write for account ${account} refused: lease epoch ${epoch} is no longer current (another replica leads it, or the lease expired)`,
    );
  }
}

/**
 * A power call cannot be decided here yet: this replica does not lead the server's account, or it has not polled
 * the server's firewall history since it took the account (or since it started), and only a leader that has read it knows whether the
 * server is under attack (`remediation.safety.deny_power_when_attacked`). 503 with `Retry-After`, nothing
 * journaled: Alertmanager retries the delivery, and once a leader has decided it the retry is a duplicate.
 */
export class NoLeaderError extends BaremetalError {
  override readonly code = 'BM_ERR_NO_LEADER';
  override readonly statusCode = 503;
  /** seconds the client should wait before retrying (the `Retry-After` header): about a heartbeat and a poll */
  readonly retryAfterSeconds = 5;
}

/** The daemon cannot decide yet (no server list read so far): 503, so Alertmanager retries. */
export class NotReadyError extends BaremetalError {
  override readonly code = 'BM_ERR_NOT_READY';
  override readonly statusCode = 503;
}

/** A request body or query that names a field wrongly, e.g. an alert without the label a rule needs. */
export class BadRequestError extends BaremetalError {
  override readonly code = 'BM_ERR_BAD_REQUEST';
  override readonly statusCode = 400;
}

/** Missing or wrong credentials (401), or none configured at all (403, remediation disabled). */
export class AuthError extends BaremetalError {
  override readonly code: string = 'BM_ERR_UNAUTHORIZED';
  override readonly statusCode: number = 401;
}

/** No credentials are configured, so the protected endpoints are disabled. */
export class ForbiddenError extends AuthError {
  override readonly code = 'BM_ERR_FORBIDDEN';
  override readonly statusCode = 403;
}

/**
 * A basic-auth password could not be checked now: too many checks wait for the bcrypt worker, this client
 * address already has its share of them in flight, or the worker cannot load bcryptjs. 503 with `Retry-After`, so Alertmanager retries
 * the delivery (it drops a 4xx).
 */
export class AuthBusyError extends BaremetalError {
  override readonly code: string = 'BM_ERR_AUTH_BUSY';
  override readonly statusCode: number = 503;
  constructor(
    message: string,
    /** seconds the client should wait before retrying (the `Retry-After` header) */
    readonly retryAfterSeconds: number,
  ) {
    super(message);
  }
}

/**
 * This client address sent more wrong passwords than its allowance: further checks from it are refused
 * without hashing until the allowance refills. 429 with `Retry-After`.
 */
export class AuthRateLimitedError extends AuthBusyError {
  override readonly code = 'BM_ERR_AUTH_RATE_LIMITED';
  override readonly statusCode = 429;
}

/** A request's header block did not arrive within the header deadline, or the request within its deadline. */
export class RequestTimeoutError extends BaremetalError {
  override readonly code = 'BM_ERR_REQUEST_TIMEOUT';
  override readonly statusCode = 408;
}

/** A request's header block is larger than Node's limit (`--max-http-header-size`, 16 KiB by default). */
export class HeadersTooLargeError extends BaremetalError {
  override readonly code = 'BM_ERR_HEADERS_TOO_LARGE';
  override readonly statusCode = 431;
}

/** An `Idempotency-Key` was used before by the same principal, in the account, for a request with a different body (action, target or value). */
export class IdempotencyMismatchError extends BaremetalError {
  override readonly code = 'BM_ERR_IDEMPOTENCY_MISMATCH';
  override readonly statusCode = 422;
}

/** The request conflicts with what another request already decided: an approval already given, denied or expired. */
export class ConflictError extends BaremetalError {
  override readonly code = 'BM_ERR_CONFLICT';
  override readonly statusCode = 409;
}

/**
 * An approval was given (the awaiting row is `approved`, the approval spent) but a guard denied its execution
 * (breaker open, cooldown, cap, budget, attack, unknown target): nothing was sent.
 */
export class ApprovedNotSentError extends BaremetalError {
  override readonly code = 'BM_ERR_APPROVED_NOT_SENT';
  override readonly statusCode = 409;
}

/** Another running daemon holds the lock on `state_dir`; this one refuses to start. */
export class StateDirLockedError extends BaremetalError {
  override readonly code = 'BM_ERR_STATE_DIR_LOCKED';
  constructor(
    readonly stateDir: string,
    /** PID of the process holding the lock */
    readonly holderPid: number,
  ) {
    super(
      `state_dir ${stateDir} is locked by another baremetal-exporter (PID ${holderPid}); two daemons on one state_dir would act twice`,
    );
  }
}

/**
 * A request to Alertmanager's API (`remediation.alertmanager`) failed: no reply in time, refused, a non-2xx
 * status, a reply too large or of an unreadable shape. The message names the method and path, the status and
 * the start of the reply; never a credential.
 */
export class AlertmanagerError extends BaremetalError {
  override readonly code = 'BM_ERR_ALERTMANAGER';
}

/** Every error class, for the catalogue test. */
export const errorClasses = {
  BaremetalError,
  ConfigError,
  InvalidParameterError,
  InsecureUrlError,
  UpstreamError,
  ApiError,
  HttpStatusError,
  InvalidReplyError,
  UpstreamTimeoutError,
  UpstreamTlsError,
  UpstreamConnectionError,
  UpstreamRequestError,
  ResponseTooLargeError,
  RateLimitedError,
  UpstreamCancelledError,
  GraphDecodeError,
  NotFoundError,
  JournalError,
  StaleLeaseError,
  NotReadyError,
  BadRequestError,
  AuthError,
  ForbiddenError,
  AuthBusyError,
  AuthRateLimitedError,
  RequestTimeoutError,
  HeadersTooLargeError,
  IdempotencyMismatchError,
  AlertmanagerError,
  ConflictError,
  ApprovedNotSentError,
  StateDirLockedError,
} as const;
