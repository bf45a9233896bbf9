/**
 * Every poll, listed once: the scheduler builds one job per entry (scheduler/jobs.ts). A poll is a file of
 * this folder exporting its `PollDefinition`; its `schedules` key (name, default, description) is declared in
 * config/schema.ts, which the check below ties to this list: a poll missing from either fails to compile.
 */
import type { JobName } from '../config/schema.js';
import { catalogPoll } from './catalog.js';
import { firewallPoll, firewallUnderAttackPoll } from './firewall.js';
import { graphsPoll } from './graphs.js';
import type { PollDefinition } from './poll.js';
import { serversPoll } from './servers.js';

export const POLLS = [
  serversPoll,
  firewallPoll,
  graphsPoll,
  catalogPoll,
  firewallUnderAttackPoll,
] as const satisfies readonly PollDefinition[];

/** `true` when the polls `L` name every JobName (config/schema.ts), else `never`. */
export type ListsEveryJob<L extends readonly { name: JobName }[]> = [Exclude<JobName, L[number]['name']>] extends [
  never,
]
  ? true
  : never;

/** Compiles only when POLLS has a definition for every JobName; a name it does not know fails at its entry. */
export const EVERY_JOB_LISTED: ListsEveryJob<typeof POLLS> = true;
