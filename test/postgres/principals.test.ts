/**
 * Principals with roles on both state-store backends: each role against each remediation route, an operator
 * bounded to accounts and actions, and the deprecated shared credentials (every role, a warning at start).
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { DatabaseSync } from 'node:sqlite';
import bcrypt from 'bcryptjs';
import type { InjectOptions } from 'fastify';
import { describe, expect, it, onTestFinished } from 'vitest';
import type { Principal } from '../../src/config/types.js';
import { MIGRATIONS as POSTGRES_MIGRATIONS } from '../../src/store/postgres/migrations.js';
import { migrate, openPool } from '../../src/store/postgres/pool.js';
import { MIGRATIONS as SQLITE_MIGRATIONS } from '../../src/store/sqlite/database.js';
import { tempDir } from '../helpers/tmp.js';
import { startHarness } from '../helpers/daemon.js';
import {
  engineHarness,
  FIREWALL_PERIOD_MS,
  openTestStore,
  POWERCYCLE_REMEDIATION,
  remediationApp,
  rule,
  simulatorTargets,
  TOKEN,
} from '../helpers/remediation.js';
import { freshMetrics } from '../helpers/metrics.js';
import { RemediationEngine } from '../../src/remediation/engine.js';
import { backends } from '../helpers/store-backends.js';
import { buildApp } from '../../src/http/app.js';
import type { StatusView } from '../../src/http/routes/status-page.js';
import type { StatusViewOptions } from '../../src/http/status-view.js';
import { journalRow, type JournalEntry } from '../../src/store/rows.js';
import { GraphStore } from '../../src/graphs/store.js';
import { ExpositionCache } from '../../src/metrics/exposition-cache.js';
import { captureLogger } from '../helpers/logger.js';

const PASSWORD = 'alice-password-0123';
const token = (name: string) => `${name}-token-0123456789abcdef`;
const bearer = (name: string) => ({ authorization: `Bearer ${token(name)}` });
const basic = (user: string, password: string) => ({
  authorization: `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`,
});

const PRINCIPALS: Principal[] = [
  { name: 'alertmanager', bearerToken: token('alertmanager'), roles: ['webhook'] },
  { name: 'ops', bearerToken: token('ops'), roles: ['operator'] },
  { name: 'audit', bearerToken: token('audit'), roles: ['reader'] },
  {
    name: 'alice',
    basicAuthHash: bcrypt.hashSync(PASSWORD, 4),
    roles: ['operator', 'reader'],
    accounts: ['default'],
    actions: ['firewall_state'],
  },
  { name: 'eu-only', bearerToken: token('eu-only'), roles: ['operator'], accounts: ['eu'] },
  { name: 'eu-audit', bearerToken: token('eu-audit'), roles: ['reader'], accounts: ['eu'] },
];

const webhookPayload = {
  version: '4',
  status: 'firing',
  receiver: 'baremetal',
  groupKey: '{}:{}',
  alerts: [
    {
      status: 'firing',
      labels: { alertname: 'BaremetalServerUnreachable', server_id: '100002' },
      annotations: {},
      startsAt: '2026-11-21T11:59:00Z',
      endsAt: '0001-01-01T00:00:00Z',
      fingerprint: 'f1',
    },
  ],
};

/** Every remediation route, with a request that succeeds for a principal allowed to call it. */
const ROUTES = {
  webhook: { method: 'POST', url: '/api/v1/alertmanager', payload: webhookPayload },
  powercycle: { method: 'POST', url: '/api/v1/actions/powercycle', payload: { server_id: '100001' } },
  'firewall-state': {
    method: 'POST',
    url: '/api/v1/actions/firewall-state',
    payload: { server_id: '100001', ip: '198.18.0.1', state: 1 },
  },
  console: { method: 'GET', url: '/api/v1/servers/100001/console.jnlp' },
  journal: { method: 'GET', url: '/api/v1/actions' },
  circuit: { method: 'GET', url: '/api/v1/remediation/circuit' },
  'circuit-close': { method: 'POST', url: '/api/v1/remediation/circuit/close', payload: {} },
} as const;

