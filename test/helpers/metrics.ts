import { Registry } from 'prom-client';
import { AccountState } from '../../src/collectors/account-state.js';
import { bindStateFamilies, type FamilyAccount } from '../../src/collectors/families.js';
import type { FirewallSeriesState } from '../../src/collectors/firewall.js';
import { DEFAULT_SCHEDULES } from '../../src/config/schema.js';
import { createMetrics, exposeAccountFromZero, type Metrics } from '../../src/metrics/definitions.js';
import { decodeServerList } from '../../src/upstream/decode-servers.js';

/**
 * Fresh metrics on a fresh registry (never the global one), with the account `default`'s series exposed from
 * zero as the daemon's are (daemon/accounts.ts): a test's calls name `account: 'default'`.
 */
export function freshMetrics(): { registry: Registry; metrics: Metrics } {
  const registry = new Registry();
  const metrics = createMetrics(registry);
  exposeAccountFromZero(metrics, 'default');
  return { registry, metrics };
}

/** Value of one series, or undefined when the series does not exist. */
export async function seriesValue(
  registry: Registry,
  name: string,
  labels: Record<string, string> = {},
): Promise<number | undefined> {
  const metric = registry.getSingleMetric(name);
  if (!metric) throw new Error(`no metric ${name}`);
  const { values } = await metric.get();
  const found = values.find(
    (v) =>
      Object.entries(labels).every(([k, l]) => String((v.labels as Record<string, unknown>)[k]) === l) &&
      Object.keys(v.labels).length >= Object.keys(labels).length,
  );
  return found?.value;
}

/** Label sets of every series of a metric. */
export async function seriesOf(registry: Registry, name: string): Promise<Array<Record<string, string | number>>> {
  const { values } = await registry.getSingleMetric(name)!.get();
  // The account label is the same on every series of a test's account (`default`): left out for brevity.
  return values.map(({ labels: { account: _account, ...rest } }) => rest as Record<string, string | number>);
}

/**
 * An account as the families rendered from state read it (collectors/families.ts): its inventory holds the
 * dedicated servers `servers` (ids), its config the colocation id `c1` and transit id `t1`, no graph image.
 */
export function stateAccount(name = 'default', servers: string[] = ['1']): FamilyAccount {
  const state = new AccountState({
    schedules: { ...DEFAULT_SCHEDULES, firewall_under_attack: DEFAULT_SCHEDULES.firewall },
    services: { colocationIds: ['c1'], transitIds: ['t1'] },
  });
  state.inventory = new Map(
    decodeServerList(
      servers.map((server_id) => ({ server_id })),
      { operation: 'list_servers', path: '/api/v1/dedicated' },
    ).servers.map((s) => [s.serverId, s]),
  );
  return { name, state, graphs: { changes: 0, fetched: () => [] } };
}

/**
 * Fresh metrics whose families rendered from state read one account `default` (stateAccount): `state` is its
 * firewall state, `account` the whole of it.
 */
export function stateMetrics(servers: string[] = ['1']): {
  registry: Registry;
  metrics: Metrics;
  account: AccountState;
  state: FirewallSeriesState;
} {
  const { registry, metrics } = freshMetrics();
  const account = stateAccount('default', servers);
  bindStateFamilies(metrics, () => [account]);
  return { registry, metrics, account: account.state, state: account.state.firewallState };
}
