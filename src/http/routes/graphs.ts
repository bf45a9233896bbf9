/**
 * `GET /graphs` (JSON list of held images) and `GET /graphs/dedicated/:server_id/:type/:scale.png`
 * (the latest image, with ETag/Last-Modified/Cache-Control, 304 on a matching If-None-Match, optional
 * `?width=` resize through sharp, bounded by `graphs.max_width`).
 */
import type { FastifyInstance } from 'fastify';
import { NotFoundError } from '../../errors.js';
import { resizePng } from '../../graphs/image.js';
import type { GraphStore } from '../../graphs/store.js';
import { GRAPH_SCALES, GRAPH_TYPES, type GraphScale, type GraphType } from '../../upstream/params.js';
import { queryInteger, queryIntegerSchema } from '../schemas.js';

/** URL path of a graph image. */
export const graphPath = (serverId: string, type: string, scale: string) =>
  `/graphs/dedicated/${encodeURIComponent(serverId)}/${type}/${scale}.png`;

export function graphRoutes(app: FastifyInstance, deps: { graphStore: GraphStore; maxWidth: number }): void {
  app.get('/graphs', async () => ({
    graphs: deps.graphStore.list().map((g) => ({
      server_id: g.serverId,
      type: g.type,
      scale: g.scale,
      url: graphPath(g.serverId, g.type, g.scale),
      width: g.width,
      height: g.height,
      bytes: g.png.length,
      updated_at: new Date(g.updatedAt).toISOString(),
    })),
  }));

  app.get<{ Params: { server_id: string; type: string; file: string }; Querystring: { width?: string } }>(
    '/graphs/dedicated/:server_id/:type/:file',
    {
      schema: {
        querystring: {
          type: 'object',
          additionalProperties: false,
          properties: { width: queryIntegerSchema },
        },
      },
    },
    async (request, reply) => {
      const { server_id: serverId, type, file } = request.params;
      // Checked first: a bad width is the caller's mistake whatever is held.
      const width = queryInteger('width', request.query.width, { min: 16, max: deps.maxWidth });
      const scale = file.replace(/\.png$/, '');
      if (!(GRAPH_TYPES as readonly string[]).includes(type)) {
        throw new NotFoundError(`unknown graph type "${type}": expected one of ${GRAPH_TYPES.join(', ')}`);
      }
      if (!file.endsWith('.png') || !(GRAPH_SCALES as readonly string[]).includes(scale)) {
        throw new NotFoundError(`unknown graph "${file}": expected <scale>.png with scale one of ${GRAPH_SCALES.join(', ')}`);
      }
      const graph = deps.graphStore.get({ serverId, type: type as GraphType, scale: scale as GraphScale });
      if (!graph) throw new NotFoundError(`no ${type} ${scale} graph held for server "${serverId}"`);
      const etag = width ? `${graph.etag.slice(0, -1)}-w${width}"` : graph.etag;
      reply
        .header('etag', etag)
        .header('last-modified', new Date(graph.updatedAt).toUTCString())
        .header('cache-control', 'public, max-age=60');
      const ifNoneMatch = request.headers['if-none-match'];
      if (ifNoneMatch && ifNoneMatch.split(',').some((t) => t.trim().replace(/^W\//, '') === etag)) {
        return reply.code(304).send();
      }
      const body = width ? await resizePng(graph.png, width) : graph.png;
      return reply.type('image/png').send(body);
    },
  );
}
