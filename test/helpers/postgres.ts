import { join } from 'node:path';
import { requireBinary } from './binaries.js';
import { postgresBinDir } from './postgres-cluster.js';

export { startPostgres, type TestPostgres } from './postgres-cluster.js';

/**
 * Whether Debian's PostgreSQL is installed, in the shape of `requireBinary`: skipped with a reason naming the
 * package when absent, a failure under CI=true or BAREMETAL_E2E=1.
 */
export function requirePostgres(): { skip: false; bin: string } | { skip: true; reason: string } {
  const bin = postgresBinDir();
  const found = requireBinary(join(bin, 'initdb'), 'postgresql');
  return found.skip ? found : { skip: false, bin };
}
