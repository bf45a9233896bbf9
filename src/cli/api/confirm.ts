/**
 * Confirmation of a destructive write (power off, power cycle, provision, cancellation): on a terminal
 * the operator types the server id; without one, `--yes` is required. Nothing is sent before this passes.
 */
import { createInterface } from 'node:readline';
import type { Readable, Writable } from 'node:stream';
import { refused } from './exit.js';

export interface ConfirmOptions {
  /** what will happen, e.g. "power off server 100001" */
  what: string;
  /** the answer that confirms */
  serverId: string;
  /** `--yes` was given */
  yes: boolean;
  /** whether `input` is a terminal someone can type on */
  interactive: boolean;
  input: Readable;
  /** where the question goes (stderr, so stdout stays the command's output) */
  output: Writable;
}

/** Resolves when confirmed; throws CliExit (exit 3) when refused. */
export async function confirm(options: ConfirmOptions): Promise<void> {
  if (options.yes) return;
  if (!options.interactive) {
    throw refused(`refusing to ${options.what} without confirmation: no terminal to ask on; pass --yes to confirm`);
  }
  options.output.write(`This will ${options.what}.\nType the server id (${options.serverId}) to confirm: `);
  const answer = await readLine(options.input);
  if (answer?.trim() !== options.serverId) {
    throw refused(
      `not confirmed (${answer === undefined ? 'input closed' : 'the answer did not match the server id'}); nothing was sent`,
    );
  }
}

/** The next line of `input`, or undefined at end of input. */
function readLine(input: Readable): Promise<string | undefined> {
  return new Promise((resolve) => {
    const rl = createInterface({ input, terminal: false });
    let done = false;
    rl.once('line', (line) => {
      done = true;
      rl.close();
      resolve(line);
    });
    rl.once('close', () => {
      if (!done) resolve(undefined);
    });
  });
}
