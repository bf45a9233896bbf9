/**
 * `GET /healthz`: the process is alive and serving HTTP (200). `GET /readyz`: 200 once the first `servers`
 * and `firewall` polls have succeeded at least partly and while the journal answers; 503 with the reasons
 * otherwise (a poll that failed outright is named with its error).
 * Both stay open when web.auth is set: orchestrators probe them.
 */
import type { FastifyInstance } from 'fastify';

/** Why the daemon is not ready; empty when it is. */
export type Readiness = () => string[];

export function healthRoutes(app: FastifyInstance, deps: { readiness: Readiness }): void {
  app.get('/healthz', async () => ({ status: 'ok' }));
  app.get('/readyz', async (_request, reply) => {
    const reasons = deps.readiness();
    return reply
      .code(reasons.length ? 503 : 200)
      .send(reasons.length ? { status: 'not ready', reasons } : { status: 'ready' });
  });
}
