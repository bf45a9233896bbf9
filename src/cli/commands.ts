/**
 * The top-level commands of the command line: the one list `cli/program.ts` dispatches over and shell completion
 * offers (and the tests walk, asking each command and subcommand for `--help`).
 */
import { USAGE } from './usage.js';

export const COMMANDS = [
  'run',
  'check-config',
  'demo',
  'simulate',
  'api',
  'remediation',
  'actions',
  'circuit',
  'completion',
] as const;
export type CommandName = (typeof COMMANDS)[number];

/** Whether an argument list asks for help: `--help` or `-h` anywhere in it. */
export const asksHelp = (args: readonly string[]) => args.some((a) => a === '--help' || a === '-h');

/**
 * `baremetal-exporter NAME --help` of a command whose help is its block of the top-level usage: the line
 * `  baremetal-exporter NAME …` and the indented lines under it.
 */
export function usageBlock(name: CommandName): string {
  const lines = USAGE.split('\n');
  const start = lines.findIndex(
    (l) => l.startsWith(`  baremetal-exporter ${name} `) || l === `  baremetal-exporter ${name}`,
  );
  if (start < 0) throw new Error(`the usage has no block for ${name}`);
  let end = start + 1;
  while (end < lines.length && /^ {4,}/.test(lines[end]!)) end++;
  return `Usage:\n${lines.slice(start, end).join('\n')}\n`;
}
