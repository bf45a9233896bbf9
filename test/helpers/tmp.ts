import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach, onTestFinished } from 'vitest';

/**
 * A fresh temporary directory, removed after the test (or, with `scope: 'all'`, after the file's tests).
 * Called inside a running test it is removed when that test finishes: an `afterEach` registered from inside
 * a test would never run for it.
 */
export function tempDir(prefix = 'bmx-', scope: 'each' | 'all' = 'each'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  const remove = () => rmSync(dir, { recursive: true, force: true });
  if (scope === 'all') afterAll(remove);
  else {
    try {
      onTestFinished(remove);
    } catch {
      afterEach(remove);
    }
  }
  return dir;
}
