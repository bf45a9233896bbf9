/**
 * Series as a function of state (issue 52), as a property: random histories of what happens to the accounts'
 * state — server lists with servers added, changed and removed, firewall histories read and failed, graph
 * images fetched, catalog reads, colocation ids changed by a reload, the scope changed, polls switched off and
 * on, the accounts this replica renders changed, desired firewall state rows recorded, cancelled and retired — are
 * rendered by the real exposition cache after every step
 * (so that a family's reused bytes are checked too), and each rendering's series must be exactly those that
 * the final state alone says, family by family. The expected set is computed here from the state's own
 * readers (`services()`, the inventory, the graph store's list), not from collectors/families.ts; which
 * services and catalog counts have series at all is modelled here, from the steps (`Model`): a poll switched
 * off forgets what it read, so switched on again it exposes only what it has read since.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { Registry } from 'prom-client';
import { afterAll, describe, expect, it } from 'vitest';
import { AccountState } from '../../../src/collectors/account-state.js';
import { bindStateFamilies } from '../../../src/collectors/families.js';
import {
  collectFirewallFailure,
  collectFirewallHistory,
  FirewallSeriesState,
} from '../../../src/collectors/firewall.js';
import { memoryBytes } from '../../../src/collectors/inventory.js';
import { DEFAULT_SCHEDULES } from '../../../src/config/schema.js';
import type { ServerScope } from '../../../src/config/scope.js';
import type { Config } from '../../../src/config/types.js';
import { GraphStore } from '../../../src/graphs/store.js';
import { DesiredRows } from '../../../src/remediation/desired-rows.js';
import {
  createMetrics,
  exposeAccountFromZero,
  leaderOnlyNames,
  type Metrics,
} from '../../../src/metrics/definitions.js';
import { ExpositionCache } from '../../../src/metrics/exposition-cache.js';
import { catalogPoll } from '../../../src/polls/catalog.js';
import { firewallPoll } from '../../../src/polls/firewall.js';
import { graphsPoll } from '../../../src/polls/graphs.js';
import type { PollContext } from '../../../src/polls/poll.js';
import { applyScope } from '../../../src/polls/servers.js';
import { decodeServerList } from '../../../src/upstream/decode-servers.js';

const ACCOUNTS = ['a', 'b'] as const;
const SERVER_IDS = ['1', '2', '3', '4'];
const IPS = ['192.0.2.1', '192.0.2.2', '192.0.2.3', '198.51.100.9'];
const LIMITS = { maxIpsPerService: 3, ipRetentionMs: 10_000 };
const PNG = { png: Buffer.from('not decoded here'), width: 1, height: 1 };
const dirs: string[] = [];
afterAll(() => {
  for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
});

/** What can happen to an account between two renderings. */
type Step =
  | {
      kind: 'servers';
      account: number;
      servers: Array<{ id: string; status: string; memory: string; cancellation: string | null; ips: number }>;
    }
  | { kind: 'history'; account: number; service: number; events: Array<{ id: string; ip: string }> }
  | { kind: 'failure'; account: number; service: number }
  | { kind: 'graph'; account: number; server: number; scale: 'day' | 'week' }
  | { kind: 'catalog'; account: number; systems: number; locations: number }
  | { kind: 'colocations'; account: number; ids: string[] }
  | { kind: 'scope'; account: number; exclude: string[] }
  | { kind: 'switch'; poll: 'firewall' | 'graphs' | 'catalog'; on: boolean }
  | { kind: 'led'; led: number[] | undefined }
  | {
      kind: 'desired';
      account: number;
      rows: Array<{ server: string; ip: string; state: '0' | '1'; pending: boolean; applied: boolean }>;
    }
  | { kind: 'clock'; ms: number };

