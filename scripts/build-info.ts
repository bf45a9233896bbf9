/**
 * Writes dist/build-info.json ({revision, branch}) from git, for `baremetal_exporter_build_info`; run by
 * `npm run build`. Outside a git checkout (the image build's context has no .git) it takes
 * BAREMETAL_REVISION and BAREMETAL_BRANCH, else writes `unknown`.
 */
import { execFileSync } from 'node:child_process';
import { writeFileSync } from 'node:fs';

const git = (...args: string[]): string | undefined => {
  try {
    return execFileSync('git', args, { stdio: ['ignore', 'pipe', 'ignore'], encoding: 'utf8' }).trim() || undefined;
  } catch {
    return undefined;
  }
};
const info = {
  revision: process.env.BAREMETAL_REVISION || git('rev-parse', 'HEAD') || 'unknown',
  branch: process.env.BAREMETAL_BRANCH || git('rev-parse', '--abbrev-ref', 'HEAD') || 'unknown',
};
writeFileSync(new URL('../dist/build-info.json', import.meta.url), `${JSON.stringify(info)}\n`);
