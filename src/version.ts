/** The package version, read from package.json beside dist/ or src/; `0.0.0` when it cannot be read. */
import { readFileSync } from 'node:fs';

export const VERSION: string = (() => {
  try {
    return (JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as { version: string })
      .version;
  } catch {
    return '0.0.0';
  }
})();

/**
 * Where this build came from: `dist/build-info.json`, written by `npm run build` (scripts/build-info.ts) from
 * git at build time; `unknown` when it is absent (running from src/, or built outside a checkout).
 */
export const BUILD: { revision: string; branch: string } = (() => {
  try {
    const info = JSON.parse(readFileSync(new URL('./build-info.json', import.meta.url), 'utf8')) as {
      revision?: unknown;
      branch?: unknown;
    };
    const label = (value: unknown) => (typeof value === 'string' && /^[\w./-]{1,100}$/.test(value) ? value : 'unknown');
    return { revision: label(info.revision), branch: label(info.branch) };
  } catch {
    return { revision: 'unknown', branch: 'unknown' };
  }
})();
