import { existsSync, mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { GraphStore } from '../../../src/graphs/store.js';
import { pngOf } from '../../helpers/images.js';
import { tempDir } from '../../helpers/tmp.js';

describe('graph store retention', () => {
  it.each([
    {
      name: 'servers gone while the daemon was down are dropped from memory and disk',
      keep: ['1'],
      dropped: ['2', '3'],
    },
    { name: 'an empty server list drops every image', keep: [], dropped: ['1', '2', '3'] },
    { name: 'every server still listed: nothing is dropped', keep: ['1', '2', '3', '4'], dropped: [] },
  ])('$name', async ({ keep, dropped }) => {
    const dir = tempDir();
    const before = new GraphStore(dir, 'default');
    for (const serverId of ['1', '2', '3']) {
      await before.put(
        { serverId, type: 'port_bits', scale: 'day' },
        { png: await pngOf(), width: 120, height: 40 },
        1,
      );
    }
    // A directory with nothing loadable in it is retired as well; a foreign name is left alone.
    mkdirSync(join(dir, 'graphs/default/dedicated/9'), { recursive: true });
    writeFileSync(join(dir, 'graphs/default/dedicated/9/port_bits-day.png'), 'not a png');
    writeFileSync(join(dir, 'graphs/default/dedicated/README needs no id'), 'x');

    const store = new GraphStore(dir, 'default');
    expect(await store.load()).toBe(3);
    const removed = await store.retainServers(new Set(keep));
    expect(removed.map((k) => k.serverId).sort()).toEqual(dropped);
    expect(store.list().map((g) => g.serverId)).toEqual(['1', '2', '3'].filter((id) => !dropped.includes(id)));
    for (const id of ['1', '2', '3'])
      expect(existsSync(join(dir, 'graphs/default/dedicated', id)), id).toBe(!dropped.includes(id));
    expect(existsSync(join(dir, 'graphs/default/dedicated/9'))).toBe(keep.includes('9'));
    expect(existsSync(join(dir, 'graphs/default/dedicated/README needs no id'))).toBe(true);
  });

  it('does nothing without a graphs directory', async () => {
    expect(await new GraphStore(tempDir(), 'default').retainServers(new Set())).toEqual([]);
  });
});