const account = fc.integer({ min: 0, max: ACCOUNTS.length - 1 });
const STEP: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    kind: fc.constant('servers' as const),
    account,
    servers: fc.uniqueArray(
      fc.record({
        id: fc.constantFrom(...SERVER_IDS),
        status: fc.constantFrom('online', 'offline', 'say "hi"\\'),
        memory: fc.constantFrom('64 GB', 'n/a', ''),
        cancellation: fc.constantFrom(null, 'end', 'immediate'),
        ips: fc.integer({ min: 0, max: 3 }),
      }),
      { selector: (s) => s.id, maxLength: 4 },
    ),
  }),
  fc.record({
    kind: fc.constant('history' as const),
    account,
    service: fc.integer({ min: 0, max: 6 }),
    events: fc.array(
      fc.record({ id: fc.constantFrom('e1', 'e2', 'e3', 'e4', 'e5'), ip: fc.constantFrom(...IPS, 'not-an-ip') }),
      { maxLength: 6 },
    ),
  }),
  fc.record({ kind: fc.constant('failure' as const), account, service: fc.integer({ min: 0, max: 6 }) }),
  fc.record({
    kind: fc.constant('graph' as const),
    account,
    server: fc.integer({ min: 0, max: 3 }),
    scale: fc.constantFrom('day' as const, 'week' as const),
  }),
  fc.record({
    kind: fc.constant('catalog' as const),
    account,
    systems: fc.nat({ max: 9 }),
    locations: fc.nat({ max: 9 }),
  }),
  fc.record({
    kind: fc.constant('colocations' as const),
    account,
    ids: fc.subarray(['c1', 'c2']),
  }),
  fc.record({ kind: fc.constant('scope' as const), account, exclude: fc.subarray(SERVER_IDS) }),
  fc.record({
    kind: fc.constant('switch' as const),
    poll: fc.constantFrom('firewall' as const, 'graphs' as const, 'catalog' as const),
    on: fc.boolean(),
  }),
  fc.record({
    kind: fc.constant('led' as const),
    led: fc.option(fc.subarray([0, 1]), { nil: undefined }),
  }),
  fc.record({ kind: fc.constant('clock' as const), ms: fc.integer({ min: 1, max: 20_000 }) }),
  fc.record({
    kind: fc.constant('desired' as const),
    account,
    rows: fc.uniqueArray(
      fc.record({
        server: fc.constantFrom(...SERVER_IDS),
        ip: fc.constantFrom(...IPS),
        state: fc.constantFrom('0' as const, '1' as const),
        pending: fc.boolean(),
        applied: fc.boolean(),
      }),
      { selector: (r) => `${r.server}/${r.ip}`, maxLength: 4 },
    ),
  }),
);

/** The services a history step reads: a listed server, a configured colocation or transit id, or one that is neither. */
const SERVICES = [
  ...SERVER_IDS.map((serviceId) => ({ serviceType: 'dedicated' as const, serviceId })),
  { serviceType: 'colocation' as const, serviceId: 'c1' },
  { serviceType: 'colocation' as const, serviceId: 'c2' },
  { serviceType: 'transit' as const, serviceId: 't1' },
];

/**
 * What the steps say was read since the poll was last switched on, kept apart from the state: the firewall
 * services read or failed (by `type/id`), whether a firewall run set the oldest read's age, the catalog counts.
 */
interface Model {
  read: Set<string>;
  failed: Set<string>;
  oldestSet: boolean;
  catalog: { systems: number; locations: number };
}
const model = (): Model => ({
  read: new Set(),
  failed: new Set(),
  oldestSet: false,
  catalog: { systems: 0, locations: 0 },
});

/** The daemon's accounts as the property drives them: state, graph store, config, poll context. */
function world() {
  const registry = new Registry();
  const metrics = createMetrics(registry);
  const collectors: Config['collectors'] = { firewall: true, graphs: true, catalog: true };
  const clock = { ms: 1_000_000 };
  const accounts = ACCOUNTS.map((name) => {
    const dir = mkdtempSync(join(tmpdir(), 'families-property-'));
    dirs.push(dir);
    const services = { colocationIds: ['c1'], transitIds: ['t1'] };
    const scope: ServerScope = { include: [], exclude: [] };
    const schedules = { ...DEFAULT_SCHEDULES, firewall_under_attack: DEFAULT_SCHEDULES.firewall };
    const state = new AccountState({ schedules, services, collectors }, () => clock.ms);
    const graphs = new GraphStore(dir, name);
    exposeAccountFromZero(metrics, name);
    const context = {
      account: name,
      metrics,
      graphStore: graphs,
      state,
      config: { scope, schedules, collectors, graphs: { types: ['port_bits'], scales: ['day'] } },
      client: { budget: undefined, concurrency: 1 },
      now: () => clock.ms,
    } as unknown as PollContext;
    // The store's desired firewall state rows as the engine reads them back (remediation/desired-rows.ts).
    const desired = new DesiredRows();
    /** the rows the store holds now, as the last `desired` step left them (the test's own record) */
    const stored: Array<Extract<Step, { kind: 'desired' }>['rows'][number]> = [];
    return { name, state, graphs, desired, stored, services, scope, context, model: model() };
  });
  bindStateFamilies(metrics, () => accounts);
  const led: { accounts: ReadonlySet<string> | undefined } = { accounts: undefined };
  const cache = new ExpositionCache({
    registry,
    now: () => clock.ms,
    accountSeries: { names: leaderOnlyNames(metrics), led: () => led.accounts },
  });
  return { metrics, accounts, collectors, clock, led, cache };
}
type World = ReturnType<typeof world>;

