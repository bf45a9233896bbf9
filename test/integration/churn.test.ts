/**
 * Churn (issue 32): servers leave and arrive, an IP moves between servers, attacks end, and the firewall's IP
 * retention passes on a fake clock. Afterwards the exposition holds exactly the per-server, per-service and
 * per-IP series the current inventory implies — no more, no fewer, none twice — and neither the graph store nor
 * the state directory (graph files, the attack event-id ledger) holds anything of a server that is gone.
 * Counts and label sets only: the clock is injected into the simulator and the daemon, nothing sleeps.
 */
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { accountOf, type Harness, startHarness } from '../helpers/daemon.js';

const HOUR = 3_600_000;
let now = Date.UTC(2026, 10, 25, 12, 0, 0);
const clock = () => now;

/** Each family whose series grow with the inventory, and the labels that tell its series apart. */
const FAMILIES: Record<string, string[]> = {
  baremetal_server_info: ['server_id'],
  baremetal_server_ips: ['server_id'],
  baremetal_server_memory_bytes: ['server_id'],
  baremetal_server_cancellation_scheduled: ['server_id', 'cancellation_type'],
  baremetal_firewall_attack_events_last_hour: ['service_type', 'service_id', 'ip'],
  baremetal_firewall_attack_events_total: ['service_type', 'service_id', 'ip'],
  baremetal_firewall_history_up: ['service_type', 'service_id'],
  baremetal_firewall_history_last_success_timestamp_seconds: ['service_type', 'service_id'],
  baremetal_graph_last_success_timestamp_seconds: ['server_id', 'graph', 'scale'],
};

/** family → the sorted identities of its series in the exposition text (duplicates kept). */
function seriesIn(exposition: string): Record<string, string[]> {
  const out: Record<string, string[]> = Object.fromEntries(Object.keys(FAMILIES).map((name) => [name, []]));
  for (const line of exposition.split('\n')) {
    const match = /^(\w+)\{([^}]*)\} /.exec(line);
    const keys = match && FAMILIES[match[1]!];
    if (!keys) continue;
    const labels = Object.fromEntries([...match[2]!.matchAll(/(\w+)="([^"]*)"/g)].map((m) => [m[1]!, m[2]!]));
    out[match[1]!]!.push(keys.map((key) => labels[key] ?? '').join('/'));
  }
  for (const ids of Object.values(out)) ids.sort();
  return out;
}

let h: Harness;

/** What the simulator's current inventory implies, family by family (see FAMILIES). */
function implied(): Record<string, string[]> {
  const servers = [...h.sim.state.servers.values()];
  const ids = servers.map((s) => s.serverId);
  const ipSeries = servers.flatMap((s) => s.ips.map((ip) => `dedicated/${s.serverId}/${ip}`));
  const services = [...ids.map((id) => `dedicated/${id}`), 'colocation/colo-1'];
  const out: Record<string, string[]> = {
    baremetal_server_info: ids,
    baremetal_server_ips: ids,
    baremetal_server_memory_bytes: ids,
    baremetal_server_cancellation_scheduled: servers
      .filter((s) => s.cancellation !== 'none')
      .map((s) => `${s.serverId}/${s.cancellation}`),
    // No events within the hour: every current IP of a server at 0; the colocation's IPs past their retention.
    baremetal_firewall_attack_events_last_hour: ipSeries,
    baremetal_firewall_attack_events_total: ipSeries,
    baremetal_firewall_history_up: services,
    baremetal_firewall_history_last_success_timestamp_seconds: services,
    baremetal_graph_last_success_timestamp_seconds: ids.map((id) => `${id}/port_bits/day`),
  };
  for (const list of Object.values(out)) list.sort();
  return out;
}

