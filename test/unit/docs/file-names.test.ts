import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

// A comment in src/ or a page in docs/ that names a repository file (`rows.ts`, `docs/x.md`, `src/a/b.ts`)
// names one that exists: names drift when files move, and a stale one sends a reader to nothing.

const root = fileURLToPath(new URL('../../../', import.meta.url));
const SKIPPED_DIRS = new Set(['node_modules', 'dist', 'coverage']);
const walk = (dir: string): string[] =>
  readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    if (entry.name.startsWith('.') || SKIPPED_DIRS.has(entry.name)) return [];
    const path = join(dir, entry.name);
    return entry.isDirectory() ? walk(path) : [relative(root, path)];
  });
const files = walk(root);
const basenames = new Set(files.map((f) => basename(f)));

/**
 * Names that look like repository files but are not, each with why: the operator's own files in examples,
 * build outputs, the runtime's name.
 */
const NOT_REPOSITORY_FILES = new Map([
  ['Node.js', 'the runtime'],
  ['my-mixin.json', "the operator's own file in an example"],
  ['my.json', "the operator's own file in an example"],
  ['NEW.yml', "the operator's new config in remediation replay's usage"],
  ['baremetal-exporter/cli.yml', "the CLI's config file in the user's config directory (cli/cli-config.ts)"],
  ['rendered/baremetal.rules.yml', "the operator's own output folder in an example"],
  ['rendered/prometheusrule.yaml', "the operator's own output folder in an example"],
  ['baremetal.rules.json', 'rendered by the operator from the mixin'],
  ['dist/build-info.json', 'written by npm run build (scripts/build-info.ts)'],
  ['dist/baremetal-exporter.cdx.json', 'the SBOM written by the image build'],
]);

/** A file name: path segments, then a name with one of the repository's extensions. */
const FILE_NAME =
  /(?<![\w./@:-])((?:[\w.-]+\/)*[\w-]+(?:\.[\w-]+)*\.(?:ts|md|mjs|js|json|ya?ml|libsonnet|jsonnet))(?![\w/])/g;

/** Comments of a TypeScript file (line and block). */
const comments = (text: string) => [...text.matchAll(/\/\/[^\n]*|\/\*[\s\S]*?\*\//g)].map((m) => m[0]);

/** `dist/x.js` is built from `src/x.ts`; `x.js` in an import-like mention is `x.ts`. */
const spellings = (name: string) => [
  name,
  name.replace(/\.js$/, '.ts'),
  name.replace(/^dist\//, 'src/').replace(/\.js$/, '.ts'),
];

/**
 * True when `name`, mentioned in `file`, is a repository file: looked up from the file's own folder and each
 * folder above it up to the repository's top, and from src/. In docs/, a bare name may be any file of the
 * repository.
 */
function exists(file: string, name: string): boolean {
  if (/^[\w-]+\.[a-z]{2,}\//.test(name)) return true; // a host: github.com/…
  const bases = ['src'];
  for (let dir = dirname(file); dir !== '.'; dir = dirname(dir)) bases.push(dir);
  bases.push('.');
  return spellings(name).some(
    (candidate) =>
      (file.startsWith('docs/') && !candidate.includes('/') && basenames.has(candidate)) ||
      bases.some((base) => existsSync(join(root, base, candidate))),
  );
}

/** The names in `text` (the comments of a source file, or a whole page) that are no repository file. */
function staleNames(file: string, text: string): string[] {
  const parts = file.endsWith('.ts') ? comments(text) : [text];
  return parts.flatMap((part) =>
    [...part.matchAll(FILE_NAME)]
      .map((m) => m[1]!)
      .filter((name) => !NOT_REPOSITORY_FILES.has(name) && !exists(file, name)),
  );
}

const checked = files.filter((f) => (f.startsWith('src/') && f.endsWith('.ts')) || /^docs\/[^/]+\.md$/.test(f));

describe('file names in comments and docs', () => {
  it('checks every source file and page', () => {
    expect(checked.filter((f) => f.startsWith('src/')).length).toBeGreaterThan(100);
    expect(checked.filter((f) => f.startsWith('docs/')).length).toBeGreaterThan(10);
  });

  it.each(checked.map((f) => [f] as const))('%s names only files that exist', (file) => {
    expect(staleNames(file, readFileSync(join(root, file), 'utf8'))).toEqual([]);
  });

  it.each([
    ['a moved sibling', 'src/store/sqlite/journal.ts', '/** opened in sqlite-store.ts */', ['sqlite-store.ts']],
    ['a sibling that lives one folder up only', 'src/store/sqlite/journal.ts', '// see open.ts', []],
    ['a path from src/', 'src/daemon/reload.ts', '// see config/reload-rules.ts', ['config/reload-rules.ts']],
    ['a page that moved', 'docs/operations.md', 'See docs/runbooks.md and docs/remediation.md.', ['docs/runbooks.md']],
    ['code, not a comment', 'src/http/app.ts', "const f = 'nothing-here.ts';", []],
  ])('finds a planted stale name: %s', (_case, file, text, expected) => {
    expect(staleNames(file, text)).toEqual(expected);
  });
});
