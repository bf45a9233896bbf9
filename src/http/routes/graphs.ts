/**
 * `GET /graphs` (JSON list of held images) and `GET /graphs/:account/dedicated/:server_id/:type/:scale.png`
 * (the latest image; the path before accounts, without `:account`, serves the `default` account, or the
 * only one configured; the latest image, with ETag/Last-Modified/Cache-Control, 304 on a matching If-None-Match, optional
 * `?width=` resize through sharp, bounded by `graphs.max_width`).
 */
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { DEFAULT_ACCOUNT } from '../../config/schema.js';
import { NotFoundError } from '../../errors.js';
import { resizePng } from '../../graphs/image.js';
import type { GraphSource } from '../../graphs/source.js';
import { GRAPH_SCALES, GRAPH_TYPES, type GraphScale, type GraphType } from '../../config/api-terms.js';
import { queryInteger, queryIntegerSchema } from '../schemas.js';

/** URL path of a graph image. */
export const graphPath = (account: string, serverId: string, type: string, scale: string) =>
  `/graphs/${encodeURIComponent(account)}/dedicated/${encodeURIComponent(serverId)}/${type}/${scale}.png`;

type GraphParams = { account?: string; server_id: string; type: string; file: string };

export function graphRoutes(app: FastifyInstance, deps: { graphs: GraphSource; maxWidth: number }): void {
  app.get('/graphs', async () => ({
    graphs: (await deps.graphs.list()).map((g) => ({
      account: g.account,
      server_id: g.serverId,
      type: g.type,
      scale: g.scale,
      url: graphPath(g.account, g.serverId, g.type, g.scale),
      width: g.width,
      height: g.height,
      bytes: g.bytes,
      updated_at: new Date(g.updatedAt).toISOString(),
    })),
  }));

  const route = {
    schema: {
      querystring: {
        type: 'object',
        additionalProperties: false,
        properties: { width: queryIntegerSchema },
      },
    },
    handler: async (
      request: FastifyRequest<{ Params: GraphParams; Querystring: { width?: string } }>,
      reply: FastifyReply,
    ) => {
      const { server_id: serverId, type, file } = request.params;
      // Checked first: a bad width is the caller's mistake whatever is held.
      const width = queryInteger('width', request.query.width, { min: 16, max: deps.maxWidth });
      const scale = file.replace(/\.png$/, '');
      if (!(GRAPH_TYPES as readonly string[]).includes(type)) {
        throw new NotFoundError(`unknown graph type "${type}": expected one of ${GRAPH_TYPES.join(', ')}`);
      }
      if (!file.endsWith('.png') || !(GRAPH_SCALES as readonly string[]).includes(scale)) {
        throw new NotFoundError(
          `unknown graph "${file}": expected <scale>.png with scale one of ${GRAPH_SCALES.join(', ')}`,
        );
      }
      const { accounts } = deps.graphs;
      const named = request.params.account ?? (accounts.includes(DEFAULT_ACCOUNT) ? DEFAULT_ACCOUNT : undefined);
      const account = named === undefined ? (accounts.length === 1 ? accounts[0] : undefined) : named;
      if (account === undefined || !accounts.includes(account))
        throw new NotFoundError(
          named === undefined
            ? 'several accounts are configured: use /graphs/<account>/dedicated/…'
            : `unknown account "${named}"`,
        );
      const graph = await deps.graphs.get(account, { serverId, type: type as GraphType, scale: scale as GraphScale });
      if (!graph) throw new NotFoundError(`no ${type} ${scale} graph held for server "${serverId}"`);
      const etag = width ? `${graph.etag.slice(0, -1)}-w${width}"` : graph.etag;
      reply
        .header('etag', etag)
        .header('last-modified', new Date(graph.updatedAt).toUTCString())
        .header('cache-control', 'public, max-age=60');
      const ifNoneMatch = request.headers['if-none-match'];
      if (ifNoneMatch?.split(',').some((t) => t.trim().replace(/^W\//, '') === etag)) {
        return reply.code(304).send();
      }
      const body = width ? await resizePng(graph.png, width) : graph.png;
      return reply.type('image/png').send(body);
    },
  };
  app.get<{ Params: GraphParams; Querystring: { width?: string } }>(
    '/graphs/:account/dedicated/:server_id/:type/:file',
    route,
  );
  app.get<{ Params: GraphParams; Querystring: { width?: string } }>('/graphs/dedicated/:server_id/:type/:file', route);
}
