/** `graphs` poll: the configured types × scales for every server; a corrupt image fails only itself. */
import { DEFAULT_SCHEDULES } from '../config/schema.js';
import { checkImage } from '../graphs/image.js';
import type { GraphKey } from '../graphs/store.js';
import { getGraph } from '../upstream/dedicated.js';
import { each, type PollContext, type PollDefinition } from './poll.js';

export const graphsPoll = {
  name: 'graphs',
  defaultSchedule: DEFAULT_SCHEDULES.graphs,
  async run(context, signal) {
    const { client, metrics, logger, graphStore, config, state } = context;
    if (config.collectors?.graphs === false) {
      await graphsOff(context);
      return { items: 0, failed: 0 };
    }
    const keys = [...state.inventory.keys()].flatMap((serverId) =>
      config.graphs.types.flatMap((type) => config.graphs.scales.map((scale) => ({ serverId, type, scale }))),
    );
    const fetchOne = async (key: GraphKey) => {
      const image = await checkImage(await getGraph(client, key.serverId, key.type, key.scale, signal));
      signal.throwIfAborted();
      if (!state.inventory.has(key.serverId)) return;
      await graphStore.put(key, image, context.now());
    };
    const result = await each(keys, client.concurrency, signal, fetchOne, (key, error) => {
      const fields = { server_id: key.serverId, graph: key.type, scale: key.scale };
      if (signal.aborted) logger.warn(fields, 'graph poll cancelled');
      else logger.warn({ ...fields, err: error }, 'graph poll failed');
    });
    metrics.graphImages.set({ account: context.account }, graphStore.size);
    return result;
  },
  switchedOff: graphsOff,
} satisfies PollDefinition;

/**
 * `collectors.graphs: false`: no request; the held images are dropped (memory, disk, the shared copy), so
 * `/graphs` stops serving them. Their series go with the switch (collectors/families.ts), not here.
 */
async function graphsOff(context: PollContext): Promise<void> {
  const { graphStore, metrics } = context;
  await graphStore.retainServers(new Set());
  metrics.graphImages.set({ account: context.account }, graphStore.size);
}
