import { MockAgent } from 'undici';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InvalidParameterError } from '../../src/errors.js';
import { UpstreamClient } from '../../src/upstream/client.js';
import { getConsole, getGraph, getServer, powerOff, provision, setReverseDns } from '../../src/upstream/dedicated.js';
import {
  getColocationFirewallHistory,
  getTransitFirewallHistory,
  setFirewallSensitivity,
  setFirewallState,
} from '../../src/upstream/firewall.js';
import { setCancellation } from '../../src/upstream/reseller.js';

const BASE = 'https://api.provider.test';
let agent: MockAgent;
let sent: string[];
let client: UpstreamClient;

beforeEach(() => {
  agent = new MockAgent();
  agent.disableNetConnect();
  sent = [];
  // Any request that gets through is recorded: a validation failure must leave `sent` empty.
  agent
    .get(BASE)
    .intercept({ path: () => true, method: 'POST' })
    .reply(200, (opts) => {
      sent.push(String(opts.path));
      return { success: true, error: false, root_password: 'pw', firewall: [], base64: 'iVBORw0KGgo=' };
    })
    .persist();
  client = new UpstreamClient({
    baseUrl: BASE,
    apiKey: 'k',
    timeoutMs: 1000,
    concurrency: 1,
    retries: 0,
    dispatcher: agent,
  });
});
afterEach(() => agent.close());

const cases: Array<{ name: string; call: () => Promise<unknown>; parameter: string; message: RegExp }> = [
  {
    name: 'graph with a bad type',
    call: () => getGraph(client, '1', 'port_bytes' as never, 'day'),
    parameter: 'type',
    message: /must be one of port_bits, port_percent, port_errors, port_upkts \(got "port_bytes"\)/,
  },
  {
    name: 'graph with a bad scale',
    call: () => getGraph(client, '1', 'port_bits', 'year' as never),
    parameter: 'scale',
    message: /must be one of day, week, month/,
  },
  {
    name: 'firewall history with a bad scale',
    call: () => getColocationFirewallHistory(client, 'c1', 'month' as never),
    parameter: 'scale',
    message: /must be one of hour, day, week/,
  },
  {
    name: 'firewall history with a bad ip',
    call: () => getTransitFirewallHistory(client, 't1', 'hour', '300.1.1.1'),
    parameter: 'ip',
    message: /IPv4 or IPv6/,
  },
  {
    name: 'firewall state 2',
    call: () => setFirewallState(client, { serverId: '1', ip: '192.0.2.1', state: '2' as never }),
    parameter: 'state',
    message: /must be one of 1, 0/,
  },
  {
    name: 'sensitivity "extreme"',
    call: () => setFirewallSensitivity(client, { serverId: '1', ip: '192.0.2.1', sensitivity: 'extreme' as never }),
    parameter: 'sensitivity',
    message: /low, medium, normal, high/,
  },
  {
    name: 'PTR content that is not a hostname',
    call: () => setReverseDns(client, { serverId: '1', ip: '192.0.2.1', hostname: 'not a host' }),
    parameter: 'content',
    message: /fully valid hostname/,
  },
  {
    name: 'PTR content without a TLD',
    call: () => setReverseDns(client, { serverId: '1', ip: '192.0.2.1', hostname: 'localhost' }),
    parameter: 'content',
    message: /fully valid hostname/,
  },
  {
    name: 'post_installation that bash -n rejects',
    call: () => provision(client, { serverId: '1', osid: '1', postInstallation: 'if true; then echo x' }),
    parameter: 'post_installation',
    message: /bash -n rejects the script/,
  },
  {
    name: 'an empty server_id',
    call: () => powerOff(client, ''),
    parameter: 'server_id',
    message: /non-empty identifier/,
  },
  {
    name: 'a blank server_id',
    call: () => getServer(client, '   '),
    parameter: 'server_id',
    message: /non-empty identifier/,
  },
  {
    name: 'an empty colocation_id',
    call: () => getColocationFirewallHistory(client, '', 'hour'),
    parameter: 'colocation_id',
    message: /non-empty identifier/,
  },
  {
    name: 'a bad cancellation type',
    call: () => setCancellation(client, '1', 'later' as never),
    parameter: 'type',
    message: /immediate, end, delete/,
  },
  {
    name: 'an empty osid',
    call: () => provision(client, { serverId: '1', osid: '' }),
    parameter: 'osid',
    message: /non-empty identifier/,
  },
];

describe('parameters are validated before any request is sent', () => {
  it.each(cases)('$name', async ({ call, parameter, message }) => {
    const error = await call().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InvalidParameterError);
    expect((error as InvalidParameterError).parameter).toBe(parameter);
    expect((error as Error).message).toMatch(message);
    expect(sent).toEqual([]);
  });
});

describe('valid parameters reach the API', () => {
  it.each([
    {
      name: 'a PTR with a trailing dot',
      call: () => setReverseDns(client, { serverId: '1', ip: '2001:db8::1', hostname: 'mail.example.com.' }),
      path: '/api/v1/dedicated/dns',
    },
    {
      name: 'a valid post-install script',
      call: () => provision(client, { serverId: '1', osid: '3', postInstallation: 'set -e\napt-get update\n' }),
      path: '/api/v1/dedicated/provision',
    },
    {
      name: 'firewall state 0',
      call: () => setFirewallState(client, { serverId: '1', ip: '192.0.2.1', state: '0' }),
      path: '/api/v1/dedicated/firewall/state',
    },
    { name: 'the console', call: () => getConsole(client, '1'), path: '/api/v1/dedicated/console' },
  ])('$name', async ({ call, path }) => {
    await call();
    expect(sent).toEqual([path]);
  });
});
