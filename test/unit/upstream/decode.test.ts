import { describe, expect, it } from 'vitest';
import { ApiError, InvalidReplyError } from '../../../src/errors.js';
import { createScrubber } from '../../../src/scrub.js';
import {
  decodeActionResult,
  decodeFirewallHistory,
  decodeGraph,
  decodeLocations,
  decodeOperatingSystems,
} from '../../../src/upstream/decode.js';
import {
  decodeServer,
  decodeServerEntries,
  decodeServerList,
  serverListEntries,
} from '../../../src/upstream/decode-servers.js';

const ctx = { operation: 'op', path: '/api/v1/x', status: 200 };
const noScrub = createScrubber([]);

describe('server records', () => {
  it('reads the public client spellings (OS, processor, IP, memory) and keeps the raw record', () => {
    const raw = {
      server_id: 42,
      hostname: 'a.example.net',
      IP: '192.0.2.10',
      OS: 'Debian 12',
      processor: 'EPYC',
      memory: '64 GB',
      extra: { x: 1 },
    };
    const server = decodeServer(raw, ctx);
    expect(server).toEqual({
      serverId: '42',
      hostname: 'a.example.net',
      ip: '192.0.2.10',
      ips: ['192.0.2.10'],
      os: 'Debian 12',
      processor: 'EPYC',
      memory: '64 GB',
      location: '',
      status: '',
      cancellation: '',
      raw,
    });
  });

  // Issue 32: the record's scheduled cancellation; a record without the field decodes as none.
  it.each([
    { name: 'no cancellation field', record: { server_id: '1' }, cancellation: '' },
    { name: 'cancellation null', record: { server_id: '1', cancellation: null }, cancellation: '' },
    {
      name: 'cancellation immediate',
      record: { server_id: '1', cancellation: 'immediate' },
      cancellation: 'immediate',
    },
    { name: 'cancellation end', record: { server_id: '1', cancellation: 'end' }, cancellation: 'end' },
  ])('reads $name', ({ record, cancellation }) => {
    expect(decodeServer(record, ctx).cancellation).toBe(cancellation);
  });

  it.each([
    { name: 'an unknown word', value: 'soon' },
    { name: 'a request type that is no state', value: 'delete' },
    { name: 'another case', value: 'END' },
    { name: 'an empty text', value: '' },
    { name: 'false', value: false },
    { name: 'a number', value: 1 },
    { name: 'an object', value: { type: 'end' } },
  ])('refuses a record whose cancellation is $name, naming the server', ({ value }) => {
    const error = (() => {
      try {
        return decodeServer({ server_id: '5', cancellation: value }, ctx);
      } catch (e) {
        return e;
      }
    })();
    expect(error).toBeInstanceOf(InvalidReplyError);
    expect((error as Error).message).toContain('server 5: cancellation');
    const list = decodeServerList([{ server_id: '4' }, { server_id: '5', cancellation: value }], ctx);
    expect(list).toMatchObject({ skipped: 1, servers: [{ serverId: '4', cancellation: '' }] });
  });

  it.each([
    [
      'id/name/main_ip/cpu/ram',
      { id: '7', name: 'b', main_ip: '192.0.2.1', cpu: 'Xeon', ram: '32 GB', location: 'ams1', status: 'online' },
      {
        serverId: '7',
        hostname: 'b',
        ip: '192.0.2.1',
        processor: 'Xeon',
        memory: '32 GB',
        location: 'ams1',
        status: 'online',
      },
    ],
    [
      'lower-case ip and os',
      { server_id: '8', ip: '2001:db8::5', os: 'FreeBSD' },
      { serverId: '8', ip: '2001:db8::5', os: 'FreeBSD', hostname: '' },
    ],
    ['a record wrapped in {server}', { server: { server_id: '9' } }, { serverId: '9' }],
  ])('%s', (_name, raw, expected) => {
    expect(decodeServer(raw, ctx)).toMatchObject(expected);
  });

  it('collects IP lists from arrays, objects and comma strings, deduplicated, main IP first', () => {
    const server = decodeServer(
      {
        id: '1',
        IP: '192.0.2.1',
        ips: ['192.0.2.1', { ip: '192.0.2.2' }, 'junk'],
        additional_ips: '192.0.2.3, 192.0.2.4',
      },
      ctx,
    );
    expect(server.ips).toEqual(['192.0.2.1', '192.0.2.2', '192.0.2.3', '192.0.2.4']);
  });

  it('throws InvalidReplyError when get-one has no id', () => {
    expect(() => decodeServer({ hostname: 'x' }, ctx)).toThrow(InvalidReplyError);
  });
});

