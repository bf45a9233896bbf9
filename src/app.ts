/**
 * buildApp(deps) → a fastify instance with every route of the daemon. It never listens itself, so tests
 * drive it with `app.inject()`. Every error reply is JSON: `{statusCode, code, error, message}`.
 */
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance } from 'fastify';
import type { Logger } from 'pino';
import { BaremetalError } from './errors.js';
import type { GraphStore } from './graphs/store.js';
import { graphRoutes } from './http/routes/graphs.js';
import { healthRoutes } from './http/routes/health.js';
import { indexRoutes } from './http/routes/index-page.js';
import { metricsRoutes } from './http/routes/metrics.js';
import { createAuthCheck } from './http/auth.js';
import { actionRoutes } from './http/routes/actions.js';
import { alertmanagerRoutes } from './http/routes/alertmanager.js';
import type { Config } from './config/schema.js';
import type { Journal } from './journal/journal.js';
import type { Metrics } from './metrics/definitions.js';
import type { RemediationEngine } from './remediation/engine.js';
import type { UpstreamClient } from './upstream/client.js';
import type { ExpositionCache } from './metrics/exposition.js';

export interface AppDeps {
  logger: Logger;
  exposition: ExpositionCache;
  graphStore: GraphStore;
  /** largest `?width=` of a graph, in pixels */
  graphMaxWidth: number;
  /** the action endpoints; absent in tests of the read-only routes */
  remediation?: {
    engine: RemediationEngine;
    journal: Journal;
    client: UpstreamClient;
    metrics: Metrics;
    config: Config['remediation'];
  };
}

/** Request bodies this daemon accepts are small JSON documents (webhooks): 1 MiB at most. */
export const BODY_LIMIT = 1024 * 1024;

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  404: 'Not Found',
  413: 'Payload Too Large',
  415: 'Unsupported Media Type',
  503: 'Service Unavailable',
};

export function buildApp(deps: AppDeps): FastifyInstance {
  const app = Fastify({
    loggerInstance: deps.logger as FastifyBaseLogger,
    bodyLimit: BODY_LIMIT,
    // Scrapes every few seconds would drown the log; failures are logged by the error handler.
    logController: new LogController({ disableRequestLogging: true }),
    // Unknown body fields and query parameters are errors, not silently dropped.
    ajv: { customOptions: { removeAdditional: false } },
  });
  app.setErrorHandler((error, request, reply) => {
    const status = error instanceof BaremetalError ? error.statusCode : (error as { statusCode?: number }).statusCode ?? 500;
    if (status >= 500) request.log.error({ err: error }, 'request failed');
    if (status === 401) void reply.header('www-authenticate', 'Bearer realm="baremetal-exporter", Basic realm="baremetal-exporter"');
    return reply.code(status).send({
      statusCode: status,
      code: (error as { code?: string }).code ?? 'BM_ERR_INTERNAL',
      error: STATUS_TEXT[status] ?? (status >= 500 ? 'Internal Server Error' : 'Bad Request'),
      message: status >= 500 && !(error instanceof BaremetalError) ? 'internal error' : (error as Error).message,
    });
  });
  app.setNotFoundHandler((request, reply) =>
    reply.code(404).send({ statusCode: 404, code: 'BM_ERR_NOT_FOUND', error: 'Not Found', message: `no route ${request.method} ${request.url.split('?')[0]}` }),
  );
  indexRoutes(app);
  healthRoutes(app);
  metricsRoutes(app, deps);
  graphRoutes(app, { graphStore: deps.graphStore, maxWidth: deps.graphMaxWidth });
  const remediation = deps.remediation;
  if (remediation) {
    // Encapsulated: the credentials check guards these routes only; /metrics and /graphs stay open.
    void app.register(async (scope) => {
      scope.addHook('onRequest', createAuthCheck(remediation.config));
      alertmanagerRoutes(scope, { engine: remediation.engine, rules: remediation.config.rules, metrics: remediation.metrics });
      actionRoutes(scope, remediation);
    });
  }
  return app;
}
