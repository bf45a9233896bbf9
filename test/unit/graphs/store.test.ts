import { existsSync, writeFileSync, mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { GraphStore } from '../../../src/graphs/store.js';
import { pngOf } from '../../helpers/images.js';
import { tempDir } from '../../helpers/tmp.js';

describe('graph store', () => {
  it('keeps the latest image per key, writes it to disk, and a new store loads it back', async () => {
    const dir = tempDir();
    const store = new GraphStore(dir, 'default');
    const key = { serverId: '100001', type: 'port_bits' as const, scale: 'day' as const };
    await store.put(key, { png: await pngOf(10, 10, '#000000'), width: 10, height: 10 }, 1_000);
    const latest = await store.put(key, { png: await pngOf(20, 10), width: 20, height: 10 }, 2_000);
    expect(store.size).toBe(1);
    expect(latest.etag).toMatch(/^"[A-Za-z0-9_-]+"$/);
    expect(existsSync(join(dir, 'graphs/default/dedicated/100001/port_bits-day.png'))).toBe(true);

    const restarted = new GraphStore(dir, 'default');
    expect(await restarted.load()).toBe(1);
    expect(restarted.get(key)).toMatchObject({ width: 20, height: 10, etag: latest.etag });
    expect(restarted.get(key)!.png.equals(latest.png)).toBe(true);
  });

  it('skips corrupt and foreign files when loading', async () => {
    const dir = tempDir();
    mkdirSync(join(dir, 'graphs/default/dedicated/7'), { recursive: true });
    writeFileSync(join(dir, 'graphs/default/dedicated/7/port_bits-day.png'), 'not a png');
    writeFileSync(join(dir, 'graphs/default/dedicated/7/notes.txt'), 'x');
    writeFileSync(join(dir, 'graphs/default/dedicated/7/port_bits-day.png.tmp'), 'x');
    expect(await new GraphStore(dir, 'default').load()).toBe(0);
  });

  it('removes a server from memory and disk', async () => {
    const dir = tempDir();
    const store = new GraphStore(dir, 'default');
    await store.put(
      { serverId: '1', type: 'port_bits', scale: 'day' },
      { png: await pngOf(), width: 120, height: 40 },
      1,
    );
    await store.put(
      { serverId: '2', type: 'port_bits', scale: 'day' },
      { png: await pngOf(), width: 120, height: 40 },
      1,
    );
    await store.removeServer('1');
    expect(store.list().map((g) => g.serverId)).toEqual(['2']);
    expect(existsSync(join(dir, 'graphs/default/dedicated/1'))).toBe(false);
  });

  it('holds images of server ids unsafe as directory names in memory only', async () => {
    const dir = tempDir();
    const store = new GraphStore(dir, 'default');
    await store.put(
      { serverId: '../../etc', type: 'port_bits', scale: 'day' },
      { png: await pngOf(), width: 120, height: 40 },
      1,
    );
    expect(store.size).toBe(1);
    expect(existsSync(join(dir, 'etc'))).toBe(false);
  });
});
