/**
 * The client of Alertmanager's API v2 (`remediation.alertmanager`): its alerts (`GET /api/v2/alerts`, which
 * also lists the silenced and inhibited ones), and silences (`POST /api/v2/silences`,
 * `DELETE /api/v2/silence/{id}`). One undici Agent with the configured TLS; every request bounded by
 * `timeout` (connection to the last byte) and every reply by `max_response_bytes`. Credentials go in the
 * `Authorization` header only: never in an error, a log line or a metric.
 *
 * An unreachable Alertmanager is not a crash: each call throws AlertmanagerError, `onOutcome` counts it, and the
 * log gets one line when Alertmanager stops answering and one when it answers again, not one per call.
 */
import { rootCertificates } from 'node:tls';
import type { Logger } from 'pino';
import { Agent, type Dispatcher, request } from 'undici';
import type { AlertmanagerConfig } from '../config/types.js';
import { AlertmanagerError } from '../errors.js';
import { createScrubber, type Scrubber, scrubbedExcerpt } from '../scrub.js';
import {
  decodeAlerts,
  decodeSilenceId,
  decodeStatus,
  decodeSilences,
  type AlertmanagerAlert,
  type AlertmanagerSilence,
  type AlertmanagerStatus,
} from './decode.js';

export type { AlertmanagerAlert, AlertmanagerSilence, AlertmanagerStatus } from './decode.js';

/** The operations, as `baremetal_alertmanager_requests_total{operation}` names them. */
export const ALERTMANAGER_OPERATIONS = [
  'get_alerts',
  'get_status',
  'get_silences',
  'create_silence',
  'expire_silence',
] as const;
export type AlertmanagerOperation = (typeof ALERTMANAGER_OPERATIONS)[number];

/** One matcher of a silence, as API v2 spells it. */
export interface SilenceMatcher {
  name: string;
  value: string;
  isRegex: boolean;
  isEqual: boolean;
}

/** A silence to create: its matchers, its end (ms since epoch), who and why. */
export interface NewSilence {
  matchers: SilenceMatcher[];
  /** ms since epoch */
  startsAt: number;
  /** ms since epoch */
  endsAt: number;
  createdBy: string;
  comment: string;
}

export interface AlertmanagerClientOptions {
  config: AlertmanagerConfig;
  logger: Logger;
  /** replaces the built-in Agent (tests pass undici's MockAgent) */
  dispatcher?: Dispatcher;
  /** called after every request: its operation and whether it succeeded (the daemon counts it) */
  onOutcome?: (operation: AlertmanagerOperation, ok: boolean) => void;
}

export class AlertmanagerClient {
  readonly #config: AlertmanagerConfig;
  readonly #logger: Logger;
  readonly #dispatcher: Dispatcher;
  readonly #ownsDispatcher: boolean;
  readonly #onOutcome: AlertmanagerClientOptions['onOutcome'];
  readonly #authorization: string | undefined;
  /**
   * Scrubs the credentials from every text taken from Alertmanager (or a proxy in front of it: a 401 page may
   * echo the token) before it is part of an error, which the outage gate journals and answers and the log keeps.
   */
  readonly #scrub: Scrubber;
  /** the last request failed: logged once until one succeeds */
  #failing = false;

  constructor(options: AlertmanagerClientOptions) {
    const { config } = options;
    this.#config = config;
    this.#logger = options.logger;
    this.#onOutcome = options.onOutcome;
    this.#ownsDispatcher = options.dispatcher === undefined;
    this.#dispatcher = options.dispatcher ?? newAgent(config);
    this.#authorization = config.authorization
      ? `${config.authorization.type} ${config.authorization.credentials}`
      : config.basicAuth
        ? `Basic ${Buffer.from(`${config.basicAuth.username}:${config.basicAuth.password}`).toString('base64')}`
        : undefined;
    const secrets = [
      config.authorization?.credentials,
      config.basicAuth?.password,
      this.#authorization,
      this.#authorization?.split(' ').slice(1).join(' '),
      // No URL password: config/alertmanager.ts refuses credentials in the URL.
    ];
    this.#scrub = createScrubber(secrets.filter((s): s is string => s !== undefined && s.length > 0));
  }

  /** Every alert Alertmanager holds that has not resolved (active, silenced, inhibited). Throws AlertmanagerError. */
  async alerts(): Promise<AlertmanagerAlert[]> {
    const path = '/api/v2/alerts?active=true&silenced=true&inhibited=true&unprocessed=true';
    return this.#call('get_alerts', 'GET', path, undefined, decodeAlerts);
  }

  /**
   * When this Alertmanager process started (`GET /api/v2/status`, its `uptime`): it holds no alert from before
   * then until Prometheus sends them again. Throws AlertmanagerError.
   */
  async status(): Promise<AlertmanagerStatus> {
    return this.#call('get_status', 'GET', '/api/v2/status', undefined, decodeStatus);
  }

  /** Every silence Alertmanager holds (active, pending, expired). Throws AlertmanagerError. */
  async silences(): Promise<AlertmanagerSilence[]> {
    return this.#call('get_silences', 'GET', '/api/v2/silences', undefined, decodeSilences);
  }

