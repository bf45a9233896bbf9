import { spawnSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { isLayerOverride, LAYERS, layerOverrides } from '../../scripts/layers.ts';
import { tempDir } from '../helpers/tmp.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const biomeJson = JSON.parse(readFileSync(join(root, 'biome.json'), 'utf8')) as { overrides: object[] };
const biome = join(root, 'node_modules', '.bin', 'biome');

/**
 * Lints `files` (path → text) with the repository's biome.json in a directory of their own: what `biome ci`
 * says of a module placed at that path. Returns biome's exit status and its output.
 */
function lintPlanted(files: Record<string, string>): { status: number | null; output: string } {
  const dir = tempDir('layers-');
  const config = { ...biomeJson, vcs: { enabled: false } } as Record<string, unknown>;
  delete config.$schema;
  writeFileSync(join(dir, 'biome.json'), JSON.stringify(config));
  for (const [path, text] of Object.entries(files)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text);
  }
  const run = spawnSync(biome, ['lint', '--colors=off', '--max-diagnostics=20', '.'], { cwd: dir, encoding: 'utf8' });
  return { status: run.status, output: `${run.stdout}${run.stderr}` };
}

const module = (importing: string) => `import { x } from '${importing}';\n\nexport const y = x;\n`;
const target = 'export const x = 1;\n';

describe('the layers of src/', () => {
  it('biome.json holds exactly the overrides the ordered list implies (else: run node scripts/layers.ts)', () => {
    expect(biomeJson.overrides.filter(isLayerOverride)).toEqual(layerOverrides());
  });

  it('gives every layer but the wiring an override refusing every layer above it', () => {
    const overrides = layerOverrides() as Array<{ includes: string[] }>;
    expect(overrides.map((o) => o.includes)).toEqual(LAYERS.slice(0, -1).map((layer) => layer.files));
  });

  it.each([
    ['remediation importing scheduler', 'src/remediation/planted.ts', '../scheduler/jobs.js', 'src/scheduler/jobs.ts'],
    ['collectors importing scheduler', 'src/collectors/planted.ts', '../scheduler/jobs.js', 'src/scheduler/jobs.ts'],
    ['polls importing scheduler', 'src/polls/planted.ts', '../scheduler/jobs.js', 'src/scheduler/jobs.ts'],
    ['collectors importing polls', 'src/collectors/planted.ts', '../polls/index.js', 'src/polls/index.ts'],
    ['http importing the wiring', 'src/http/planted.ts', '../daemon/reload.js', 'src/daemon/reload.ts'],
    ['a leaf module importing config', 'src/scrub.ts', './config/schema.js', 'src/config/schema.ts'],
  ])('refuses a planted back-import: %s', (_name, path, specifier, targetPath) => {
    const { status, output } = lintPlanted({ [path]: module(specifier), [targetPath]: target });
    expect(status).not.toBe(0);
    expect(output).toContain('layering:');
  });

  it('accepts the same import running down a layer (the check can pass)', () => {
    const { status, output } = lintPlanted({
      'src/scheduler/planted.ts': module('../remediation/engine.js'),
      'src/remediation/engine.ts': target,
    });
    expect(output).not.toContain('layering:');
    expect(status).toBe(0);
  });
});
