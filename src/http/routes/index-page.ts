/** `GET /`: a small landing page linking the exporter's endpoints, as Prometheus exporters do. */
import type { FastifyInstance } from 'fastify';

const PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>baremetal-exporter</title></head>
<body><h1>baremetal-exporter</h1>
<p>Prometheus exporter for the bare-metal hosting API.</p>
<ul><li><a href="metrics">/metrics</a></li><li><a href="graphs">/graphs</a> (graph images held)</li><li><a href="healthz">/healthz</a></li></ul>
</body></html>`;

export function indexRoutes(app: FastifyInstance): void {
  app.get('/', async (_request, reply) =>
    reply
      .type('text/html; charset=utf-8')
      .header('content-security-policy', "default-src 'none'")
      .header('x-content-type-options', 'nosniff')
      .send(PAGE),
  );
}
