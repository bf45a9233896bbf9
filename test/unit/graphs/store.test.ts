import { existsSync, mkdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type GraphMirror, GraphStore } from '../../../src/graphs/store.js';
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
    expect(await restarted.get(key)).toMatchObject({ width: 20, height: 10, etag: latest.etag });
    expect((await restarted.get(key))!.png.equals(latest.png)).toBe(true);
  });

  it('lists what it holds without the bytes, and reads an image from its file when asked', async () => {
    const dir = tempDir();
    const store = new GraphStore(dir, 'default');
    const key = { serverId: '100001', type: 'port_bits' as const, scale: 'day' as const };
    const png = await pngOf(30, 10);
    await store.put(key, { png, width: 30, height: 10 }, 5_000);
    const [held] = store.list();
    expect(held).toEqual({ ...key, width: 30, height: 10, bytes: png.length, etag: held!.etag, updatedAt: 5_000 });
    expect(held).not.toHaveProperty('png');
    // What is served is the file's content: the store holds no copy of it.
    const file = join(dir, 'graphs/default/dedicated/100001/port_bits-day.png');
    expect((await store.get(key))!.png.equals(png)).toBe(true);
    rmSync(file);
    expect(await store.get(key)).toBeUndefined();
    expect(store.list()).toEqual([]);
  });

  it('drops an image whose file was replaced by something else', async () => {
    const dir = tempDir();
    const store = new GraphStore(dir, 'default');
    const key = { serverId: '9', type: 'port_bits' as const, scale: 'week' as const };
    await store.put(key, { png: await pngOf(30, 10), width: 30, height: 10 }, 1);
    writeFileSync(join(dir, 'graphs/default/dedicated/9/port_bits-week.png'), 'half');
    expect(await store.get(key)).toBeUndefined();
    expect(store.size).toBe(0);
  });

  it('drops an image whose file changed to other bytes of the same length (its ETag would lie)', async () => {
    const dir = tempDir();
    const store = new GraphStore(dir, 'default');
    const key = { serverId: '9', type: 'port_bits' as const, scale: 'day' as const };
    const png = await pngOf(30, 10);
    await store.put(key, { png, width: 30, height: 10 }, 1);
    const other = Buffer.from(png);
    other[other.length - 1] = other[other.length - 1]! ^ 0xff;
    writeFileSync(join(dir, 'graphs/default/dedicated/9/port_bits-day.png'), other);
    expect(await store.get(key)).toBeUndefined();
    expect(store.list()).toEqual([]);
  });

  it('keeps the image held before when the new one cannot be written', async () => {
    const dir = tempDir();
    const store = new GraphStore(dir, 'default');
    const key = { serverId: '3', type: 'port_bits' as const, scale: 'day' as const };
    const before = await store.put(key, { png: await pngOf(30, 10), width: 30, height: 10 }, 1);
    // A directory where the temporary file goes: the write fails (EISDIR), even for root.
    mkdirSync(join(dir, 'graphs/default/dedicated/3/port_bits-day.png.tmp'));
    await expect(store.put(key, { png: await pngOf(40, 10), width: 40, height: 10 }, 2)).rejects.toThrow();
    expect((await store.get(key))!.png.equals(before.png)).toBe(true);
    expect(store.list()[0]!.etag).toBe(before.etag);
  });

  it('holds nothing of a server removed while its image was being written: no entry, no file', async () => {
    const dir = tempDir();
    const key = { serverId: '100001', type: 'port_bits' as const, scale: 'day' as const };
    const file = join(dir, 'graphs/default/dedicated/100001/port_bits-day.png');
    const image = { png: await pngOf(10, 10), width: 10, height: 10 };
    for (const remove of [
      (store: GraphStore) => store.removeServer('100001'),
      (store: GraphStore) => store.retainServers(new Set(['100002'])),
    ]) {
      const store = new GraphStore(dir, 'default');
      const put = store.put(key, image, 1_000);
      // The servers poll drops the server while the image is written (mkdir, write, rename are awaited).
      await remove(store);
      await put;
      expect([...store.fetched()]).toEqual([]);
      expect(store.list()).toEqual([]);
      expect(existsSync(file)).toBe(false);
      // Listed again later, its next image is held as usual.
      await store.put(key, image, 2_000);
      expect([...store.fetched()].map((g) => g.updatedAt)).toEqual([2_000]);
      await store.removeServer('100001');
    }
  });

  it('mirrors nothing of a server removed while its image was being copied to the shared database', async () => {
    // A fake of the store's own GraphMirror interface: a table of rows whose insert commits when released.
    const rows = new Set<string>();
    let release!: () => void;
    let inserting!: () => void;
    const mirror: GraphMirror = {
      async put(graph) {
        inserting();
        await new Promise<void>((resolve) => {
          release = resolve;
        });
        rows.add(`${graph.serverId}/${graph.type}/${graph.scale}`);
      },
      async removeServer(serverId) {
        for (const row of rows) if (row.startsWith(`${serverId}/`)) rows.delete(row);
      },
      async retainServers(serverIds) {
        for (const row of rows) if (!serverIds.has(row.split('/')[0]!)) rows.delete(row);
      },
    };
    const image = { png: await pngOf(10, 10), width: 10, height: 10 };
    for (const serverId of ['100001', '../unsafe']) {
      const insertStarted = new Promise<void>((resolve) => {
        inserting = resolve;
      });
      const store = new GraphStore(tempDir(), 'default', { mirror });
      const put = store.put({ serverId, type: 'port_bits', scale: 'day' }, image, 1_000);
      let removed = false;
      // The file is written; the insert is on its way to the database when the servers poll drops the server.
      await insertStarted;
      const removal = store.removeServer(serverId).then(() => {
        removed = true;
      });
      await new Promise((resolve) => setImmediate(resolve));
      // The insert commits only now: after the removal, were it not waited for.
      release();
      await put;
      await removal;
      expect(removed).toBe(true);
      expect([...rows]).toEqual([]);
      expect(store.list()).toEqual([]);
    }
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
    expect((await store.get({ serverId: '../../etc', type: 'port_bits', scale: 'day' }))?.width).toBe(120);
  });
});
