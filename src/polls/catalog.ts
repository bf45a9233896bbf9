/** `catalog` poll: the OS list and the locations (rarely change). */
import { DEFAULT_SCHEDULES } from '../config/schema.js';
import { listOperatingSystems } from '../upstream/dedicated.js';
import { listLocations } from '../upstream/reseller.js';
import { each, type PollContext, type PollDefinition } from './poll.js';

export const catalogPoll = {
  name: 'catalog',
  defaultSchedule: DEFAULT_SCHEDULES.catalog,
  async run(context, signal) {
    const { client, metrics, logger, config } = context;
    if (config.collectors?.catalog === false) {
      catalogOff(context);
      return { items: 0, failed: 0 };
    }
    const tasks: Array<() => Promise<void>> = [
      async () => {
        const systems = await listOperatingSystems(client, signal);
        signal.throwIfAborted();
        metrics.catalogOperatingSystems.set(systems.length);
      },
      async () => {
        const locations = await listLocations(client, signal);
        signal.throwIfAborted();
        metrics.catalogLocations.set(locations.length);
      },
    ];
    return each(
      tasks,
      tasks.length,
      signal,
      (task) => task(),
      (_task, error) => {
        if (signal.aborted) logger.warn('catalog poll cancelled');
        else logger.warn({ err: error }, 'catalog poll failed');
      },
    );
  },
  switchedOff: catalogOff,
} satisfies PollDefinition;

/** `collectors.catalog: false`: no request; the catalog series are removed. */
function catalogOff(context: PollContext): void {
  context.metrics.catalogOperatingSystems.remove({});
  context.metrics.catalogLocations.remove({});
}
