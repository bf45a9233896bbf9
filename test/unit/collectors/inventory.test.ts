import { describe, expect, it } from 'vitest';
import { collectServerList } from '../../../src/collectors/inventory.js';
import { decodeServerList } from '../../../src/upstream/decode.js';
import { freshMetrics, seriesOf, seriesValue } from '../../helpers/metrics.js';

const ctx = { operation: 'list_servers', path: '/api/v1/dedicated' };
const list = (...records: object[]) => decodeServerList(records, ctx);

describe('server-list collector', () => {
  it('exposes the server count and one info series per server, empty labels for missing fields', async () => {
    const { registry, metrics } = freshMetrics();
    await collectServerList(
      list({ server_id: '1', hostname: 'a', IP: '192.0.2.1', OS: 'Debian 12' }, { server_id: '2' }),
      new Map(),
      metrics,
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
    const { registry, metrics } = freshMetrics();
    const first = await collectServerList(list({ server_id: '1' }, { server_id: '2' }), new Map(), metrics);
    const second = await collectServerList(list({ server_id: '2' }), first.inventory, metrics);
    expect(second.removed).toEqual(['1']);
    expect((await seriesOf(registry, 'baremetal_server_info')).map((l) => l.server_id)).toEqual(['2']);
    expect((await seriesOf(registry, 'baremetal_server_ips')).map((l) => l.server_id)).toEqual(['2']);
    expect(await seriesValue(registry, 'baremetal_servers')).toBe(1);
  });

  it('replaces the info series when a label changes, leaving no stale copy', async () => {
    const { registry, metrics } = freshMetrics();
    const first = await collectServerList(list({ server_id: '1', status: 'online' }), new Map(), metrics);
    await collectServerList(list({ server_id: '1', status: 'offline' }), first.inventory, metrics);
    expect((await seriesOf(registry, 'baremetal_server_info')).map((l) => l.status)).toEqual(['offline']);
  });
});
