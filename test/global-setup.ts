/**
 * Vitest globalSetup: makes sure dist/ is built from the current sources before any test runs, so the CLI
 * tests (which start `node dist/main.js`) never run a stale build. `npm test` builds first, so this finds
 * dist/ fresh and costs one directory walk; `npx vitest run <file>` after an edit rebuilds once.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';

const ROOT = join(import.meta.dirname, '..');

function files(dir: string, suffix: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: 'utf8' })
    .filter((f) => f.endsWith(suffix))
    .map((f) => join(dir, f));
}

/** Why dist/ is stale, or undefined when every source has an output newer than every input. */
export function staleReason(root = ROOT): string | undefined {
  const src = join(root, 'src');
  const dist = join(root, 'dist');
  const sources = files(src, '.ts').filter((f) => !f.endsWith('.d.ts'));
  const outputs: string[] = [];
  for (const source of sources) {
    const output = join(dist, relative(src, source)).replace(/\.ts$/, '.js');
    if (!existsSync(output)) return `${relative(root, output)} is missing`;
    outputs.push(output);
  }
  const newestInput = Math.max(
    ...[...sources, join(root, 'tsconfig.json'), join(root, 'package.json')].map((f) => statSync(f).mtimeMs),
  );
  const oldestOutput = Math.min(...outputs.map((f) => statSync(f).mtimeMs));
  return newestInput > oldestOutput ? 'a source is newer than its build' : undefined;
}

export default function setup(): void {
  const reason = staleReason();
  if (reason === undefined) return;
  console.log(`globalSetup: building dist/ (${reason})`);
  const result = spawnSync(join(ROOT, 'node_modules', '.bin', 'tsc'), ['-p', 'tsconfig.json'], {
    cwd: ROOT,
    stdio: 'inherit',
    timeout: 300_000,
  });
  if (result.status !== 0)
    throw new Error(
      `globalSetup: tsc -p tsconfig.json failed (exit ${result.status}); the CLI tests would run a stale dist/`,
    );
}
