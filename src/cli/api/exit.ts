/**
 * How the `api` command ends: exit codes (README, "Command line: the whole API") and the one-line error
 * for stderr. Usage errors and safety refusals are the CLI's own outcomes, not upstream or config faults,
 * so they are a small signal here rather than classes of the error catalogue.
 */
import { ConfigError, InsecureUrlError, InvalidParameterError, JournalError, UpstreamError } from '../../errors.js';

/**
 * 0 success, 1 API or network error, 2 usage or validation error, 3 refused by a safety check (no confirmation,
 * the password's file, a power write while the breaker is open or the server's cap is reached).
 */
export const EXIT = { ok: 0, upstream: 1, usage: 2, refused: 3 } as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

/** Ends the command with `code` and a one-line `message` on stderr. */
export class CliExit extends Error {
  constructor(
    readonly exitCode: ExitCode,
    message: string,
  ) {
    super(message);
    this.name = 'CliExit';
  }
}

export const usage = (message: string) => new CliExit(EXIT.usage, message);
export const refused = (message: string) => new CliExit(EXIT.refused, message);

/** The exit code for anything a command threw. */
export function exitCodeOf(error: unknown): ExitCode {
  if (error instanceof CliExit) return error.exitCode;
  if (error instanceof InvalidParameterError || error instanceof ConfigError || error instanceof InsecureUrlError)
    return EXIT.usage;
  const code = (error as { code?: unknown })?.code;
  if (typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS_')) return EXIT.usage;
  if (error instanceof UpstreamError || error instanceof JournalError) return EXIT.upstream;
  return EXIT.upstream;
}

/** One line: a ConfigError's problems joined with "; ", never a stack. */
export function oneLine(error: unknown): string {
  const text =
    error instanceof ConfigError
      ? `invalid configuration: ${error.problems.join('; ')}`
      : error instanceof Error
        ? error.message
        : String(error);
  return text.replace(/\s*\n\s*/g, '; ').trim();
}
