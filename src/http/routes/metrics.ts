/** `GET /metrics`: the cached exposition (a scrape never calls the API nor renders ~100k series). */
import type { FastifyInstance } from 'fastify';
import type { ExpositionCache } from '../../metrics/exposition.js';

export function metricsRoutes(app: FastifyInstance, deps: { exposition: ExpositionCache }): void {
  app.get('/metrics', async (_request, reply) => {
    const exposition = await deps.exposition.get();
    return reply.type(exposition.contentType).header('cache-control', 'no-store').send(exposition.body);
  });
}
