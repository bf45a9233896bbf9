/**
 * The graph images replicas share in PostgreSQL (ha_graphs): an image fetched again unchanged keeps the bytes
 * already stored — the row keeps its TOAST chunks, only the time advances — and a changed image replaces them.
 * The soak of issue 32 found the database growing while every graphs poll stored the same images again.
 * With the accounts shared among replicas (issue 42) each image write carries the account's lease epoch: after
 * a takeover, the old leader's writes are refused by the database and change nothing.
 */
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { afterEach, describe, expect, it } from 'vitest';
import { StaleLeaseError } from '../../src/errors.js';
import type { StoredGraph } from '../../src/graphs/store.js';
import type { PostgresStore } from '../../src/store/postgres/store.js';
import { eventually } from '../helpers/processes.js';
import { backends } from '../helpers/store-backends.js';
import { termsOf } from '../../src/ha/terms.js';

const postgres = backends().find((b) => b.name === 'postgres')!;
const clients: pg.Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.end()));
});

/** An image of 64 KiB that does not compress, so PostgreSQL stores it out of line in TOAST chunks. */
const image = (etag: string, updatedAt: number, png = randomBytes(64 * 1024)): StoredGraph => ({
  serverId: '100001',
  type: 'port_bits',
  scale: 'day',
  width: 497,
  height: 169,
  bytes: png.length,
  etag,
  updatedAt,
  png,
});

describe.skipIf(postgres.skip)('shared graph images on PostgreSQL', () => {
  it('keeps the stored bytes of an image fetched again unchanged, and replaces those of a changed one', async () => {
    const db = await postgres.fresh();
    const store = (await db.open()) as PostgresStore;
    const client = new pg.Client({ connectionString: db.url });
    clients.push(client);
    await client.connect();
    // The test cluster's user is its superuser: it may read the TOAST table of ha_graphs.
    const { rows } = await client.query<{ toast: string }>(
      `SELECT reltoastrelid::regclass::text AS toast FROM pg_class WHERE relname = 'ha_graphs'`,
    );
    const chunkIds = async () =>
      (await client.query<{ id: string }>(`SELECT DISTINCT chunk_id::text AS id FROM ${rows[0]!.toast}`)).rows.map(
        (r) => r.id,
      );

    const mirror = store.shared.graphs.mirror('default');
    const first = image('"a"', 1_000);
    await mirror.put(first);
    const stored = await chunkIds();
    expect(stored).toHaveLength(1);

    // Fetched again, the same bytes: the same chunks, a later time.
    await mirror.put({ ...first, updatedAt: 2_000 });
    expect(await chunkIds()).toEqual(stored);
    expect(await store.shared.graphs.get('default', first)).toMatchObject({
      etag: '"a"',
      updatedAt: 2_000,
      png: first.png,
    });

    // A new image: new chunks, and the bytes read back are the new ones.
    const second = image('"b"', 3_000);
    await mirror.put(second);
    const replaced = await chunkIds();
    expect(replaced).toHaveLength(1);
    expect(replaced).not.toEqual(stored);
    expect(await store.shared.graphs.get('default', second)).toMatchObject({
      etag: '"b"',
      updatedAt: 3_000,
      png: second.png,
    });
  });
});

describe.skipIf(postgres.skip)('graph images fenced by the account lease (database.share_accounts)', () => {
  it('after a takeover, a write under the old epoch is refused with BM_ERR_STALE_LEASE and changes nothing', async () => {
    const db = await postgres.fresh();
    const [old, next] = [(await db.open()) as PostgresStore, (await db.open()) as PostgresStore];
    // a short lease, so that the takeover comes soon
    const leaseMs = 1_000;
    const leadAs = async (store: PostgresStore, replica: string) => {
      const epoch = await eventually(`${replica} to claim the lease`, () =>
        store.shared.shares(replica, leaseMs, termsOf('shared', [])).leases.claim('default'),
      );
      store.shared.fence((account) => (account === 'default' ? { replica, epoch } : undefined));
      return epoch;
    };
    const first = image('"a"', 1_000);
    const oldEpoch = await leadAs(old, 'r-old');
    await old.shared.graphs.mirror('default').put(first);

    // The lease runs out unrenewed (a paused leader): the next replica claims it under a newer epoch.
    const newEpoch = await leadAs(next, 'r-new');
    expect(BigInt(newEpoch)).toBeGreaterThan(BigInt(oldEpoch));
    const stale = old.shared.graphs.mirror('default');
    const refused = await stale.put(image('"b"', 2_000)).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(StaleLeaseError);
    expect(refused).toMatchObject({ code: 'BM_ERR_STALE_LEASE', epoch: oldEpoch });
    await stale.removeServer(first.serverId);
    await stale.retainServers(new Set());
    // nothing changed: the image the old leader stored under its own lease is there, as it was
    const stored = await next.shared.graphs.get('default', first);
    expect(stored).toMatchObject({ etag: '"a"', updatedAt: 1_000, png: first.png });
    expect(await next.shared.graphs.list()).toHaveLength(1);
    expect(db.lines.join('\n')).toContain(`lease epoch ${oldEpoch} is no longer current`);

    // the new leader writes under its own epoch
    const second = image('"c"', 3_000);
    await next.shared.graphs.mirror('default').put(second);
    expect(await next.shared.graphs.get('default', second)).toMatchObject({ etag: '"c"', png: second.png });
    await next.shared.graphs.mirror('default').removeServer(second.serverId);
    expect(await next.shared.graphs.list()).toEqual([]);
  });

  it('a replica that does not lead the account (no lease) writes no image', async () => {
    const db = await postgres.fresh();
    const store = (await db.open()) as PostgresStore;
    store.shared.fence(() => undefined);
    await expect(store.shared.graphs.mirror('default').put(image('"a"', 1_000))).rejects.toMatchObject({
      code: 'BM_ERR_STALE_LEASE',
    });
    expect(await store.shared.graphs.list()).toEqual([]);
  });
});

describe.skipIf(postgres.skip)('the shared server directory on PostgreSQL', () => {
  it('is vacuumed after a few dead versions of its one row per account, not the default 50', async () => {
    const db = await postgres.fresh();
    await db.open();
    const client = new pg.Client({ connectionString: db.url });
    clients.push(client);
    await client.connect();
    const { rows } = await client.query<{ options: string[] }>(
      `SELECT c.reloptions AS options FROM pg_class c WHERE c.relname = 'ha_directory'
       UNION ALL SELECT t.reloptions FROM pg_class c JOIN pg_class t ON t.oid = c.reltoastrelid
       WHERE c.relname = 'ha_directory'`,
    );
    expect(rows.map((r) => [...r.options].sort())).toEqual([
      ['autovacuum_vacuum_scale_factor=0', 'autovacuum_vacuum_threshold=4', 'fillfactor=50'],
      ['autovacuum_vacuum_scale_factor=0', 'autovacuum_vacuum_threshold=4'],
    ]);
  });
});
