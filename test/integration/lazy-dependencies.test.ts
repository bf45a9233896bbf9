/**
 * Pay for what is used (issue 53): a dependency whose feature a deployment leaves unused is never loaded. The
 * daemon runs as a process with a module hook recording every package it resolves
 * (test/fixtures/hooks/record-packages.ts); its upstream is the simulator, whose graphs are PNGs.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { type DaemonProcess, startDaemonProcess } from '../helpers/daemon.js';
import { eventually } from '../helpers/processes.js';
import { tempDir } from '../helpers/tmp.js';

const HOOK = fileURLToPath(new URL('../fixtures/hooks/record-packages.ts', import.meta.url));

let h: DaemonProcess | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

/** The packages the process has resolved so far, by name. */
function packages(log: string): string[] {
  try {
    return readFileSync(log, 'utf8').split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

describe('sharp (libvips) when an image needs converting or resizing, node-postgres with a PostgreSQL database', () => {
  it('a daemon serving PNG graphs as they came never loads it; the first ?width= loads it and resizes', async () => {
    const log = join(tempDir(), 'packages.log');
    writeFileSync(log, '');
    h = await startDaemonProcess({ key: 'lazy-key-3c9d1e7a', simulator: { servers: 2 } });
    const run = h.spawn([], { NODE_OPTIONS: `--import=${HOOK}`, BAREMETAL_TEST_PACKAGE_LOG: log });
    const graph = `${h.url}/graphs/dedicated/100001/port_bits/day.png`;
    const png = await eventually(`a graph served (${run.output()})`, async () => {
      const res = await request(graph).catch(() => undefined);
      if (res?.statusCode !== 200) {
        await res?.body.dump();
        return undefined;
      }
      return Buffer.from(await res.body.arrayBuffer());
    });
    expect(png.subarray(1, 4).toString('latin1')).toBe('PNG');
    const loaded = packages(log);
    expect(loaded).toContain('fastify'); // the hook records what the daemon loads
    expect(loaded).not.toContain('sharp');
    // On SQLite (the harness's default) node-postgres is never loaded; the postgres tier's daemons load it.
    expect(loaded).not.toContain('pg');

    const resized = await request(`${graph}?width=20`);
    expect(resized.statusCode).toBe(200);
    const body = Buffer.from(await resized.body.arrayBuffer());
    expect(body.readUInt32BE(16)).toBe(20); // IHDR width
    expect(packages(log)).toContain('sharp');
  });
});