/** One round of the polls that churn touches, then the exposition as a scrape sees it. */
async function pollRound(): Promise<string> {
  const { polls } = accountOf(h.daemon, 'default');
  for (const job of ['servers', 'firewall', 'graphs'] as const) expect(await polls.run(job)).toBe('success');
  await h.daemon.exposition.render();
  return (await h.daemon.app.inject('/metrics')).body;
}

/** Moves `ip` from one simulated server to another (the record's IPs and its firewall history's). */
function moveIp(ip: string, from: string, to: string): void {
  const source = h.sim.state.servers.get(from)!;
  source.ips.splice(source.ips.indexOf(ip), 1);
  h.sim.state.servers.get(to)!.ips.push(ip);
}

beforeAll(async () => {
  h = await startHarness({
    simulator: { servers: 6, ipsPerServer: 2, colocations: 1, transits: 0, attackRate: 0, seed: 11, now: clock },
    config: {
      graphs: { types: ['port_bits'], scales: ['day'] },
      services: { colocation_ids: ['colo-1'] },
      firewall: { ip_retention: '30m' },
    },
    daemon: { now: clock, initialPolls: false },
  });
});
afterAll(() => h?.stop());

describe('churn', () => {
  it('leaves exactly the series, graphs and state files the current inventory implies', async () => {
    const state = h.sim.state;
    const coloIp = state.service('colocation', 'colo-1')!.ips[0]!;
    const attackedIp = state.servers.get('100002')!.ips[0]!;
    state.servers.get('100003')!.cancellation = 'end';
    state.startAttack(attackedIp, 600);
    state.startAttack(coloIp, 600);
    now += 5 * 60_000;
    const before = seriesIn(await pollRound());
    // The churn to come has something to remove: the leaving servers' series, the attacked colocation IP.
    expect(before.baremetal_server_info).toEqual(['100001', '100002', '100003', '100004', '100005', '100006']);
    expect(before.baremetal_server_cancellation_scheduled).toEqual(['100003/end']);
    expect(before.baremetal_firewall_attack_events_last_hour).toContain(`colocation/colo-1/${coloIp}`);

    // Servers leave (one attacked, one with a cancellation), two arrive, an IP moves; a round polls each step.
    state.removeServer('100002');
    state.removeServer('100003');
    state.addServer('100007', ['198.18.9.1', '198.18.9.2']);
    state.addServer('100008', ['198.18.9.3']);
    moveIp(state.servers.get('100004')!.ips[1]!, '100004', '100005');
    now += 5 * 60_000;
    await pollRound();
    state.removeServer('100008');
    state.servers.get('100006')!.cancellation = 'immediate';
    // Past the hour of history and the colocation's IP retention: the attacks' events are out of every window.
    now += 2 * HOUR;
    await pollRound();
    const exposition = await pollRound();

    expect(seriesIn(exposition)).toEqual(implied());
    const ids = [...state.servers.keys()].sort();
    expect(ids).toEqual(['100001', '100004', '100005', '100006', '100007']);
    const graphStore = accountOf(h.daemon, 'default').graphStore;
    expect(
      graphStore
        .list()
        .map((g) => g.serverId)
        .sort(),
    ).toEqual(ids);
    // Every file of the state directory but the journal (history, kept for journal_retention) and the lock.
    const files = readdirSync(h.stateDir, { recursive: true, encoding: 'utf8' })
      .filter((name) => !/^(journal\.db|baremetal-exporter\.lock)/.test(name))
      .sort();
    const graphs = 'graphs/default/dedicated';
    expect(files).toEqual(
      [
        'events',
        'events/default.json',
        'graphs',
        'graphs/default',
        graphs,
        ...ids.flatMap((id) => [`${graphs}/${id}`, `${graphs}/${id}/port_bits-day.png`]),
      ].sort(),
    );
    const ledger = join(h.stateDir, 'events', 'default.json');
    expect(existsSync(ledger)).toBe(true);
    for (const gone of ['100002', '100003', '100008']) expect(readFileSync(ledger, 'utf8')).not.toContain(gone);
  });
});
