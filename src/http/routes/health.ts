/**
 * `GET /healthz`: the process is alive and serving HTTP (200). `GET /readyz`: 200 once the first `servers`
 * poll and the first `firewall` poll of the listed servers have succeeded at least partly and while the journal
 * answers; 503 with the reasons otherwise (a poll that failed outright is named with its error; daemon/readiness.ts).
 * `/-/healthy` and `/-/ready` are the same handlers at the paths Prometheus and Alertmanager use for theirs.
 * All four stay open when web.auth is set: orchestrators probe them.
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';

/** Why the daemon is not ready; empty when it is. */
export type Readiness = () => string[];

export function healthRoutes(app: FastifyInstance, deps: { readiness: Readiness }): void {
  const healthy = async () => ({ status: 'ok' });
  const ready = async (_request: FastifyRequest, reply: FastifyReply) => {
    const reasons = deps.readiness();
    return reply
      .code(reasons.length ? 503 : 200)
      .send(reasons.length ? { status: 'not ready', reasons } : { status: 'ready' });
  };
  for (const path of ['/healthz', '/-/healthy']) app.get(path, healthy);
  for (const path of ['/readyz', '/-/ready']) app.get(path, ready);
}