async function apply(w: World, step: Step): Promise<void> {
  const a = 'account' in step ? w.accounts[step.account]! : undefined;
  switch (step.kind) {
    case 'servers': {
      const records = step.servers.map((s) => ({
        server_id: s.id,
        status: s.status,
        memory: s.memory,
        cancellation: s.cancellation,
        ips: IPS.slice(0, s.ips),
      }));
      a!.state.listed = decodeServerList(records, { operation: 'list_servers', path: '/api/v1/dedicated' });
      await applyScope(a!.context);
      return;
    }
    case 'history': {
      const ref = SERVICES[step.service]!;
      // As the firewall poll: switched off, it reads nothing; a server no longer listed gets no series back.
      if (!w.collectors.firewall) return;
      if (ref.serviceType === 'dedicated' && !a!.state.inventory.has(ref.serviceId)) return;
      a!.model.read.add(FirewallSeriesState.key(ref));
      a!.model.oldestSet = true;
      const events = step.events.map((e) => ({ ...e, raw: '', fields: {} }));
      const knownIps = ref.serviceType === 'dedicated' ? (a!.state.inventory.get(ref.serviceId)?.ips ?? []) : [];
      collectFirewallHistory(a!.state.firewallState, a!.context, ref, events, {
        limits: LIMITS,
        now: w.clock.ms,
        knownIps,
      });
      a!.state.attacks.record(ref, events, w.clock.ms);
      a!.state.oldestReadAgeSeconds = (a!.state.oldestRead()?.ageMs ?? 0) / 1000;
      return;
    }
    case 'failure': {
      const ref = SERVICES[step.service]!;
      if (!w.collectors.firewall) return;
      if (ref.serviceType === 'dedicated' && !a!.state.inventory.has(ref.serviceId)) return;
      a!.model.failed.add(FirewallSeriesState.key(ref));
      collectFirewallFailure(a!.state.firewallState, ref, w.clock.ms);
      return;
    }
    case 'graph': {
      const serverId = SERVER_IDS[step.server]!;
      // Also for a server not listed (any more): what a put in flight when its server was removed could leave.
      if (!w.collectors.graphs) return;
      await a!.graphs.put({ serverId, type: 'port_bits', scale: step.scale }, PNG, w.clock.ms);
      return;
    }
    case 'catalog':
      if (!w.collectors.catalog) return;
      a!.model.catalog = { systems: step.systems, locations: step.locations };
      a!.state.catalog.operatingSystems = step.systems;
      a!.state.catalog.locations = step.locations;
      return;
    case 'colocations':
      // A reload: the services object is assigned the new config's lists (daemon/reload.ts).
      Object.assign(a!.services, { colocationIds: step.ids });
      return;
    case 'scope':
      // A reload that changes the scope applies it to the latest list at once (daemon/reload.ts).
      a!.scope.exclude = step.exclude.map((id) => ({ id }));
      await applyScope(a!.context);
      return;
    case 'switch':
      w.collectors[step.poll] = step.on;
      if (step.on) return;
      // A reload's `dropSwitchedOff` (scheduler/jobs.ts): each poll's hook, for every account.
      for (const x of w.accounts) {
        await { firewall: firewallPoll, graphs: graphsPoll, catalog: catalogPoll }[step.poll].switchedOff?.(x.context);
        // The rule, in the model: nothing read before the switch.
        if (step.poll === 'firewall') Object.assign(x.model, { read: new Set(), failed: new Set(), oldestSet: false });
        if (step.poll === 'catalog') x.model.catalog = { systems: 0, locations: 0 };
      }
      return;
    case 'led':
      w.led.accounts = step.led && new Set(step.led.map((i) => ACCOUNTS[i]!));
      return;
    case 'clock':
      w.clock.ms += step.ms;
      return;
    case 'desired':
      // What the store holds after a decision, an applied or cancelled change, or a retirement.
      a!.stored.splice(0, a!.stored.length, ...step.rows);
      a!.desired.replace(
        step.rows.map((r) => ({
          account: a!.name,
          serverId: r.server,
          ip: r.ip,
          desiredState: r.state,
          dueAt: 0,
          pending: r.pending,
          attempts: 0,
          appliedState: r.applied ? r.state : null,
          appliedAt: r.applied ? 0 : null,
          cooldownMs: 0,
          principal: null,
        })),
      );
      return;
  }
}

