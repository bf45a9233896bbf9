#!/usr/bin/env -S node --max-semi-space-size=2
/**
 * The command line's entry (loaded by the launcher, src/main.ts): runs `cli/program.ts` on the arguments and
 * turns what it throws into one line on stderr and an exit code (2 for a usage error).
 */
import { exitCodeOfThrown, runProgram } from './program.js';

// A closed pipe (`check-config … | head -1`) ends the command quietly: the reader has what it wanted.
for (const stream of [process.stdout, process.stderr])
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw error;
  });

runProgram(process.argv.slice(2)).catch((error: unknown) => {
  process.stderr.write(`baremetal-exporter: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exit(exitCodeOfThrown(error));
});
