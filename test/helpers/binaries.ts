import { accessSync, constants } from 'node:fs';

/**
 * Where a Debian binary is, or why a test needing it is skipped. Absent binaries skip the test with a
 * reason naming the package — except under CI=true or BAREMETAL_E2E=1, where absence is a failure.
 */
export function requireBinary(
  path: string,
  debianPackage: string,
): { path: string; skip: false } | { skip: true; reason: string } {
  try {
    accessSync(path, constants.X_OK);
    return { path, skip: false };
  } catch {
    const reason = `${path} not found: install Debian's ${debianPackage} package (apt-get install -y ${debianPackage})`;
    if (process.env.CI === 'true' || process.env.BAREMETAL_E2E === '1')
      throw new Error(`${reason} — required under CI=true/BAREMETAL_E2E=1`);
    console.warn(`SKIPPED: ${reason}`);
    return { skip: true, reason };
  }
}
