/**
 * One command of `baremetal-exporter api`: its words, arguments and options, its help, and what it runs.
 * commands.ts lists them all (LEAVES); usage, help, completion and docs/cli.md are read from these fields.
 */
import type { CommandContext } from './context.js';
import type { Rendered } from './output.js';

/** One leaf of the command tree. */
export interface Leaf {
  /** words after `api`, e.g. ["servers", "list"] */
  path: string[];
  /** positional arguments, for usage lines */
  args: string[];
  /** the leaf's own options in usage lines, e.g. "--type T --scale S [--out FILE.png]" */
  synopsis?: string;
  /** options besides the common ones (--config.file, --account, --output, --help) */
  options: string[];
  /** a write: accepts --dry-run (and --yes) */
  write: boolean;
  summary: string;
  example: string;
  run: (ctx: CommandContext) => Promise<Rendered>;
}
