/**
 * `GET /metrics` (or the `--web.telemetry-path`): the cached exposition (a scrape never calls the API nor renders ~100k series), in the
 * format the scraper asks for (`Accept`: OpenMetrics 1.0.0 when it prefers it, as Prometheus does, else the
 * text format 0.0.4) and gzipped when `Accept-Encoding` allows it (compressed once per rendering).
 */
import type { FastifyInstance } from 'fastify';
import { DEFAULT_TELEMETRY_PATH } from '../telemetry-path.js';
import type { ExpositionCache } from '../../metrics/exposition-cache.js';
import { CONTENT_TYPES, type ExpositionFormat } from '../../metrics/exposition-format.js';

/** The entries of an `Accept` or `Accept-Encoding` header: lower-cased media type or coding → its q (0..1). */
function qualities(header: string | undefined): Array<{ value: string; params: Record<string, string>; q: number }> {
  return (header ?? '').split(',').flatMap((entry) => {
    const [value = '', ...rest] = entry.split(';').map((part) => part.trim());
    if (!value) return [];
    const params: Record<string, string> = {};
    for (const param of rest) {
      const eq = param.indexOf('=');
      if (eq > 0)
        params[param.slice(0, eq).trim().toLowerCase()] = param
          .slice(eq + 1)
          .trim()
          .replace(/^"|"$/g, '');
    }
    const q = params.q === undefined ? 1 : Number(params.q);
    return [{ value: value.toLowerCase(), params, q: Number.isFinite(q) ? q : 0 }];
  });
}

/** OpenMetrics when the client accepts version 1.0.0 (or any version) at least as much as the text format. */
export function negotiateFormat(accept: string | undefined): ExpositionFormat {
  let om = 0;
  let text = 0;
  for (const { value, params, q } of qualities(accept)) {
    if (value === 'application/openmetrics-text' && (params.version === undefined || params.version === '1.0.0'))
      om = Math.max(om, q);
    else if (value === 'text/plain' || value === '*/*' || value === 'text/*') text = Math.max(text, q);
  }
  return om > 0 && om >= text ? 'openmetrics' : 'text';
}

/** True when `Accept-Encoding` allows gzip (`gzip` or `*` with q > 0, and gzip not refused with q=0). */
export function acceptsGzip(acceptEncoding: string | undefined): boolean {
  const entries = qualities(acceptEncoding);
  const gzip = entries.find((e) => e.value === 'gzip' || e.value === 'x-gzip');
  if (gzip) return gzip.q > 0;
  return entries.some((e) => e.value === '*' && e.q > 0);
}

/** `path`: `--web.telemetry-path`, validated by `validateTelemetryPath` (default `/metrics`). */
export function metricsRoutes(app: FastifyInstance, deps: { exposition: ExpositionCache; path?: string }): void {
  app.get(deps.path ?? DEFAULT_TELEMETRY_PATH, async (request, reply) => {
    const format = negotiateFormat(request.headers.accept);
    void reply
      .type(CONTENT_TYPES[format])
      .header('cache-control', 'no-store')
      .header('vary', 'Accept, Accept-Encoding');
    if (acceptsGzip(request.headers['accept-encoding']))
      return reply.header('content-encoding', 'gzip').send(await deps.exposition.gzipped(format));
    return reply.send((await deps.exposition.get()).bytes(format));
  });
}
