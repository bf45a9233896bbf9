/**
 * What every `api` command is given: the parsed options and positionals, the output format, the config,
 * the upstream client, the journal (when the state directory has one) and the process's streams — all
 * passed in, so tests can drive a command without a process.
 */
import type { Readable, Writable } from 'node:stream';
import type { Config } from '../../config/types.js';
import type { StateStore } from '../../store/store.js';
import type { UpstreamClient } from '../../upstream/client.js';
import { usage } from './exit.js';
import type { OutputFormat } from './output.js';

/** The process around the CLI; `processIo()` in main.ts gives the real one. */
export interface CliIo {
  stdout: Writable;
  stderr: Writable;
  stdin: Readable;
  /** someone can type on stdin (confirmation) */
  stdinIsTTY: boolean;
  /** stdout is a terminal (a password may be shown once; binary output refused) */
  stdoutIsTTY: boolean;
  env: NodeJS.ProcessEnv;
  /** ms since epoch */
  now: () => number;
  sleep: (ms: number) => Promise<void>;
}

export type OptionValues = Record<string, string | boolean | undefined>;

export interface CommandContext {
  io: CliIo;
  values: OptionValues;
  /** positionals after the command's path, already counted */
  args: string[];
  format: OutputFormat;
  config: Config;
  client: UpstreamClient;
  /** the account whose client this is (`--account`; the only one when one is configured) */
  account: string;
  /**
   * the daemon's journal, opened on first use: with `database.url` the shared PostgreSQL one (it must answer:
   * CliExit otherwise), else the SQLite journal when the config's state_dir holds one (the CLI never creates it)
   */
  store: () => Promise<StateStore | undefined>;
}

/** The string value of option `name`, or undefined. */
export function option(ctx: CommandContext, name: string): string | undefined {
  const value = ctx.values[name];
  return typeof value === 'string' ? value : undefined;
}

/** The string value of a required option; usage error (exit 2) when missing. */
export function requiredOption(ctx: CommandContext, name: string): string {
  const value = option(ctx, name);
  if (value === undefined || value === '') throw usage(`--${name} is required`);
  return value;
}

export const flag = (ctx: CommandContext, name: string): boolean => ctx.values[name] === true;
