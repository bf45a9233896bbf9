/**
 * The memory floor of the small-account row: Node importing the daemon's runtime dependencies (package.json's
 * `dependencies`) and idling. Prints its RSS in bytes after two idle seconds, then exits. small-row.ts starts
 * it with the daemon's own Node flags and environment (LD_PRELOAD: jemalloc where it is preloaded), in the same
 * run as what it is compared to. Plain JavaScript, as the daemon (dist/) is: a `.ts` floor would load Node's
 * type stripper, 10–14 MB the daemon never has (issue 32).
 */
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';

const { dependencies } = JSON.parse(readFileSync('package.json', 'utf8'));
for (const name of Object.keys(dependencies)) await import(name);
await sleep(2000);
console.log(process.memoryUsage().rss);
