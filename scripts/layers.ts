/**
 * The layers of src/, lowest first, as one ordered list: biome.json's `noRestrictedImports` overrides (one per
 * layer, refusing an import of any higher layer, type imports included) are generated from it.
 * `node scripts/layers.ts` (with node_modules/.bin on PATH, as npm scripts have it) rewrites those overrides in
 * biome.json and formats it; test/integration/layers.test.ts fails ("run
 * node scripts/layers.ts") when biome.json differs from what this list implies, and plants a back-import to
 * prove the generated rules refuse it. Adding a layer is one line here, then the command.
 */
import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** One layer: what it is called in messages, the files it holds, and how an import of it is spelled. */
export interface Layer {
  /** as the refusal message names it */
  name: string;
  /** biome `includes` globs of the layer's files, relative to the repository */
  files: string[];
  /** import specifiers' globs that reach the layer (what a lower layer may not import) */
  imports: string[];
}

const folder = (dir: string): Layer => ({ name: `src/${dir}/`, files: [`src/${dir}/**`], imports: [`**/${dir}/**`] });

/** The order, lowest first: docs/architecture.md "Layers" describes the same list. */
export const LAYERS: readonly Layer[] = [
  {
    name: 'the leaf modules at the top of src/ (errors, logger, version, slices, scrub, json-schema, order)',
    files: ['errors', 'logger', 'version', 'slices', 'scrub', 'json-schema', 'order'].map((f) => `src/${f}.ts`),
    imports: [],
  },
  ...['config', 'upstream', 'alertmanager', 'simulator', 'graphs', 'store', 'metrics', 'collectors', 'remediation', 'polls', 'scheduler', 'ha', 'http'].map(
    folder,
  ),
  {
    name: 'the wiring (src/daemon/, src/cli/ and the launcher src/main.ts)',
    files: [],
    imports: ['**/daemon/**', '**/cli/**', '**/main.js'],
  },
];

const ORDER = LAYERS.slice(1, -1)
  .map((layer) => layer.name.replace(/^src\/|\/$/g, ''))
  .join(' \u2192 ');

/** The biome override of one layer: every import of a layer above it is refused, with a message that says why. */
function override(layer: Layer, above: readonly Layer[]): object {
  const message = `layering: ${layer.name} may not import this, not even a type: it belongs to a higher layer (order, lowest first: ${ORDER}, then the wiring in src/daemon/ and src/cli/; see docs/architecture.md). Move the shared type down to the lowest layer that needs it, or declare the interface where it is used.`;
  const group = above.flatMap((higher) => higher.imports);
  return {
    includes: layer.files,
    linter: {
      rules: {
        style: { noRestrictedImports: { level: 'error', options: { patterns: [{ group, message }] } } },
      },
    },
  };
}

/** The layer overrides, lowest layer first (the wiring has none: nothing is above it). */
export function layerOverrides(layers: readonly Layer[] = LAYERS): object[] {
  return layers.flatMap((layer, i) => (layer.files.length > 0 ? [override(layer, layers.slice(i + 1))] : []));
}

/** Whether a biome override is a layering one (generated here) rather than a hand-written one. */
export const isLayerOverride = (o: { linter?: { rules?: { style?: { noRestrictedImports?: unknown } } } }): boolean =>
  o.linter?.rules?.style?.noRestrictedImports !== undefined;

/** biome.json's text with its layer overrides replaced by the generated ones (the others kept, first). */
export function withLayerOverrides(biomeJson: string): string {
  const config = JSON.parse(biomeJson) as { overrides?: object[] };
  const kept = (config.overrides ?? []).filter((o) => !isLayerOverride(o));
  config.overrides = [...kept, ...layerOverrides()];
  return `${JSON.stringify(config, null, 2)}\n`;
}

if (import.meta.main) {
  const path = fileURLToPath(new URL('../biome.json', import.meta.url));
  writeFileSync(path, withLayerOverrides(readFileSync(path, 'utf8')));
  // biome formats its own configuration file (`biome ci` checks it): short arrays stay on one line.
  execFileSync('biome', ['format', '--write', path], { stdio: 'inherit' });
}
