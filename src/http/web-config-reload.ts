/**
 * The web-config file at run time: the current `WebConfig`, re-read on SIGHUP and when the file or its PEM
 * files change (polled every 10 s, which also sees a Kubernetes secret's symlink swap). A new file that is
 * invalid, that would turn TLS on or off (an HTTP server cannot become HTTPS), that is empty (a file caught
 * half-written, or truncated by mistake), or that would remove basic auth without saying so (no
 * `basic_auth_users` key while users are in force; `basic_auth_users: {}` says so) is refused with a log line
 * and the previous one stays in force.
 */
import { unwatchFile, watchFile } from 'node:fs';
import type { Server } from 'node:https';
import type { TLSSocket } from 'node:tls';
import type { Logger } from 'pino';
import { ConfigError } from '../errors.js';
import { clientCertRefusal, loadWebConfig, type WebConfig, type WebTls } from './web-config.js';

/** How often the file and its PEM files are checked for a change, in milliseconds. */
const WATCH_INTERVAL_MS = 10_000;

export class WebConfigFile {
  #current: WebConfig;
  readonly #path: string;
  readonly #logger: Logger;
  readonly #watched = new Set<string>();
  readonly #servers: Server[] = [];

  /** `initial`: the file as loadWebConfig read it at start */
  constructor(path: string, logger: Logger, initial: WebConfig) {
    this.#path = path;
    this.#logger = logger;
    this.#current = initial;
  }

  get current(): WebConfig {
    return this.#current;
  }

  /**
   * Applies the TLS settings to the daemon's https server: node checks verified certificates itself; the
   * policies it cannot express (RequireAnyClientCert, VerifyClientCertIfGiven) close the connection here.
   */
  attach(server: Server): void {
    this.#servers.push(server);
    server.on('secureConnection', (socket: TLSSocket) => {
      const tls = this.#current.tls;
      const refusal = tls && clientCertRefusal(tls.clientAuthType, socket);
      if (refusal) {
        this.#logger.debug({ remote: socket.remoteAddress, reason: refusal }, 'TLS connection refused');
        socket.destroy();
      }
    });
  }

  /** Re-reads the file; true when the new one is in force. */
  async reload(): Promise<boolean> {
    let next: WebConfig;
    try {
      next = await loadWebConfig(this.#path);
      refuseSilentRemoval(next, this.#current);
      if (Boolean(next.tls) !== Boolean(this.#current.tls))
        throw new ConfigError([
          `web.config.file: tls_server_config cannot be ${next.tls ? 'added' : 'removed'} by a reload; restart`,
        ]);
      for (const server of next.tls ? this.#servers : []) applyTls(server, next.tls!);
    } catch (error) {
      const problems = error instanceof ConfigError ? error.problems : [(error as Error).message];
      this.#logger.error({ file: this.#path, problems }, 'web config reload failed; keeping the previous one');
      return false;
    }
    this.#current = next;
    this.#logger.info({ file: this.#path }, 'web config reloaded');
    return true;
  }

  /** Reloads when the file or the PEM files it names change. */
  watch(): void {
    for (const path of [this.#path, ...this.#current.files]) {
      this.#watched.add(path);
      watchFile(path, { interval: WATCH_INTERVAL_MS, persistent: false }, this.#onChange);
    }
  }

  stop(): void {
    for (const path of this.#watched) unwatchFile(path, this.#onChange);
    this.#watched.clear();
  }

  readonly #onChange = (current: { mtimeMs: number }, previous: { mtimeMs: number }) => {
    if (current.mtimeMs !== previous.mtimeMs) void this.reload();
  };
}

/** Throws ConfigError when `next` is empty, or would remove the basic auth of `current` without a `basic_auth_users` key. */
function refuseSilentRemoval(next: WebConfig, current: WebConfig): void {
  if (next.empty)
    throw new ConfigError([
      'web.config.file: the file is empty (caught half-written?); to remove basic auth and headers, write basic_auth_users: {}',
    ]);
  if (!next.statesBasicAuth && Object.keys(current.basicAuthUsers).length > 0)
    throw new ConfigError([
      'web.config.file: basic_auth_users: missing while basic auth is in force; to remove basic auth, write basic_auth_users: {}',
    ]);
}

/** Puts new TLS settings in force for the next connections. */
function applyTls(server: Server, tls: WebTls): void {
  const { requestCert, rejectUnauthorized, clientAuthType: _, ...context } = tls;
  server.setSecureContext(context);
  // Read by node for each new connection (they are not part of the secure context).
  Object.assign(server, { requestCert, rejectUnauthorized });
}

/** The https options for fastify's factory: the secure context plus the certificate request. */
export function httpsOptions(tls: WebTls): Omit<WebTls, 'clientAuthType'> {
  const { clientAuthType: _, ...options } = tls;
  return options;
}
