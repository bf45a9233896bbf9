/**
 * Limits of the daemon's own HTTP server, so that a client trickling its headers or body (slowloris), or
 * opening connections by the thousand, is closed within seconds and cannot take the file descriptors
 * `/metrics`, the polls and the journal need. Node checks the header and request deadlines every
 * `CONNECTIONS_CHECK_MS`, so a trickling client is closed at most that long after its deadline. One client
 * address holds at most `MAX_CONNECTIONS_PER_ADDRESS` of the `MAX_CONNECTIONS`, so a slowloris from one
 * address (reconnecting as fast as it is closed) cannot take the port from Prometheus, Alertmanager and the
 * health probes.
 */
import type { Server, Socket } from 'node:net';
import { clientKey } from './client-address.js';
import { clientErrorHandler } from './client-errors.js';

/** The whole header block of a request must arrive within this, in milliseconds (answered 408, then closed). */
export const HEADERS_TIMEOUT_MS = 5_000;
/**
 * The whole request, headers and body, must arrive within this, in milliseconds (answered 408, then closed).
 * A body is at most 1 MiB (`BODY_LIMIT`): a client on any working network sends it well within this.
 */
export const REQUEST_TIMEOUT_MS = 10_000;
/** How often Node checks the two deadlines above, in milliseconds (Node's default is 30 s). */
export const CONNECTIONS_CHECK_MS = 1_000;
/** A keep-alive connection waiting for its next request is closed after this, in milliseconds. */
export const KEEP_ALIVE_TIMEOUT_MS = 5_000;
/**
 * A connection on which nothing moves for this long, in either direction, is destroyed, in milliseconds:
 * a client that stops reading its reply. Longer than a webhook's handler may wait for the upstream
 * (`upstream.timeout`, 10 s by default), so that a slow power-cycle is not cut off mid-call.
 */
export const IDLE_TIMEOUT_MS = 60_000;
/** TLS handshakes must finish within this, in milliseconds (Node's default is 120 s). */
export const TLS_HANDSHAKE_TIMEOUT_MS = 5_000;
/**
 * Connections open at once at most; further ones are closed as soon as they are accepted. Below the common
 * 1,024 file-descriptor limit, leaving room for upstream connections, the journal and graph files.
 */
export const MAX_CONNECTIONS = 512;
/**
 * Connections one client address (an IPv4 address, an IPv6 /64) may hold open at once; further ones are
 * closed as soon as they are accepted. Prometheus keeps one connection per target and Alertmanager a few, so
 * even a reverse proxy in front of both stays far below it; an eighth of `MAX_CONNECTIONS`.
 */
export const MAX_CONNECTIONS_PER_ADDRESS = 64;

/** The options of fastify's factory that carry these limits; `https` gets the limits merged in. */
export function serverLimitOptions<T extends object>(https?: T) {
  const nodeOptions = {
    headersTimeout: HEADERS_TIMEOUT_MS,
    requestTimeout: REQUEST_TIMEOUT_MS,
    connectionsCheckingInterval: CONNECTIONS_CHECK_MS,
  };
  return {
    // Parser refusals (408, 431, 400) answered with the project's error body.
    clientErrorHandler,
    // fastify sets these on the server after creating it (its defaults: no request timeout, 72 s keep-alive).
    requestTimeout: REQUEST_TIMEOUT_MS,
    keepAliveTimeout: KEEP_ALIVE_TIMEOUT_MS,
    connectionTimeout: IDLE_TIMEOUT_MS,
    ...(https
      ? { https: { ...https, ...nodeOptions, handshakeTimeout: TLS_HANDSHAKE_TIMEOUT_MS } }
      : { http: nodeOptions }),
  };
}

/** Sets what only the created server takes: the connection cap, in all and per client address. */
export function applyServerLimits(server: Server): void {
  server.maxConnections = MAX_CONNECTIONS;
  // Open connections per client key; an entry lives while its address has one open, so the map holds at
  // most MAX_CONNECTIONS entries.
  const open = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const key = clientKey(socket.remoteAddress);
    const count = open.get(key) ?? 0;
    if (count >= MAX_CONNECTIONS_PER_ADDRESS) {
      socket.destroy();
      return;
    }
    open.set(key, count + 1);
    socket.once('close', () => {
      const left = (open.get(key) ?? 1) - 1;
      if (left > 0) open.set(key, left);
      else open.delete(key);
    });
  });
}
