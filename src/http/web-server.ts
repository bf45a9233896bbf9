/**
 * The daemon's HTTP side around the app: the web options from the config or `--web.config.file`, the listeners
 * (`web.listen_address` and `web.additional`), TLS files watched for renewal, and a close that waits for requests
 * in flight.
 */
import type { Server as HttpsServer, ServerOptions } from 'node:https';
import type { FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import type { Config } from '../config/types.js';
import { closeServer, extraServer, listenOn } from './listeners.js';
import { readTls, watchTls } from './tls.js';
import { httpsOptions, type WebConfigFile } from './web-config-reload.js';

/** The app's web options: from the main config, or with `--web.config.file` from it (bearer tokens stay). */
export async function webDeps(config: Config, webConfig: WebConfigFile | undefined) {
  if (!webConfig)
    return { webAuth: config.web.auth, ...(config.web.tls ? { https: await readTls(config.web.tls) } : {}) };
  const { tls } = webConfig.current;
  let auth = { bearerTokens: config.web.auth.bearerTokens, basicAuthUsers: webConfig.current.basicAuthUsers };
  return {
    // The same object while the file's users are unchanged, so the auth check keeps its cache.
    webAuth: () => {
      const users = webConfig.current.basicAuthUsers;
      if (users !== auth.basicAuthUsers) auth = { bearerTokens: config.web.auth.bearerTokens, basicAuthUsers: users };
      return auth;
    },
    headers: () => webConfig.current.headers,
    ...(tls ? { https: httpsOptions(tls) } : {}),
  };
}

export interface Listeners {
  /** the base URL of the main listener ('' when not listening) */
  url: string;
  /** re-reads the TLS files or the web-config file (SIGHUP); true when there is none to read */
  reloadWeb(): Promise<boolean>;
  /** the same, false without TLS files or a web-config file */
  reloadTls(): Promise<boolean>;
  /** stops watching, closes every listener once its requests in flight have ended */
  close(): Promise<void>;
}

/** Listens on `config.web` (unless `listen` is false) and on `web.additional`, with TLS from either source. */
export async function listen(
  app: FastifyInstance,
  config: Config,
  o: { logger: Logger; webConfig: WebConfigFile | undefined; https: ServerOptions | undefined; listen: boolean },
): Promise<Listeners> {
  const additional = (config.web.additional ?? []).map((address) => ({ address, server: extraServer(app, o.https) }));
  const servers = [app.server, ...additional.map((a) => a.server)] as HttpsServer[];
  const tls = config.web.tls ? watchTls(servers, config.web.tls, o.logger) : undefined;
  const webConfig = o.webConfig;
  if (webConfig?.current.tls) for (const server of servers) webConfig.attach(server);
  let url = '';
  if (o.listen) {
    url = await app.listen({ host: config.web.host, port: config.web.port });
    o.logger.info({ url }, 'listening');
    for (const { address, server } of additional)
      o.logger.info({ url: await listenOn(server, address, o.https !== undefined) }, 'listening');
  } else await app.ready();
  return {
    url,
    reloadWeb: async () => (webConfig ?? tls) === undefined || ((await (webConfig ?? tls)?.reload()) ?? false),
    reloadTls: async () => (await (webConfig ?? tls)?.reload()) ?? false,
    close: async () => {
      tls?.stop();
      webConfig?.stop();
      // Node closes only the connections idle when close() starts; a keep-alive connection whose request
      // finishes later would hold the server open until its timeout, so close those as they go idle.
      const sweep = setInterval(
        () => (app.server as { closeIdleConnections?: () => void }).closeIdleConnections?.(),
        100,
      );
      await Promise.all([app.close(), ...additional.map((a) => closeServer(a.server))]).finally(() =>
        clearInterval(sweep),
      );
    },
  };
}
