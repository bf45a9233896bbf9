/**
 * More than one `--web.listen-address`: fastify listens on one address, so each further one gets its own node
 * http(s) server with the same limits and TLS options, handing every request to the app's handler
 * (`app.routing`, fastify's own request entry, as fastify does for its secondary `localhost` servers).
 */
import { createServer as createHttpServer, type Server as HttpServer } from 'node:http';
import { createServer as createHttpsServer, type ServerOptions } from 'node:https';
import type { AddressInfo } from 'node:net';
import type { FastifyInstance } from 'fastify';
import { applyServerLimits, serverLimitOptions } from './server-limits.js';

/** A further server for `app`, not yet listening; `https` as given to the app. */
export function extraServer(app: FastifyInstance, https?: ServerOptions): HttpServer {
  const limits = serverLimitOptions(https);
  const handler = app.routing as unknown as Parameters<typeof createHttpServer>[1];
  const server =
    'https' in limits
      ? createHttpsServer(limits.https as ServerOptions, handler)
      : createHttpServer(limits.http, handler);
  // What fastify sets on its own server after creating it.
  server.requestTimeout = limits.requestTimeout;
  server.keepAliveTimeout = limits.keepAliveTimeout;
  server.setTimeout(limits.connectionTimeout);
  server.on('clientError', limits.clientErrorHandler);
  applyServerLimits(server);
  return server;
}

/** Listens on `host:port`; resolves with the URL, rejects when the address cannot be bound. */
export function listenOn(server: HttpServer, address: { host: string; port: number }, tls: boolean): Promise<string> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(address.port, address.host, () => {
      server.off('error', reject);
      const { address: host, port, family } = server.address() as AddressInfo;
      resolve(`${tls ? 'https' : 'http'}://${family === 'IPv6' ? `[${host}]` : host}:${port}`);
    });
  });
}

/** Stops accepting, closes idle keep-alive connections as they go idle, resolves once all are closed. */
export function closeServer(server: HttpServer): Promise<void> {
  if (!server.listening) return Promise.resolve();
  const sweep = setInterval(() => server.closeIdleConnections(), 100);
  return new Promise<void>((resolve) => server.close(() => resolve())).finally(() => clearInterval(sweep));
}