describe('server lists', () => {
  it.each([
    ['an array', [{ server_id: '1' }, { server_id: '2' }]],
    ['an object wrapping {servers}', { success: true, servers: [{ server_id: '1' }, { server_id: '2' }] }],
    ['an object wrapping {data}', { data: [{ id: '1' }, { id: '2' }] }],
    ['a map keyed by id', { '1': { hostname: 'a' }, '2': { hostname: 'b' } }],
  ])('accepts %s', (_name, reply) => {
    expect(decodeServerList(reply, ctx).servers.map((s) => s.serverId)).toEqual(['1', '2']);
  });

  it('skips records without an id and duplicates, counting them', () => {
    const list = decodeServerList([{ server_id: '1' }, { hostname: 'no id' }, 'text', { server_id: '1' }], ctx);
    expect(list).toMatchObject({ skipped: 3, servers: [{ serverId: '1' }] });
  });

  it.each([
    { name: 'four records', count: 4 },
    { name: '5,000 records: many slices', count: 5000 },
  ])('decodes the same list in slices as at once: $name', async ({ count }) => {
    // Every 7th record has no id, every 11th repeats the one before.
    const reply = Array.from({ length: count }, (_, i) =>
      i % 7 === 3 ? { hostname: 'no id' } : { server_id: String(i % 11 === 5 ? i - 1 : i), IP: '192.0.2.1' },
    );
    const sliced = await decodeServerEntries(serverListEntries(reply, ctx));
    expect(sliced).toEqual(decodeServerList(reply, ctx));
    expect(sliced.skipped).toBeGreaterThan(0);
  });

  it.each([
    ['a number', 42],
    ['a string', 'servers'],
    ['a map of scalars', { a: 1 }],
    ['null', null],
  ])('rejects %s', (_name, reply) => {
    expect(() => decodeServerList(reply, ctx)).toThrow(InvalidReplyError);
  });
});

describe('firewall history', () => {
  const event = {
    id: 991,
    ip: '192.0.2.1',
    raw: '2026-11-21 udp flood',
    time: 1763700000,
    mbps: 1200,
    attack_type: 'udp',
    nested: { a: 1 },
  };
  const decoded = {
    id: '991',
    ip: '192.0.2.1',
    raw: '2026-11-21 udp flood',
    fields: { time: 1763700000, mbps: 1200, attack_type: 'udp' },
  };

  it.each([
    ['an array of events', { success: true, firewall: [event] }, [decoded]],
    ['a string holding JSON of one', { success: true, firewall: JSON.stringify([event]) }, [decoded]],
    ['an empty string', { success: true, firewall: '' }, []],
    ['null', { success: true, firewall: null }, []],
    ['an empty array', { success: true, firewall: [] }, []],
    ['a missing firewall field', { success: true }, []],
    ['a JSON string of null', { success: true, firewall: 'null' }, []],
  ])('accepts %s', (_name, reply, expected) => {
    expect(decodeFirewallHistory(reply, ctx, noScrub)).toEqual(expected);
  });

  it('gives an event without id a stable digest id', () => {
    const [a] = decodeFirewallHistory({ success: true, firewall: [{ ip: '192.0.2.1', raw: 'x' }] }, ctx, noScrub);
    const [b] = decodeFirewallHistory({ success: true, firewall: [{ ip: '192.0.2.1', raw: 'x' }] }, ctx, noScrub);
    expect(a!.id).toMatch(/^[0-9a-f]{16}$/);
    expect(a!.id).toBe(b!.id);
  });

  it.each([
    ['success false', { success: false, firewall: [] }, /expected \{success: true, firewall\}/],
    ['a number', { success: true, firewall: 42 }, /not a list of events/],
    ['an object', { success: true, firewall: { id: 1 } }, /not a list of events/],
    ['a string that is not JSON', { success: true, firewall: 'attack!' }, /a string but not JSON/],
    ['an array of strings', { success: true, firewall: ['a'] }, /not an object/],
    ['a bare array reply', [], /expected \{success: true, firewall\}/],
  ])('rejects %s', (_name, reply, message) => {
    expect(() => decodeFirewallHistory(reply, ctx, noScrub)).toThrow(message);
  });
});