for (const backend of backends()) {
  describe.skipIf(backend.skip)(`principals (${backend.name})`, () => {
    async function setup(principals: Principal[] = PRINCIPALS) {
      const db = await backend.fresh();
      const h = await engineHarness(
        { principals, rules: [rule({ alertname: 'BaremetalServerUnreachable', action: 'powercycle' })] },
        await db.open(),
      );
      const app = remediationApp(h);
      return { ...h, app };
    }

    it.each([
      {
        who: 'alertmanager',
        webhook: 200,
        powercycle: 403,
        'firewall-state': 403,
        console: 403,
        journal: 403,
        entry: 403,
        circuit: 403,
        'circuit-close': 403,
      },
      // An operator reads what it acts on (issue 51: one credential per person).
      {
        who: 'ops',
        webhook: 403,
        powercycle: 200,
        'firewall-state': 200,
        console: 200,
        journal: 200,
        entry: 200,
        circuit: 200,
        'circuit-close': 200,
      },
      {
        who: 'audit',
        webhook: 403,
        powercycle: 403,
        'firewall-state': 403,
        console: 403,
        journal: 200,
        entry: 200,
        circuit: 200,
        'circuit-close': 403,
      },
      // Bounded to account eu: it reads the journal and the breakers of eu only (none here), and the entry of
      // account default is a 403, as acting on it is.
      {
        who: 'eu-only',
        webhook: 403,
        powercycle: 403,
        'firewall-state': 403,
        console: 403,
        journal: 200,
        entry: 403,
        circuit: 200,
        'circuit-close': 403,
        outside: ['powercycle', 'firewall-state', 'console', 'entry', 'circuit-close'],
      },
      {
        who: 'eu-audit',
        webhook: 403,
        powercycle: 403,
        'firewall-state': 403,
        console: 403,
        journal: 200,
        entry: 403,
        circuit: 200,
        'circuit-close': 403,
        outside: ['entry'],
      },
    ] as const)('role × route: $who', async (row) => {
      const { app, journal, sim } = await setup();
      // A decision of account default, for the journal and its entry.
      const seeded = await journal.insert(
        journalRow({
          account: 'default',
          createdAt: Date.UTC(2026, 10, 21, 11),
          source: 'operator',
          action: 'poweroff',
          serverId: '100003',
          decision: 'executed',
          principal: 'ops',
          message: 'a decision of account default',
        }),
      );
      const routes = { ...ROUTES, entry: { method: 'GET', url: `/api/v1/actions/${seeded}` } } as const;
      const outside: readonly string[] = 'outside' in row ? row.outside : [];
      for (const [name, route] of Object.entries(routes) as Array<
        [keyof typeof routes, (typeof routes)[keyof typeof routes]]
      >) {
        const rowsBefore = (await journal.list({ limit: 100 })).length;
        const callsBefore = sim.calls.length;
        const res = await app.inject({ ...route, headers: bearer(row.who) } as InjectOptions);
        expect(res.statusCode, `${row.who} ${name}: ${res.body}`).toBe(row[name]);
        if (row[name] === 403) {
          const role =
            name === 'webhook'
              ? 'webhook'
              : name === 'journal' || name === 'circuit' || name === 'entry'
                ? 'reader or operator'
                : 'operator';
          expect(res.json()).toMatchObject({ code: 'BM_ERR_FORBIDDEN' });
          expect(res.json().message).toContain(
            outside.includes(name)
              ? `principal ${row.who} may not act on account default (its accounts: eu)`
              : `principal ${row.who} lacks the role ${role}`,
          );
          expect(res.body).not.toContain('a decision of account default');
          // Refused before anything is decided: no row, no upstream call.
          expect((await journal.list({ limit: 100 })).length).toBe(rowsBefore);
          expect(sim.calls.length).toBe(callsBefore);
        }
        // What a reader of the journal sees of account default: everything, or nothing when bounded to eu.
        if (name === 'journal' && res.statusCode === 200)
          expect(
            res.json().actions.some((a: { id: number }) => a.id === seeded),
            row.who,
          ).toBe(outside.length === 0);
        if (name === 'circuit' && res.statusCode === 200)
          expect(res.json().breakers.map((b: { account: string }) => b.account)).toEqual(
            outside.length === 0 ? ['default'] : [],
          );
      }
    });

    it('bounds an operator to its actions and accounts, before anything is journaled', async () => {
      const { app, journal, sim } = await setup();
      const cases = [
        {
          headers: basic('alice', PASSWORD),
          route: ROUTES.powercycle,
          message: 'principal alice may not ask for powercycle (its actions: firewall_state)',
        },
        {
          headers: basic('alice', PASSWORD),
          route: ROUTES.console,
          message: 'principal alice may not ask for console (its actions: firewall_state)',
        },
        {
          headers: bearer('eu-only'),
          route: ROUTES.powercycle,
          message: 'principal eu-only may not act on account default (its accounts: eu)',
        },
        {
          headers: bearer('eu-only'),
          route: ROUTES['circuit-close'],
          message: 'principal eu-only may not act on account default (its accounts: eu)',
        },
      ];
      for (const { headers, route, message } of cases) {
        const res = await app.inject({ ...route, headers } as InjectOptions);
        expect(res.statusCode).toBe(403);
        expect(res.json().message).toBe(message);
      }
      expect(await journal.list({ limit: 100 })).toEqual([]);
      expect(sim.calls).toEqual([]);
      // Within its bounds it acts.
      const allowed = await app.inject({ ...ROUTES['firewall-state'], headers: basic('alice', PASSWORD) });
      expect(allowed.statusCode).toBe(200);
      expect(allowed.json().decision).toBe('executed');
    });

    /** Two accounts over one journal: the harness's `default`, and `eu` with its own engine. */
    async function twoAccounts() {
      const h = await setup();
      const eu = new RemediationEngine({
        account: 'eu',
        store: h.journal,
        client: h.client,
        metrics: freshMetrics().metrics,
        logger: captureLogger().logger,
        targets: simulatorTargets(h.sim),
        config: h.config,
        now: () => h.clock.now,
        firewallPeriodMs: FIREWALL_PERIOD_MS,
      });
      onTestFinished(() => eu.stop());
      await eu.ready;
      const app = buildApp({
        logger: captureLogger().logger,
        exposition: new ExpositionCache({ registry: h.registry }),
        graphStores: new Map([['default', new GraphStore(tempDir(), 'default')]]),
        graphMaxWidth: 2000,
        remediation: {
          engines: new Map([
            ['default', h.engine],
            ['eu', eu],
          ]),
          store: h.journal,
          metrics: h.metrics,
          config: h.config,
        },
      });
      /** A row of `account`, as `decision`; its id. */
      const row = (account: string, decision: 'executed' | 'awaiting_approval', serverId = '100001') =>
        h.journal.insert(
          journalRow({
            account,
            createdAt: h.clock.now,
            source: 'operator',
            action: 'powercycle',
            serverId,
            decision,
            principal: 'ops',
            message: `${decision} in ${account}`,
            ...(decision === 'executed' ? { approver: 'bob' } : {}),
          }),
        );
      const get = (url: string, who: string) => app.inject({ url, headers: bearer(who) });
      return { ...h, app, row, get };
    }

    it("reads only its accounts' journal: the list leaves the others' rows out, and their entries are a 403", async () => {
      const { row, get } = await twoAccounts();
      const euOld = await row('eu', 'executed', '100001');
      const euNew = await row('eu', 'executed', '100002');
      const other = await row('default', 'executed', '100003');
      const ids = async (url: string, who: string) => {
        const res = await get(url, who);
        expect(res.statusCode, res.body).toBe(200);
        return res.json().actions.map((a: { id: number }) => a.id);
      };
      for (const who of ['eu-only', 'eu-audit']) {
        expect(await ids('/api/v1/actions', who)).toEqual([euNew, euOld]);
        // The newest of its accounts, though a newer row of another account exists.
        expect(await ids('/api/v1/actions?limit=1', who)).toEqual([euNew]);
        expect(await ids('/api/v1/actions?account=eu', who)).toEqual([euNew, euOld]);
        const asked = await get('/api/v1/actions?account=default', who);
        expect(asked.statusCode).toBe(403);
        expect(asked.json().message).toBe(`principal ${who} may not act on account default (its accounts: eu)`);
        expect((await get(`/api/v1/actions/${euNew}`, who)).json()).toMatchObject({ id: euNew, account: 'eu' });
        const entry = await get(`/api/v1/actions/${other}`, who);
        expect(entry.statusCode).toBe(403);
        expect(entry.json().message).toBe(`principal ${who} may not act on account default (its accounts: eu)`);
        expect(entry.body).not.toMatch(/executed|100003|powercycle/);
      }
      // Without `accounts`, every account.
      expect(await ids('/api/v1/actions', 'ops')).toEqual([other, euNew, euOld]);
      expect(await ids('/api/v1/actions?account=default', 'audit')).toEqual([other]);
    });

    it('tells an operator outside its accounts nothing of a settled row it tries to approve, deny or withdraw', async () => {
      const { app, row, sim } = await twoAccounts();
      const settled = await row('default', 'executed');
      const awaiting = await row('default', 'awaiting_approval', '100002');
      for (const id of [settled, awaiting])
        for (const verb of ['approve', 'deny', 'withdraw']) {
          const res = await app.inject({
            method: 'POST',
            url: `/api/v1/actions/${id}/${verb}`,
            headers: bearer('eu-only'),
            payload: {},
          });
          expect(res.statusCode, `${verb} ${id}: ${res.body}`).toBe(403);
          expect(res.json().message).toBe('principal eu-only may not act on account default (its accounts: eu)');
          expect(res.body).not.toMatch(/executed|bob|100001|100002|powercycle/);
        }
      // Within its account it is told what the row is (409).
      const own = await row('eu', 'executed');
      const conflict = await app.inject({
        method: 'POST',
        url: `/api/v1/actions/${own}/approve`,
        headers: bearer('eu-only'),
        payload: {},
      });
      expect(conflict.statusCode).toBe(409);
      expect(conflict.json().message).toContain(`journal entry ${own} is executed (by bob)`);
      expect(sim.calls).toEqual([]);
    });

    it('journals who asked and why, and filters the journal by principal', async () => {
      const { app, journal } = await setup();
      const asked = await app.inject({
        ...ROUTES.powercycle,
        headers: bearer('ops'),
        payload: { server_id: '100001', reason: 'hung since the kernel update, ticket OPS-4711' },
      });
      expect(asked.statusCode).toBe(200);
      expect((await app.inject({ ...ROUTES.webhook, headers: bearer('alertmanager') })).statusCode).toBe(200);
      await app.inject({ ...ROUTES.console, headers: bearer('ops') });
      const rows = await journal.list({ limit: 10 });
      expect(rows.map((r) => [r.source, r.action, r.principal, r.reason])).toEqual([
        ['operator', 'console', 'ops', null],
        ['alert', 'powercycle', 'alertmanager', null],
        ['operator', 'powercycle', 'ops', 'hung since the kernel update, ticket OPS-4711'],
      ]);
      const list = async (query: string) =>
        (await app.inject({ url: `/api/v1/actions${query}`, headers: bearer('audit') })).json();
      expect((await list('?principal=ops')).actions.map((a: { action: string }) => a.action)).toEqual([
        'console',
        'powercycle',
      ]);
      expect((await list('?principal=alertmanager')).actions).toMatchObject([
        { source: 'alert', principal: 'alertmanager', reason: null },
      ]);
      expect((await list('?principal=nobody')).actions).toEqual([]);
      expect((await list('')).actions[2]).toMatchObject({
        principal: 'ops',
        reason: 'hung since the kernel update, ticket OPS-4711',
      });
    });

    it.each([
      { name: 'a principal filter that is no name', url: '/api/v1/actions?principal=a%20b', field: 'principal' },
      { name: 'an empty principal filter', url: '/api/v1/actions?principal=', field: 'principal' },
    ])('refuses $name (400)', async ({ url, field }) => {
      const { app } = await setup();
      const res = await app.inject({ url, headers: bearer('audit') });
      expect(res.statusCode).toBe(400);
      expect(res.json().message).toContain(field);
    });

    it.each([
      { name: 'a reason over 200 characters', reason: 'x'.repeat(201) },
      { name: 'an empty reason', reason: '' },
      { name: 'a reason that is no string', reason: 42 },
    ])('refuses $name and journals nothing', async ({ reason }) => {
      const { app, journal, sim } = await setup();
      const res = await app.inject({
        ...ROUTES.powercycle,
        headers: bearer('ops'),
        payload: { server_id: '100001', reason },
      });
      expect(res.statusCode).toBe(400);
      expect(res.json().message).toContain('reason');
      expect(await journal.list({ limit: 10 })).toEqual([]);
      expect(sim.calls).toEqual([]);
    });

    it('journals a deferred firewall change under the principal that asked for it', async () => {
      const { app, journal, engine, clock } = await setup();
      const state = (value: number) => ({
        ...ROUTES['firewall-state'],
        headers: basic('alice', PASSWORD),
        payload: { server_id: '100001', ip: '198.18.0.1', state: value },
      });
      expect((await app.inject(state(1))).json().decision).toBe('executed');
      // Inside the API's 2-minute window: kept pending, sent later by the daemon itself.
      expect((await app.inject(state(0))).json().decision).toBe('deferred');
      clock.now += 3 * 60_000;
      await engine.tick();
      const [latest] = await journal.list({ limit: 1 });
      expect(latest).toMatchObject({ source: 'pending', decision: 'executed', value: '0', principal: 'alice' });
    });

    it('reads rows written before principals as principal null', async () => {
      const db = await backend.fresh();
      const before = `INSERT INTO actions (account, created_at, source, action, server_id, decision)
        VALUES ('default', 1, 'operator', 'poweroff', '100001', 'executed')`;
      if (backend.name === 'sqlite') {
        const path = join(tempDir(), 'journal.db');
        const old = new DatabaseSync(path);
        for (const migration of SQLITE_MIGRATIONS.slice(0, 3)) old.exec(migration);
        old.exec(`PRAGMA user_version = 3; ${before}`);
        old.close();
        db.open = async () => openTestStore(path);
      } else {
        const pool = openPool(db.url!, () => {});
        await migrate(pool, 'journal', POSTGRES_MIGRATIONS.journal.slice(0, 1));
        await pool.query(before);
        await pool.end();
      }
      const store = await db.open();
      try {
        expect(await store.list({ limit: 5 })).toMatchObject([{ action: 'poweroff', principal: null, reason: null }]);
      } finally {
        await store.close();
      }
    });

    it('keeps the deprecated shared credentials working: every role', async () => {
      const { app } = await setup([]);
      for (const route of Object.values(ROUTES)) {
        const res = await app.inject({ ...route, headers: { authorization: `Bearer ${TOKEN}` } } as InjectOptions);
        expect(res.statusCode, route.url).toBe(200);
      }
    });
  });
}