  /** Creates `silence`; returns its id. Throws AlertmanagerError. */
  async createSilence(silence: NewSilence): Promise<string> {
    const body = {
      ...silence,
      startsAt: new Date(silence.startsAt).toISOString(),
      endsAt: new Date(silence.endsAt).toISOString(),
    };
    return this.#call('create_silence', 'POST', '/api/v2/silences', body, decodeSilenceId);
  }

  /** Expires silence `id` now. An already expired silence is not an error. Throws AlertmanagerError. */
  async expireSilence(id: string): Promise<void> {
    await this.#call('expire_silence', 'DELETE', `/api/v2/silence/${encodeURIComponent(id)}`, undefined, () => {});
  }

  /** Closes the connections (the daemon stopping). */
  async close(): Promise<void> {
    if (this.#ownsDispatcher) await this.#dispatcher.close();
  }

  async #call<T>(
    operation: AlertmanagerOperation,
    method: 'GET' | 'POST' | 'DELETE',
    path: string,
    body: unknown,
    decode: (json: unknown, what: string) => T,
  ): Promise<T> {
    const what = `[${method}] "${path.split('?')[0]}"`;
    try {
      const text = await this.#send(method, path, body, what);
      const result = decode(text === '' ? undefined : parseJson(text, what, this.#scrub), what);
      this.#settled(operation, true);
      return result;
    } catch (error) {
      // Every message holds text Alertmanager sent (a reply's excerpt, a field it got wrong): scrubbed here, once.
      const failure =
        error instanceof AlertmanagerError
          ? new AlertmanagerError(this.#scrub(error.message))
          : new AlertmanagerError(this.#scrub(`Alertmanager ${what}: ${reason(error)}`));
      this.#settled(operation, false, failure);
      throw failure;
    }
  }

  /** The reply's text (2xx only), read within the deadline and the size cap. */
  async #send(method: string, path: string, body: unknown, what: string): Promise<string> {
    const { url, timeoutMs, maxResponseBytes } = this.#config;
    const headers: Record<string, string> = { accept: 'application/json' };
    if (this.#authorization) headers.authorization = this.#authorization;
    if (body !== undefined) headers['content-type'] = 'application/json';
    const signal = AbortSignal.timeout(timeoutMs);
    const res = await request(`${url}${path}`, {
      method,
      headers,
      ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      dispatcher: this.#dispatcher,
      signal,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
    const text = await readCapped(res.body as AsyncIterable<Buffer>, maxResponseBytes, what);
    if (res.statusCode < 200 || res.statusCode >= 300)
      throw new AlertmanagerError(
        `Alertmanager ${what}: ${res.statusCode} ${scrubbedExcerpt(this.#scrub, text, 200).trim()}`,
      );
    return text;
  }

  #settled(operation: AlertmanagerOperation, ok: boolean, error?: AlertmanagerError): void {
    this.#onOutcome?.(operation, ok);
    if (ok && this.#failing) this.#logger.info('Alertmanager answers again');
    else if (!ok && !this.#failing)
      this.#logger.warn(
        { err: error?.message },
        'Alertmanager cannot be read or written (remediation.alertmanager): the outage gate denies power actions until it answers; logged once until it does',
      );
    this.#failing = !ok;
  }
}

function newAgent(config: AlertmanagerConfig): Agent {
  const { tls, timeoutMs } = config;
  return new Agent({
    connections: 4,
    connect: {
      timeout: timeoutMs,
      ...(tls.ca ? { ca: [...rootCertificates, tls.ca] } : {}),
      ...(tls.cert ? { cert: tls.cert, key: tls.key } : {}),
      ...(tls.serverName ? { servername: tls.serverName } : {}),
      rejectUnauthorized: !tls.insecureSkipVerify,
    },
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
  });
}

/** The body as text, abandoned past `maxBytes` (the stream is destroyed with its connection). */
async function readCapped(body: AsyncIterable<Buffer>, maxBytes: number, what: string): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > maxBytes)
      throw new AlertmanagerError(
        `Alertmanager ${what}: reply exceeds remediation.alertmanager.max_response_bytes (${maxBytes})`,
      );
    chunks.push(chunk);
  }
  return Buffer.concat(chunks, size).toString('utf8');
}

function parseJson(text: string, what: string, scrub: Scrubber): unknown {
  try {
    return JSON.parse(text);
  } catch {
    throw new AlertmanagerError(`Alertmanager ${what}: reply is not JSON: ${scrubbedExcerpt(scrub, text, 200)}`);
  }
}

/** Why a request failed, in a few words: the timeout, or the transport's own message and code. */
function reason(error: unknown): string {
  if (error instanceof Error && (error.name === 'TimeoutError' || error.name === 'AbortError'))
    return 'no reply within remediation.alertmanager.timeout';
  if (error instanceof Error) {
    const code = (error as { code?: unknown }).code;
    return typeof code === 'string' ? `${code}: ${error.message}` : error.message;
  }
  return String(error);
}
