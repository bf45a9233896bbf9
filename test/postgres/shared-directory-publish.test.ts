import type pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrateAll } from '../../src/store/postgres/migrations.js';
import { openPool } from '../../src/store/postgres/pool.js';
import { SharedDirectory, type PublishedServers } from '../../src/store/postgres/directory.js';
import { captureLogger } from '../helpers/logger.js';
import { requirePostgres, startPostgres, type TestPostgres } from '../helpers/postgres.js';

const found = requirePostgres();
/** what a leader publishes of a server (its id's main IP) */
const server = (ip: string) => ({ ips: [ip], ip, hostname: `${ip}.example`, location: 'fra1', status: 'online' });
const one: PublishedServers = { '1': server('198.18.0.1') };
const two: PublishedServers = { ...one, '2': server('198.18.0.2') };

describe.skipIf(found.skip)(
  'the shared server directory, published by a leader (Debian postgresql on loopback)',
  () => {
    let cluster: TestPostgres;
    let pool: pg.Pool;
    beforeAll(async () => {
      if (found.skip) return;
      cluster = await startPostgres(found.bin);
      pool = openPool(cluster.createDatabase('directory_publish'), () => {}, { connectTimeoutMs: 30_000 });
      await migrateAll(pool);
    }, 120_000);
    afterAll(async () => {
      await pool?.end();
      cluster?.stop();
    });

    /** a leader whose publications' statements are counted, leading `acme` under `epoch.now` (none: not leading) */
    const leader = (epoch: { now: string | undefined }, rewriteMs?: number) => {
      const statements: string[] = [];
      const failing = { next: false };
      const directory = new SharedDirectory({
        pool,
        accounts: ['acme'],
        logger: captureLogger().logger,
        ...(rewriteMs !== undefined ? { rewriteMs } : {}),
        epoch: () => epoch.now,
        write: async (_account, sql, params) => {
          statements.push(sql);
          if (failing.next) {
            failing.next = false;
            throw new Error('the database went away');
          }
          await pool.query(sql, params);
        },
      });
      return { directory, statements, failing };
    };
    const row = async () =>
      (await pool.query<{ servers: unknown }>("SELECT servers FROM ha_directory WHERE account = 'acme'")).rows[0]
        ?.servers;

    it('sends no statement for a list equal to the one written in the same term; a changed list is written', async () => {
      await pool.query('DELETE FROM ha_directory');
      const { directory, statements } = leader({ now: '1' });
      await directory.publish('acme', () => one);
      await directory.publish('acme', () => ({ ...one }));
      const unchanged = statements.length;
      await directory.publish('acme', () => two);
      await directory.publish('acme', () => two);
      expect({ unchanged, changed: statements.length, row: await row() }).toEqual({
        unchanged: 1,
        changed: 2,
        row: two,
      });
    });

    it('writes an unchanged list again in a new term, after a term ended, and after a failed write', async () => {
      await pool.query('DELETE FROM ha_directory');
      const epoch = { now: '7' as string | undefined };
      const { directory, statements, failing } = leader(epoch);
      await directory.publish('acme', () => one);
      // Another replica led in between and wrote its own list; this one leads again under a new epoch.
      await pool.query(`UPDATE ha_directory SET servers = $1 WHERE account = 'acme'`, [JSON.stringify(two)]);
      epoch.now = '9';
      await directory.publish('acme', () => one);
      const newTerm = { statements: statements.length, row: await row() };
      // The term ended (its duties stopped) and a new one began under the same epoch text (a database reset).
      await pool.query('DELETE FROM ha_directory');
      directory.forget('acme');
      await directory.publish('acme', () => one);
      const afterForget = { statements: statements.length, row: await row() };
      // After a failed write the row may hold either list: the list last written is forgotten, and written again.
      failing.next = true;
      await expect(directory.publish('acme', () => two)).rejects.toThrow('the database went away');
      await directory.publish('acme', () => one);
      const afterFailure = { statements: statements.length, row: await row() };
      expect({ newTerm, afterForget, afterFailure }).toEqual({
        newTerm: { statements: 2, row: one },
        afterForget: { statements: 3, row: one },
        afterFailure: { statements: 5, row: one },
      });
    });

    it('writes every publication when not leading under a lease (one leader, or the term unknown)', async () => {
      await pool.query('DELETE FROM ha_directory');
      const { directory, statements } = leader({ now: undefined });
      await directory.publish('acme', () => one);
      await directory.publish('acme', () => one);
      expect(statements.length).toBe(2);
    });

    it('writes an unchanged list again once `rewriteMs` has passed since it was written', async () => {
      await pool.query('DELETE FROM ha_directory');
      const { directory, statements } = leader({ now: '1' }, 0);
      await directory.publish('acme', () => one);
      await pool.query('DELETE FROM ha_directory');
      await directory.publish('acme', () => one);
      expect({ statements: statements.length, row: await row() }).toEqual({ statements: 2, row: one });
    });
  },
);
