/**
 * `baremetal-exporter api` writes with `database.url`: journaled in the shared PostgreSQL (Debian's, on
 * loopback) as `cli` rows, so the daemons' budget and cooldowns see them; with the database unreachable the
 * write is not sent at all, and the password is in no output.
 */
import { userInfo } from 'node:os';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSimulator, type Simulator } from '../../src/simulator/server.js';
import { runCli } from '../helpers/cli.js';
import { requirePostgres, startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { freePort } from '../helpers/processes.js';
import { tempDir } from '../helpers/tmp.js';

const found = requirePostgres();
const KEY = 'cli-pg-key-6a0d2c4e';
const STATE = '/api/v1/dedicated/firewall/state';

describe.skipIf(found.skip)('the api command on a shared PostgreSQL journal', () => {
  let db: TestPostgres;
  let sim: Simulator;
  const dir = tempDir('bmx-cli-pg-', 'all');
  beforeAll(async () => {
    if (found.skip) return;
    db = await startPostgres(found.bin);
    sim = await startSimulator({ apiKey: KEY, servers: 3, attackRate: 0 });
  }, 120_000);
  afterAll(async () => {
    await sim?.close();
    db?.stop();
  });

  const withDatabase = async (url: string, args: string[]) => {
    writeFileSync(join(dir, 'database-url'), `${url}\n`);
    const config = join(dir, 'config.yml');
    writeFileSync(
      config,
      `upstream: { base_url: "${sim.url}" }\nstate_dir: ${join(dir, 'state')}\ndatabase: { url_file: ${join(dir, 'database-url')} }\n`,
    );
    return runCli(['api', ...args, '--config.file', config], { BAREMETAL_API_URL: '', BAREMETAL_API_KEY: KEY });
  };

  it('journals a write as a cli row and reads the 2-minute window back from it', async () => {
    const url = db.createDatabase('cli_journal');
    const first = await withDatabase(url, ['firewall', 'state', '100003', '198.18.0.5', '1']);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    const refusal = await withDatabase(url, ['firewall', 'state', '100003', '198.18.0.5', '0']);
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    const { rows } = await client.query(
      'SELECT source, action, server_id, ip, value, decision, principal, created_at FROM actions ORDER BY id',
    );
    await client.end();
    expect(rows.map((r) => [r.source, r.action, r.server_id, r.ip, r.value, r.decision])).toEqual([
      ['cli', 'firewall_state', '100003', '198.18.0.5', '1', 'executed'],
      ['cli', 'firewall_state', '100003', '198.18.0.5', '0', 'failed'],
    ]);
    // The row names who ran the command: its login name.
    expect(rows.map((r) => r.principal)).toEqual([`cli:${userInfo().username}`, `cli:${userInfo().username}`]);
    expect(refusal.code).toBe(1);
    // The next possible time is exact: the last change came from the shared journal.
    expect(refusal.stderr).toContain(
      `the next change is possible at ${new Date(Number(rows[0].created_at) + 120_000).toISOString()} (in `,
    );
    expect(`${first.stdout}${first.stderr}${refusal.stdout}${refusal.stderr}`).not.toContain(db.password);
  });

  it('sends nothing when the shared journal does not answer, and says why without the password', async () => {
    const before = sim.callsTo(STATE).length;
    const closed = `postgres://bmx:${db.password}@127.0.0.1:${await freePort()}/bmx`;
    const r = await withDatabase(closed, ['firewall', 'state', '100002', '198.18.0.3', '1']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain('the state database does not answer');
    expect(r.stderr).toContain("not sending an action the daemons' budget and cooldowns would not see");
    expect(`${r.stdout}${r.stderr}`).not.toContain(db.password);
    expect(sim.callsTo(STATE)).toHaveLength(before);
  });
});
