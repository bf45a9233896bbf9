import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, afterEach } from 'vitest';

/** A fresh temporary directory, removed after the test (or, with `scope: 'all'`, after the file's tests). */
export function tempDir(prefix = 'bmx-', scope: 'each' | 'all' = 'each'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  (scope === 'all' ? afterAll : afterEach)(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}