/** The names of the families rendered from state, as the exposition names them. */
const FAMILY_NAMES = (metrics: Metrics) =>
  new Set(Object.values(metrics).flatMap((m) => ('bind' in m ? [(m as { name: string }).name] : [])));

/** The series a rendering exposes of the families rendered from state: `name{labels} value` lines. */
function exposed(text: string, names: Set<string>): string[] {
  return text
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('#') && names.has(line.replace(/[{ ].*$/, '')))
    .sort();
}

const q = (value: string) => value.replace(/\\/g, '\\\\').replace(/\n/g, '\\n').replace(/"/g, '\\"');
const line = (name: string, labels: Record<string, string>, value: number) =>
  `${name}{${Object.entries(labels)
    .map(([k, v]) => `${k}="${q(v)}"`)
    .join(',')}} ${value}`;

/** The series the state says now, from the state alone. */
async function expected(w: World): Promise<string[]> {
  const lines: string[] = [];
  for (const { name: account, state, graphs, stored, model: read } of w.accounts) {
    if (w.led.accounts && !w.led.accounts.has(account)) continue;
    // Leader-only, as every family here: only the leader re-reads the rows (remediation/gauges.ts). A row shows
    // while its change is pending or once a state was applied to the IP; a change cancelled before anything
    // was applied (not pending, nothing applied) wants nothing of the IP any more: no series.
    for (const row of stored)
      if (row.pending || row.applied)
        lines.push(
          line('baremetal_firewall_desired_state', { account, server_id: row.server, ip: row.ip }, Number(row.state)),
        );
    for (const s of state.inventory.values()) {
      const { serverId: server_id, hostname, ip, os, processor, memory, location, status } = s;
      lines.push(
        line('baremetal_server_info', { account, server_id, hostname, ip, os, processor, memory, location, status }, 1),
      );
      lines.push(line('baremetal_server_ips', { account, server_id }, s.ips.length));
      const bytes = memoryBytes(s.memory);
      if (bytes !== undefined) lines.push(line('baremetal_server_memory_bytes', { account, server_id }, bytes));
      if (s.cancellation)
        lines.push(
          line('baremetal_server_cancellation_scheduled', { account, server_id, cancellation_type: s.cancellation }, 1),
        );
    }
    if (w.collectors.firewall) {
      for (const ref of state.services()) {
        const key = FirewallSeriesState.key(ref);
        const service = { account, service_type: ref.serviceType, service_id: ref.serviceId };
        // Series of a service only once read since the switch (or start); its values from the state.
        const series = read.read.has(key) ? state.firewallState.services.get(key) : undefined;
        if (!series) {
          if (read.failed.has(key) && state.firewallState.failedBeforeRead.has(key))
            lines.push(line('baremetal_firewall_history_up', service, 0));
          continue;
        }
        lines.push(line('baremetal_firewall_history_up', service, series.up ? 1 : 0));
        lines.push(line('baremetal_firewall_history_last_success_timestamp_seconds', service, series.readAt / 1000));
        for (const [ip, count] of series.counts) {
          lines.push(line('baremetal_firewall_attack_events_last_hour', { ...service, ip }, count));
          lines.push(line('baremetal_firewall_attack_events_total', { ...service, ip }, series.totals.get(ip) ?? 0));
        }
      }
      if (read.oldestSet)
        lines.push(
          line('baremetal_firewall_history_oldest_read_age_seconds', { account }, state.oldestReadAgeSeconds!),
        );
    }
    // Only listed servers' images: one the store still held for a server gone would be a leak, not state.
    if (w.collectors.graphs)
      for (const g of graphs.list().filter((g) => state.inventory.has(g.serverId)))
        lines.push(
          line(
            'baremetal_graph_last_success_timestamp_seconds',
            { account, server_id: g.serverId, graph: g.type, scale: g.scale },
            g.updatedAt / 1000,
          ),
        );
    if (w.collectors.catalog) {
      lines.push(line('baremetal_catalog_operating_systems', { account }, read.catalog.systems));
      lines.push(line('baremetal_catalog_locations', { account }, read.catalog.locations));
    }
  }
  return lines.sort();
}

describe('series as a function of state', () => {
  it('every rendering of a random history exposes exactly the series of the state at that point, every family', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(STEP, { minLength: 1, maxLength: 40, size: 'max' }), async (steps) => {
        const w = world();
        const names = FAMILY_NAMES(w.metrics);
        for (const step of steps) {
          await apply(w, step);
          const text = (await w.cache.render()).bytes('text').toString();
          expect(exposed(text, names)).toEqual(await expected(w));
        }
      }),
      { numRuns: 150 },
    );
  });

  it('a poll switched off and on again renders nothing it read before, until it reads again', async () => {
    const w = world();
    const names = FAMILY_NAMES(w.metrics);
    const render = async () => exposed((await w.cache.render()).bytes('text').toString(), names);
    const steps: Step[] = [
      { kind: 'servers', account: 0, servers: [{ id: '1', status: 'online', memory: '', cancellation: null, ips: 1 }] },
      { kind: 'history', account: 0, service: 0, events: [{ id: 'e1', ip: IPS[0]! }] },
      { kind: 'history', account: 0, service: 4, events: [{ id: 'e2', ip: IPS[1]! }] },
      { kind: 'failure', account: 0, service: 6 },
      { kind: 'catalog', account: 0, systems: 7, locations: 3 },
    ];
    for (const step of steps) await apply(w, step);
    const before = await render();
    expect(before).toContain(
      'baremetal_firewall_attack_events_last_hour{account="a",service_type="colocation",service_id="c1",ip="192.0.2.2"} 1',
    );
    expect(before).toContain('baremetal_catalog_operating_systems{account="a"} 7');
    for (const poll of ['firewall', 'catalog'] as const) await apply(w, { kind: 'switch', poll, on: false });
    await render();
    // A week later a reload switches them on again: the next rendering comes before any run.
    await apply(w, { kind: 'clock', ms: 7 * 24 * 3600_000 });
    for (const poll of ['firewall', 'catalog'] as const) await apply(w, { kind: 'switch', poll, on: true });
    const after = await render();
    expect(after.filter((l) => /^baremetal_(firewall_(attack|history)|catalog)/.test(l))).toEqual([
      'baremetal_catalog_locations{account="a"} 0',
      'baremetal_catalog_locations{account="b"} 0',
      'baremetal_catalog_operating_systems{account="a"} 0',
      'baremetal_catalog_operating_systems{account="b"} 0',
    ]);
    expect(after).toEqual(await expected(w));
    // Read again: the attack counter is a new series, counting from 0 (docs/metrics-counters.md).
    await apply(w, { kind: 'history', account: 0, service: 4, events: [{ id: 'e2', ip: IPS[1]! }] });
    const again = await render();
    expect(again).toContain(
      'baremetal_firewall_attack_events_total{account="a",service_type="colocation",service_id="c1",ip="192.0.2.2"} 0',
    );
    expect(again).toEqual(await expected(w));
  });

  it('names every family rendered from state', () => {
    // The property above covers the families it knows: a new family must be added to `expected` too.
    expect([...FAMILY_NAMES(world().metrics)].sort()).toEqual([
      'baremetal_catalog_locations',
      'baremetal_catalog_operating_systems',
      'baremetal_firewall_attack_events_last_hour',
      'baremetal_firewall_attack_events_total',
      'baremetal_firewall_desired_state',
      'baremetal_firewall_history_last_success_timestamp_seconds',
      'baremetal_firewall_history_oldest_read_age_seconds',
      'baremetal_firewall_history_up',
      'baremetal_graph_last_success_timestamp_seconds',
      'baremetal_server_cancellation_scheduled',
      'baremetal_server_info',
      'baremetal_server_ips',
      'baremetal_server_memory_bytes',
    ]);
  });
});
