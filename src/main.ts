#!/usr/bin/env -S node --max-semi-space-size=2
/**
 * The launcher: checks the Node.js version before anything else loads, then starts the command line
 * (`cli/main.ts`). Static ESM imports are resolved before any code runs, so this file imports nothing of the app:
 * on an older Node the app's first `node:sqlite` import would die with a stack trace instead of one line.
 * The version needed is package.json's `engines.node` (one source of truth; a test checks its `>=X.Y.Z` shape).
 */
import { readFileSync } from 'node:fs';

/** True when dotted version `found` is older than `needed` (numeric parts, missing parts count as 0). */
function isOlder(found: string, needed: string): boolean {
  const a = found.split('.').map(Number);
  const b = needed.split('.').map(Number);
  for (let i = 0; i < b.length; i++) {
    if ((a[i] ?? 0) !== b[i]) return (a[i] ?? 0) < b[i]!;
  }
  return false;
}

const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
  engines?: { node?: string };
};
const needed = /^>=(\d+\.\d+\.\d+)$/.exec(pkg.engines?.node ?? '')?.[1];
if (needed !== undefined && isOlder(process.versions.node, needed)) {
  process.stderr.write(
    `baremetal-exporter: Node.js ${process.versions.node} (${process.execPath}) is too old, ${needed} or newer is needed: install Node.js 24 LTS (https://nodejs.org/en/download; docs/deploying.md)\n`,
  );
  process.exit(2);
}

await import('./cli/main.js');
