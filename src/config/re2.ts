/**
 * re2js (RE2's linear-time engine in JavaScript), loaded the first time a pattern needs compiling: a `hostname`
 * selector of `servers.include`/`servers.exclude` or a `=~`/`!~` label matcher. A deployment without either
 * never loads it (issue 53). Loaded synchronously (its CommonJS build, through `require`), because a config is
 * checked synchronously; the same module object for every caller, so `instanceof RE2JSException` holds.
 */
import { createRequire } from 'node:module';

/** The re2js module: `RE2JS` and `RE2JSException`. */
export type Re2Module = typeof import('re2js');

let re2: Re2Module | undefined;

/**
 * The re2js module, loaded at the first call. Throws an Error naming `feature` (what needed it) and the package
 * when it cannot load (a pruned install); the next call tries again.
 */
export function loadRe2(feature: string): Re2Module {
  if (re2) return re2;
  try {
    re2 = createRequire(import.meta.url)('re2js') as Re2Module;
  } catch (error) {
    throw new Error(`${feature} needs the package re2js, which failed to load: ${(error as Error).message}`, {
      cause: error,
    });
  }
  return re2;
}
