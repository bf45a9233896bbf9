import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach } from 'vitest';

/** A fresh temporary directory, removed after the test. */
export function tempDir(prefix = 'bmx-'): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  afterEach(() => rmSync(dir, { recursive: true, force: true }));
  return dir;
}
