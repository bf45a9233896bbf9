/**
 * A bench script as plain JavaScript, for a process whose RSS is measured: Node strips a `.ts` file's types with
 * its type stripper, about 25 MB of RSS (a 2-line `.ts` idles at 69 MB where the same `.mjs` idles at 44, Node
 * 24, jemalloc) that the daemon, shipped as JavaScript (dist/), never has (issue 32 made the floor plain JavaScript
 * for the same reason; issue 53 does it for the sizes). `plainJs` writes `script` and every `./x.ts` it names
 * (imports, `new URL('./x.ts', import.meta.url)`), transitively, with their types stripped
 * (`module.stripTypeScriptTypes`) and those names turned into `./x.mjs`, to `<repository>/.bench-js/`, beside
 * `bench/`, so that `../dist/…` still resolves; it returns the path of `script`'s copy.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { stripTypeScriptTypes } from 'node:module';
import { basename, dirname, join } from 'node:path';

/** Where the copies go: beside bench/, so that their `../dist/` is the repository's. */
export const PLAIN_JS_DIR = join(dirname(import.meta.dirname), '.bench-js');

/** A quoted `./name.ts` in a script: a module of bench/ it imports or starts. */
const LOCAL_TS = /(['"])\.\/([\w-]+)\.ts\1/g;

/** `script` (a path under bench/) and the bench modules it names, as plain JavaScript; the path of its copy. */
export function plainJs(script: string): string {
  mkdirSync(PLAIN_JS_DIR, { recursive: true });
  const done = new Set<string>();
  const write = (name: string) => {
    if (done.has(name)) return;
    done.add(name);
    const source = readFileSync(join(import.meta.dirname, `${name}.ts`), 'utf8');
    const names = [...source.matchAll(LOCAL_TS)].map((m) => m[2]!);
    const code = stripTypeScriptTypes(source, { mode: 'strip' }).replace(LOCAL_TS, '$1./$2.mjs$1');
    writeFileSync(join(PLAIN_JS_DIR, `${name}.mjs`), code);
    for (const each of names) write(each);
  };
  const name = basename(script, '.ts');
  write(name);
  return join(PLAIN_JS_DIR, `${name}.mjs`);
}