describe('other replies', () => {
  it('decodes graph base64, also as a data URL', () => {
    expect(decodeGraph({ success: true, base64: 'aGVsbG8=' }, ctx).toString()).toBe('hello');
    expect(decodeGraph({ success: true, base64: 'data:image/png;base64,aGVs\nbG8=' }, ctx).toString()).toBe('hello');
  });
  it.each([
    [{ success: true }],
    [{ success: true, base64: '' }],
    [{ success: true, base64: '!!!' }],
    [{ success: false, base64: 'aGVsbG8=' }],
  ])('rejects graph reply %j', (reply) => {
    expect(() => decodeGraph(reply, ctx)).toThrow(InvalidReplyError);
  });
  it('decodes the OS list and drops entries without id', () => {
    expect(
      decodeOperatingSystems(
        [{ id: '1', name: 'Debian', arch: 'amd64', type: 'unix', price_per_core: '0' }, { name: 'x' }],
        ctx,
      ),
    ).toEqual([{ id: '1', name: 'Debian', arch: 'amd64', type: 'unix', pricePerCore: '0' }]);
  });
  it('decodes locations as an array or a map', () => {
    expect(decodeLocations([{ id: 'ams1', name: 'Amsterdam' }], ctx).map((l) => [l.id, l.name])).toEqual([
      ['ams1', 'Amsterdam'],
    ]);
    expect(decodeLocations({ ams1: 'Amsterdam' }, ctx).map((l) => [l.id, l.name])).toEqual([['ams1', 'Amsterdam']]);
  });
});

describe('action replies (contract §7: two success forms, two failure forms)', () => {
  it.each([
    { name: 'success: true', reply: { success: true, message: 'Done.' }, message: 'Done.' },
    { name: 'error: false (the provisioning form)', reply: { error: false, message: 'Done.' }, message: 'Done.' },
    { name: 'both success forms', reply: { success: true, error: false }, message: '' },
  ])('executed: $name', ({ reply, message }) => {
    expect(decodeActionResult(reply, ctx)).toEqual({ message, raw: reply });
  });
  it.each([
    { name: 'success: false', reply: { success: false, message: 'No.' }, message: 'No.' },
    { name: 'error: true', reply: { error: true, message: 'No.' }, message: 'No.' },
    { name: 'error: false with success: false', reply: { error: false, success: false, msg: 'No.' }, message: 'No.' },
    {
      name: 'success: true with error: true',
      reply: { success: true, error: true },
      message: '"error": true without a message',
    },
    { name: 'the reason as a string error', reply: { success: false, error: 'busy' }, message: 'busy' },
  ])('failed with the API message: $name', ({ reply, message }) => {
    expect(() => decodeActionResult(reply, ctx)).toThrow(ApiError);
    expect(() => decodeActionResult(reply, ctx)).toThrow(message);
  });
  it.each([
    { name: 'neither flag', reply: { message: 'Done.' } },
    { name: 'a string "true"', reply: { success: 'true' } },
    { name: 'a number 0 for error', reply: { error: 0 } },
    { name: 'a string', reply: 'ok' },
    { name: 'an array', reply: [{ success: true }] },
  ])('not confirmed: $name', ({ reply }) => {
    expect(() => decodeActionResult(reply, ctx)).toThrow(InvalidReplyError);
  });
});