describe('principals in the configuration file', () => {
  it('warns once at start that the shared credentials are deprecated, and names their principals', async () => {
    const h = await startHarness({ remediationAuth: true, config: { remediation: POWERCYCLE_REMEDIATION } });
    const warnings = h.log.lines.filter((l) => l.includes('deprecated'));
    expect(warnings).toHaveLength(1);
    expect(JSON.parse(warnings[0]!)).toMatchObject({ level: 'warn', principals: ['token-1'] });
    expect(warnings[0]).not.toContain(TOKEN);
    const res = await h.daemon.app.inject({ url: '/api/v1/actions', headers: { authorization: `Bearer ${TOKEN}` } });
    expect(res.statusCode).toBe(200);
  });

  it('loads principals from the file, and does not warn', async () => {
    const h = await startHarness({
      config: ({ stateDir }) => {
        const file = `${stateDir}/am-token`;
        writeFileSync(file, token('alertmanager'));
        return {
          remediation: {
            auth: { principals: [{ name: 'alertmanager', bearer_token_file: file, roles: ['webhook'] }] },
          },
        };
      },
    });
    expect(h.log.lines.filter((l) => l.includes('deprecated'))).toEqual([]);
    const journal = await h.daemon.app.inject({ url: '/api/v1/actions', headers: bearer('alertmanager') });
    expect(journal.statusCode).toBe(403);
    expect(journal.json().message).toBe(
      'principal alertmanager lacks the role reader or operator (GET /api/v1/actions)',
    );
    const webhook = await h.daemon.app.inject({
      method: 'POST',
      url: '/api/v1/alertmanager',
      headers: bearer('alertmanager'),
      payload: webhookPayload,
    });
    expect(webhook.statusCode).toBe(200);
  });
});

