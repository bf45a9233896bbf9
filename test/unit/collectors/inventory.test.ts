import { describe, expect, it } from 'vitest';
import { collectServerList, memoryBytes } from '../../../src/collectors/inventory.js';
import { decodeServerList } from '../../../src/upstream/decode-servers.js';
import type { AccountState } from '../../../src/collectors/account-state.js';
import { seriesOf, seriesValue, stateMetrics } from '../../helpers/metrics.js';

const ctx = { operation: 'list_servers', path: '/api/v1/dedicated' };
const list = (...records: object[]) => decodeServerList(records, ctx);
/** Collects a list and makes it the account's inventory, as the servers poll does: its series are rendered from it. */
function collectInto(account: AccountState, ...args: Parameters<typeof collectServerList>) {
  const result = collectServerList(...args);
  account.inventory = result.inventory;
  return result;
}

describe('server-list collector', () => {
  it('exposes the server count and one info series per server, empty labels for missing fields', async () => {
    const { registry, metrics, account } = stateMetrics([]);
    collectInto(
      account,
      list({ server_id: '1', hostname: 'a', IP: '192.0.2.1', OS: 'Debian 12' }, { server_id: '2' }),
      new Map(),
      { account: 'default', metrics },
    );
    expect(await seriesValue(registry, 'baremetal_servers')).toBe(2);
    expect(await seriesOf(registry, 'baremetal_server_info')).toEqual([
      {
        server_id: '1',
        hostname: 'a',
        ip: '192.0.2.1',
        os: 'Debian 12',
        processor: '',
        memory: '',
        location: '',
        status: '',
      },
      { server_id: '2', hostname: '', ip: '', os: '', processor: '', memory: '', location: '', status: '' },
    ]);
  });

  it('removes the series of servers that disappeared and reports them', async () => {
    const { registry, metrics, account } = stateMetrics([]);
    const first = collectInto(account, list({ server_id: '1' }, { server_id: '2' }), new Map(), {
      account: 'default',
      metrics,
    });
    const second = collectInto(account, list({ server_id: '2' }), first.inventory, { account: 'default', metrics });
    expect(second.removed).toEqual(['1']);
    expect((await seriesOf(registry, 'baremetal_server_info')).map((l) => l.server_id)).toEqual(['2']);
    expect((await seriesOf(registry, 'baremetal_server_ips')).map((l) => l.server_id)).toEqual(['2']);
    expect(await seriesValue(registry, 'baremetal_servers')).toBe(1);
  });

  it('replaces the info series when a label changes, leaving no stale copy', async () => {
    const { registry, metrics, account } = stateMetrics([]);
    const first = collectInto(account, list({ server_id: '1', status: 'online' }), new Map(), {
      account: 'default',
      metrics,
    });
    collectInto(account, list({ server_id: '1', status: 'offline' }), first.inventory, { account: 'default', metrics });
    expect((await seriesOf(registry, 'baremetal_server_info')).map((l) => l.status)).toEqual(['offline']);
  });

  // Issue 32: one series per scheduled cancellation, following the record from poll to poll.
  it("follows each server's scheduled cancellation: set, changed, withdrawn, gone with the server", async () => {
    const { registry, metrics, account } = stateMetrics([]);
    const cancellations = async () =>
      (await seriesOf(registry, 'baremetal_server_cancellation_scheduled')).map(
        (l) => `${l.server_id}:${l.cancellation_type}`,
      );
    const steps = [
      [{ server_id: '1', cancellation: 'end' }, { server_id: '2' }, { server_id: '3', cancellation: null }],
      [{ server_id: '1', cancellation: 'immediate' }, { server_id: '2', cancellation: 'end' }, { server_id: '3' }],
      [{ server_id: '1', cancellation: null }, { server_id: '2', cancellation: 'end' }, { server_id: '3' }],
      [{ server_id: '1' }, { server_id: '3' }],
    ];
    const seen: string[][] = [];
    let inventory = new Map();
    for (const records of steps) {
      inventory = collectInto(account, list(...records), inventory, { account: 'default', metrics }).inventory;
      seen.push(await cancellations());
    }
    expect(seen).toEqual([['1:end'], ['1:immediate', '2:end'], ['2:end'], []]);
  });

  it.each([
    { memory: '256 GB', bytes: 256 * 2 ** 30 },
    { memory: '64GB', bytes: 64 * 2 ** 30 },
    { memory: '128', bytes: 128 * 2 ** 30 },
    { memory: ' 32 gb ', bytes: 32 * 2 ** 30 },
    { memory: '0.5 TB', bytes: 2 ** 39 },
    { memory: '512 MiB', bytes: 512 * 2 ** 20 },
    { memory: '', bytes: undefined },
    { memory: 'n/a', bytes: undefined },
    { memory: '-1 GB', bytes: undefined },
    { memory: '16 GHz', bytes: undefined },
    { memory: '1e9 GB', bytes: undefined },
  ])('reads memory $memory as $bytes bytes', ({ memory, bytes }) => {
    expect(memoryBytes(memory)).toBe(bytes);
  });

  it('exposes baremetal_server_memory_bytes from the memory field, and none when it is not a size', async () => {
    const { registry, metrics, account } = stateMetrics([]);
    const first = collectInto(
      account,
      list({ server_id: '1', memory: '256 GB' }, { server_id: '2', ram: '64 GB' }, { server_id: '3', memory: 'n/a' }),
      new Map(),
      { account: 'default', metrics },
    );
    const memory = async () =>
      Object.fromEntries(
        (await registry.getSingleMetric('baremetal_server_memory_bytes')!.get()).values.map((v) => [
          v.labels.server_id,
          v.value,
        ]),
      );
    expect(await memory()).toEqual({ '1': 256 * 2 ** 30, '2': 64 * 2 ** 30 });
    // Memory that stops being a size, and a server that disappears, leave no stale series.
    collectInto(account, list({ server_id: '1', memory: '' }, { server_id: '3', memory: '32 GB' }), first.inventory, {
      account: 'default',
      metrics,
    });
    expect(await memory()).toEqual({ '3': 32 * 2 ** 30 });
  });
});
