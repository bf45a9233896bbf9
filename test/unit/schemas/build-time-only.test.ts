/**
 * TypeBox is a build-time dependency (issue 53: a devDependency, pruned from the image): a runtime module of
 * src/ may import `typebox` or a TypeBox declaration module (`*.schema.js`) for its types only (`import type`,
 * erased), never for a value. Only the declarations themselves (`*.schema.ts`) and src/json-schema.ts may, and
 * scripts/ (build time). Biome's noRestrictedImports cannot say this: it refuses type imports as well, and its
 * per-file options are the layers' (scripts/layers.ts). Read from src/ as Node compiles it.
 */
import { globSync, readFileSync } from 'node:fs';
import { stripTypeScriptTypes } from 'node:module';
import { fileURLToPath } from 'node:url';
import { init, parse } from 'es-module-lexer';
import { describe, expect, it } from 'vitest';

const src = fileURLToPath(new URL('../../../src/', import.meta.url));
await init;

/** Specifiers only the build may load: TypeBox and its declaration modules. */
const buildTimeOnly = (specifier: string) =>
  specifier === 'typebox' || specifier.startsWith('typebox/') || specifier.endsWith('.schema.js');

/** The allowed importers: the declarations and the module that renders them (paths relative to src/). */
const mayImport = (path: string) => path.endsWith('.schema.ts') || path === 'json-schema.ts';

/**
 * The build-time-only modules `text` loads when it runs: its TypeScript compiled as Node compiles it (types
 * erased: `import type` goes, `import { type X }` stays as `import 'x'` under verbatimModuleSyntax), then its
 * static, dynamic and re-exporting imports read by es-module-lexer.
 */
function runtimeImports(text: string): string[] {
  const [imports] = parse(stripTypeScriptTypes(text, { mode: 'transform' }));
  return imports.flatMap((i) => (i.n !== undefined && buildTimeOnly(i.n) ? [i.n] : []));
}

describe('TypeBox at build time only', () => {
  it('is imported for a value by no runtime module of src/', () => {
    const files = globSync('**/*.ts', { cwd: src }).filter((path) => !mayImport(path));
    expect(files.length).toBeGreaterThan(100);
    const found = files.flatMap((path) =>
      runtimeImports(readFileSync(`${src}${path}`, 'utf8')).map((specifier) => `src/${path}: ${specifier}`),
    );
    expect(found, 'a runtime module loads TypeBox: import its types with `import type`').toEqual([]);
  });

  it('refuses a value import, named, default, side-effect, re-exported or dynamic, and allows type imports', () => {
    const refused = [
      "import { Type } from 'typebox';",
      "import { type Static, Type } from 'typebox';",
      "import { type Static } from 'typebox';",
      "import * as T from 'typebox/value';",
      "import 'typebox';",
      "export { Type } from 'typebox';",
      "import { configFileSchema } from './config-file.schema.js';",
      "const t = await import('typebox');",
    ];
    for (const line of refused) expect(runtimeImports(line), line).toHaveLength(1);
    const allowed = [
      "import type { Static } from 'typebox';",
      "import type * as source from '../config-file.schema.js';",
      "export type { Static } from 'typebox';",
      "import { configFileSchema } from './schema.js';",
      "import { Type } from 'typeboxed';",
    ];
    for (const line of allowed) expect(runtimeImports(line), line).toEqual([]);
  });
});
