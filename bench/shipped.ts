/**
 * How the daemon runs as shipped, read from where it is shipped, so that no bench row can drift from it: the
 * Node flags of the launcher's shebang (src/main.ts, which becomes the `bin`; test/unit/v8-flags.test.ts checks
 * that every other way of starting the daemon passes the same) and the allocator the image and the systemd unit
 * preload, with the settings the image gives it (the Dockerfile's `ENV MALLOC_CONF`).
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** The repository: bench/ and its plain-JavaScript copies in .bench-js/ both sit at its top. */
const ROOT = join(import.meta.dirname, '..');

/** The launcher's Node flags, e.g. `['--max-semi-space-size=2']`. */
export const SHIPPED_NODE_FLAGS: string[] = (() => {
  const line = readFileSync(join(ROOT, 'src/main.ts'), 'utf8').split('\n')[0]!;
  const match = /^#!\/usr\/bin\/env -S node((?: --\S+)+)$/.exec(line);
  if (!match) throw new Error(`src/main.ts: no Node flags in its shebang: ${line}`);
  return match[1]!.trim().split(' ');
})();

/** jemalloc's settings as the image sets them (`ENV MALLOC_CONF=…` in the Dockerfile). */
export const SHIPPED_MALLOC_CONF: string = (() => {
  // The runtime stage (after the last FROM): the build stage's environment never reaches the image that runs.
  const runtime = readFileSync(join(ROOT, 'Dockerfile'), 'utf8')
    .split(/^FROM /m)
    .at(-1)!;
  const match = /^ENV MALLOC_CONF=(\S+)$/m.exec(runtime);
  if (!match) throw new Error('Dockerfile: no ENV MALLOC_CONF line in the runtime stage');
  return match[1]!;
})();

/** Where Debian's libjemalloc2 puts the library (amd64, arm64). */
const JEMALLOC = ['/usr/lib/x86_64-linux-gnu/libjemalloc.so.2', '/usr/lib/aarch64-linux-gnu/libjemalloc.so.2'];

/**
 * The allocator the daemon ships with (the image's and the unit's LD_PRELOAD and MALLOC_CONF): jemalloc when
 * Debian's libjemalloc2 is installed here (.ci/run installs it), else glibc's, named so in the table.
 * `settings`: how a row's reference names it, with MALLOC_CONF.
 */
export function shippedAllocator(): { name: string; settings: string; env: NodeJS.ProcessEnv } {
  const library = JEMALLOC.find((path) => existsSync(path));
  return library
    ? {
        name: 'jemalloc',
        settings: `jemalloc, MALLOC_CONF=${SHIPPED_MALLOC_CONF}`,
        env: { LD_PRELOAD: library, MALLOC_CONF: SHIPPED_MALLOC_CONF },
      }
    : { name: 'glibc (libjemalloc2 not installed)', settings: 'glibc', env: { LD_PRELOAD: '' } };
}
