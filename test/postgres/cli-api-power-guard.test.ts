/**
 * `baremetal-exporter api power …` against the state the daemon shares, on both backends: refused (exit 3,
 * nothing sent, nothing journaled) while the account's circuit breaker is open or the server's cap is reached;
 * `--force` sends it and journals the row as forced; a write the state allows is sent and journaled as before.
 */
import { userInfo } from 'node:os';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Config } from '../../src/config/types.js';
import { createLogger } from '../../src/logger.js';
import { startSimulator, type Simulator } from '../../src/simulator/server.js';
import { openStore } from '../../src/store/open.js';
import type { StateStore } from '../../src/store/store.js';
import { runCli } from '../helpers/cli.js';
import { requirePostgres, startPostgres, type TestPostgres } from '../helpers/postgres.js';
import { tempDir } from '../helpers/tmp.js';

const found = requirePostgres();
const KEY = 'cli-guard-key-93c1e7a2';
const ME = `cli:${userInfo().username}`;
let sim: Simulator;
let db: TestPostgres | undefined;
let databases = 0;

beforeAll(async () => {
  sim = await startSimulator({ apiKey: KEY, servers: 3, attackRate: 0 });
  if (!found.skip) db = await startPostgres(found.bin);
}, 120_000);
afterAll(async () => {
  await sim?.close();
  db?.stop();
});

/** A fresh journal of the backend and a config naming it, with a cap of one power action per server. */
function journalOf(backend: 'sqlite' | 'postgres') {
  const dir = tempDir('bmx-cli-guard-');
  const stateDir = join(dir, 'state');
  const url = backend === 'postgres' ? db!.createDatabase(`cli_guard_${++databases}`) : undefined;
  if (url !== undefined) writeFileSync(join(dir, 'database-url'), `${url}\n`);
  const file = join(dir, 'config.yml');
  writeFileSync(
    file,
    [
      `upstream: { base_url: "${sim.url}" }`,
      `state_dir: ${stateDir}`,
      ...(url !== undefined ? [`database: { url_file: ${join(dir, 'database-url')} }`] : []),
      'remediation: { safety: { max_power_actions_per_server: 1 } }',
      '',
    ].join('\n'),
  );
  const database: Config['database'] =
    url === undefined ? { kind: 'sqlite' } : { kind: 'postgres', url, redactedUrl: 'postgres://…' };
  /** Runs `fn` on the journal as the daemon opens it (created on first use), then closes it. */
  const withStore = async <T>(fn: (store: StateStore) => Promise<T>): Promise<T> => {
    const store = await openStore(
      { database, stateDir, accounts: [{ name: 'default' }] as unknown as Config['accounts'] },
      { logger: createLogger('silent') },
    );
    try {
      expect(await store.opened).toBe(true);
      return await fn(store);
    } finally {
      await store.close();
    }
  };
  const api = (args: string[]) =>
    runCli(['api', ...args, '--config.file', file], { BAREMETAL_API_URL: '', BAREMETAL_API_KEY: KEY });
  const rows = () =>
    withStore(async (s) =>
      (await s.list({ limit: 100 })).reverse().map((r) => ({
        source: r.source,
        action: r.action,
        serverId: r.serverId,
        decision: r.decision,
        principal: r.principal,
        forced: r.forced,
        message: r.message,
      })),
    );
  return { api, withStore, rows };
}

const sent = (action: string) => sim.callsTo(`/api/v1/dedicated/${action}`).length;

describe.each([
  { backend: 'sqlite' as const, skip: false },
  { backend: 'postgres' as const, skip: found.skip },
])('api power writes on the $backend journal', ({ backend, skip }) => {
  it.skipIf(skip)('a write the state allows is sent and journaled as before, not forced', async () => {
    const { api, withStore, rows } = journalOf(backend);
    await withStore(async () => undefined);
    const before = sent('poweron');
    const r = await api(['power', 'on', '100001']);
    expect(r.stderr).toBe('');
    expect(r.code).toBe(0);
    expect(sent('poweron')).toBe(before + 1);
    expect(await rows()).toEqual([
      expect.objectContaining({ source: 'cli', action: 'poweron', serverId: '100001', decision: 'executed' }),
    ]);
    expect((await rows())[0]).toMatchObject({ principal: ME, forced: false });
  });

  it.skipIf(skip)(
    'the cap reached: refused with the count and window, nothing sent; --force sends it, journaled forced',
    async () => {
      const { api, withStore, rows } = journalOf(backend);
      await withStore(async () => undefined);
      expect((await api(['power', 'on', '100002'])).code).toBe(0);
      const before = sent('powercycle');
      const refusal = await api(['power', 'cycle', '100002', '--yes']);
      expect(refusal.code).toBe(3);
      expect(refusal.stdout).toBe('');
      expect(refusal.stderr).toBe(
        'baremetal-exporter api: powercycle 100002 refused: server 100002 already had 1 power actions within 86400s (remediation.safety.max_power_actions_per_server: 1); nothing sent: a person must look at it; --force sends it anyway (journaled as forced)\n',
      );
      expect(sent('powercycle')).toBe(before);
      expect((await rows()).map((r) => r.action)).toEqual(['poweron']);

      const forced = await api(['power', 'cycle', '100002', '--yes', '--force']);
      expect(forced.code).toBe(0);
      expect(forced.stderr).toContain('warning: sent with --force past: server 100002 already had 1 power actions');
      expect(sent('powercycle')).toBe(before + 1);
      const [, row] = await rows();
      expect(row).toMatchObject({ action: 'powercycle', decision: 'executed', principal: ME, forced: true });
      expect(row!.message).toMatch(/^forced \(--force\) past: server 100002 already had 1 power actions/);
    },
  );

  it.skipIf(skip)(
    'the breaker open: refused naming since when and how to close it, nothing sent; --force sends it, journaled forced',
    async () => {
      const { api, withStore, rows } = journalOf(backend);
      const openedAt = Date.parse('2026-11-26T08:00:00Z');
      await withStore((s) => s.openCircuit('default', openedAt, 'power actions asked for 4 servers'));
      const before = sent('poweroff');
      const refusal = await api(['power', 'off', '100003', '--yes']);
      expect(refusal.code).toBe(3);
      expect(refusal.stderr).toBe(
        'baremetal-exporter api: poweroff 100003 refused: the circuit breaker of account default is open since 2026-11-26T08:00:00.000Z (power actions asked for 4 servers); power actions are denied until an operator closes it: POST /api/v1/remediation/circuit/close; --force sends it anyway (journaled as forced)\n',
      );
      expect(sent('poweroff')).toBe(before);
      expect(await rows()).toEqual([]);

      const forced = await api(['power', 'off', '100003', '--yes', '--force']);
      expect(forced.code).toBe(0);
      expect(forced.stderr).toContain(
        'warning: sent with --force past: the circuit breaker of account default is open',
      );
      expect(sent('poweroff')).toBe(before + 1);
      expect(await rows()).toEqual([
        expect.objectContaining({ action: 'poweroff', decision: 'executed', principal: ME, forced: true }),
      ]);
      // The breaker stays open: --force goes past it, it does not close it.
      expect((await withStore((s) => s.circuit('default'))).openedAt).toBe(openedAt);
    },
  );
});