/**
 * One identity per person (issue 51): behind web.auth, an operator's (or reader's) own credential reads the
 * status page with its details, /metrics and the breaker's state; web.auth's credential, Prometheus's scrape
 * credential, reads /metrics and the page's counts and nothing else; Alertmanager's webhook credential is not let in.
 */
describe('one identity per person', () => {
  const SCRAPE = 'scrape-token-0123456789abcdef';
  async function setup() {
    const h = await engineHarness({ principals: PRINCIPALS });
    const asked: boolean[] = [];
    const options: StatusViewOptions[] = [];
    const reloads: number[] = [];
    const app = buildApp({
      logger: captureLogger().logger,
      exposition: new ExpositionCache({ registry: h.registry }),
      graphStores: new Map([['default', new GraphStore(tempDir(), 'default')]]),
      graphMaxWidth: 2000,
      webAuth: { bearerTokens: [SCRAPE], basicAuthUsers: {} },
      statusView: async (given) => {
        asked.push(given.actions);
        options.push(given);
        return statusView(given.actions);
      },
      // --web.enable-lifecycle
      reload: async () => {
        reloads.push(h.clock.now);
        return { ok: true, needsRestart: [] };
      },
      remediation: {
        engines: new Map([['default', h.engine]]),
        store: h.journal,
        metrics: h.metrics,
        config: h.config,
      },
    });
    return { ...h, app, asked, options, reloads };
  }
  /** A status view with one decision when `actions`, as status-view.ts builds it for the page. */
  const statusView = (actions: boolean): StatusView => ({
    version: '1.2.3',
    apiUp: 1,
    polls: [],
    servers: [],
    services: [],
    graphs: [],
    now: Date.UTC(2026, 10, 21, 12),
    actions: actions
      ? ([
          {
            createdAt: Date.UTC(2026, 10, 21, 12),
            source: 'operator',
            principal: 'ops',
            action: 'powercycle',
            value: null,
            serverId: '100001',
            ip: null,
            decision: 'executed',
            message: 'a decision only a person may read',
            reason: null,
          },
        ] as unknown as JournalEntry[])
      : undefined,
  });

  it('an operator reads the status page with its details, /metrics and the breaker', async () => {
    const { app, asked } = await setup();
    for (const who of ['ops', 'audit']) {
      const page = await app.inject({ url: '/', headers: bearer(who) });
      expect(page.statusCode).toBe(200);
      expect(page.body).toContain('a decision only a person may read');
      expect((await app.inject({ url: '/metrics', headers: bearer(who) })).statusCode).toBe(200);
      const circuit = await app.inject({ url: '/api/v1/remediation/circuit', headers: bearer(who) });
      expect(circuit.statusCode).toBe(200);
    }
    // By basic auth too (alice, an operator with a password).
    expect((await app.inject({ url: '/', headers: basic('alice', PASSWORD) })).body).toContain(
      'a decision only a person may read',
    );
    expect(asked).toEqual([true, true, true]);
  });

  it("gives the status page the viewer's accounts: its details are of those accounts only", async () => {
    const { app, options } = await setup();
    for (const who of ['eu-only', 'eu-audit', 'ops']) {
      expect((await app.inject({ url: '/', headers: bearer(who) })).statusCode).toBe(200);
    }
    expect((await app.inject({ url: '/', headers: basic('alice', PASSWORD) })).statusCode).toBe(200);
    expect(options).toEqual([
      { actions: true, accounts: ['eu'] },
      { actions: true, accounts: ['eu'] },
      { actions: true },
      { actions: true, accounts: ['default'] },
    ]);
  });

  it("reloads the configuration for web.auth's own credential only, not a reader's or an operator's", async () => {
    const { app, reloads } = await setup();
    const reload = (headers: Record<string, string>) => app.inject({ method: 'POST', url: '/-/reload', headers });
    // A person's credential, the deprecated shared token (every role), none.
    const refused = [bearer('ops'), bearer('audit'), bearer('eu-only'), basic('alice', PASSWORD)];
    for (const headers of [...refused, { authorization: `Bearer ${TOKEN}` }, {}]) {
      const res = await reload(headers);
      expect(res.statusCode, `${JSON.stringify(headers)}: ${res.body}`).toBe(401);
      expect(res.json()).toMatchObject({ code: 'BM_ERR_UNAUTHORIZED' });
    }
    // The same credentials still read.
    for (const headers of refused) expect((await app.inject({ url: '/metrics', headers })).statusCode).toBe(200);
    expect(reloads).toEqual([]);
    const done = await reload({ authorization: `Bearer ${SCRAPE}` });
    expect(done.statusCode).toBe(200);
    expect(done.json()).toEqual({ status: 'success', needs_restart: [] });
    expect(reloads).toHaveLength(1);
  });

  it("reads the breaker's state from the store the moment it opens, not a gauge refreshed later", async () => {
    const { app, journal } = await setup();
    const read = async () =>
      (await app.inject({ url: '/api/v1/remediation/circuit?account=default', headers: bearer('ops') })).json();
    expect(await read()).toEqual({
      breakers: [{ account: 'default', open: false, openedAt: null, closedAt: null, message: null }],
    });
    await journal.openCircuit('default', Date.UTC(2026, 10, 21, 12, 5), '3 servers power-cycled within 1h');
    expect(await read()).toEqual({
      breakers: [
        {
          account: 'default',
          open: true,
          openedAt: '2026-11-21T12:05:00.000Z',
          closedAt: null,
          message: '3 servers power-cycled within 1h',
        },
      ],
    });
    // Outside its accounts: 403; an unknown account: 400; an operator of another account sees none of this one.
    const other = await app.inject({ url: '/api/v1/remediation/circuit?account=default', headers: bearer('eu-only') });
    expect(other.statusCode).toBe(403);
    expect((await app.inject({ url: '/api/v1/remediation/circuit', headers: bearer('eu-only') })).json()).toEqual({
      breakers: [],
    });
    const unknown = await app.inject({ url: '/api/v1/remediation/circuit?account=nope', headers: bearer('ops') });
    expect(unknown.statusCode).toBe(400);
  });

  it('the scrape credential reads /metrics and the counts, and can do nothing else', async () => {
    const { app, asked, journal, sim } = await setup();
    const headers = { authorization: `Bearer ${SCRAPE}` };
    expect((await app.inject({ url: '/metrics', headers })).statusCode).toBe(200);
    const page = await app.inject({ url: '/', headers });
    expect(page.statusCode).toBe(200);
    expect(page.body).not.toContain('a decision only a person may read');
    expect(asked).toEqual([false]);
    for (const route of Object.values(ROUTES)) {
      const res = await app.inject({ ...route, headers } as InjectOptions);
      expect(res.statusCode, `${route.method} ${route.url}`).toBe(401);
    }
    expect(await journal.list({ limit: 10 })).toEqual([]);
    expect(sim.calls).toEqual([]);
  });

  it("Alertmanager's webhook credential is not let into the read-only routes", async () => {
    const { app, asked } = await setup();
    expect((await app.inject({ url: '/', headers: bearer('alertmanager') })).statusCode).toBe(401);
    expect((await app.inject({ url: '/metrics', headers: bearer('alertmanager') })).statusCode).toBe(401);
    expect(asked).toEqual([]);
  });
});
