/**
 * The memory floor of the small-account row: Node importing the daemon's runtime dependencies (package.json's
 * `dependencies`) and idling. Prints its RSS in bytes after two idle seconds, then exits. small-row.ts starts
 * it with the daemon's own Node flags and environment (LD_PRELOAD: jemalloc where it is preloaded), in the same
 * run as what it is compared to. Plain JavaScript, as the daemon (dist/) is: a `.ts` floor would load Node's
 * type stripper, 10–14 MB the daemon never has (issue 32). `--heap-snapshot FILE` also writes a heap snapshot
 * then (bench/heap-summary.ts), with `process.memoryUsage()` just before it on stderr. `--bare` imports nothing:
 * bare Node with the same flags and allocator, the floor a Go exporter's 20–30 MB is compared with (issue 53).
 */
import { readFileSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { writeHeapSnapshot } from 'node:v8';

const { dependencies } = JSON.parse(readFileSync('package.json', 'utf8'));
if (!process.argv.includes('--bare')) for (const name of Object.keys(dependencies)) await import(name);
await sleep(2000);
const snapshot = process.argv.indexOf('--heap-snapshot');
const { rss } = process.memoryUsage();
if (snapshot > 0) {
  const memoryUsage = process.memoryUsage();
  writeHeapSnapshot(process.argv[snapshot + 1]);
  console.error(JSON.stringify({ heapSnapshot: process.argv[snapshot + 1], memoryUsage }));
}
console.log(rss);
