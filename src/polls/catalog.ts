/** `catalog` poll: the OS list and the locations (rarely change). */
import { DEFAULT_SCHEDULES } from '../config/schema.js';
import { listOperatingSystems } from '../upstream/dedicated.js';
import { listLocations } from '../upstream/reseller.js';
import { each, type PollDefinition } from './poll.js';

export const catalogPoll = {
  name: 'catalog',
  defaultSchedule: DEFAULT_SCHEDULES.catalog,
  async run(context, signal) {
    const { client, logger, config, state } = context;
    // Switched off: no request; the counts are forgotten (0 again when switched on, until the next read).
    if (config.collectors?.catalog === false) {
      state.dropCatalog();
      return { items: 0, failed: 0 };
    }
    const tasks: Array<() => Promise<void>> = [
      async () => {
        const systems = await listOperatingSystems(client, signal);
        signal.throwIfAborted();
        state.catalog.operatingSystems = systems.length;
      },
      async () => {
        const locations = await listLocations(client, signal);
        signal.throwIfAborted();
        state.catalog.locations = locations.length;
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
  switchedOff: (context) => context.state.dropCatalog(),
} satisfies PollDefinition;
