/**
 * The command tree of `baremetal-exporter api`: one leaf per operation of the API contract (§4), each
 * calling the typed function of src/upstream/ and rendering its result. Adding an operation is one entry (a
 * Leaf, leaf.ts) here, or in the file of its concern: provisioning.ts (provision, cancellation) and
 * firewall-commands.ts. JSON shapes are documented in docs/api-command.md; docs/cli.md is generated from
 * these leaves.
 */
import { writeFileSync } from 'node:fs';
import {
  getConsole,
  getGraph,
  getServer,
  listOperatingSystems,
  listServers,
  power,
  setReverseDns,
  type PowerAction,
} from '../../upstream/dedicated.js';
import type { ServerRecord } from '../../upstream/decode-servers.js';
import type { GraphScale, GraphType } from '../../config/api-terms.js';
import { listLocations } from '../../upstream/reseller.js';
import { option, requiredOption } from './context.js';
import { usage } from './exit.js';
import { FIREWALL_LEAVES } from './firewall-commands.js';
import type { Leaf } from './leaf.js';
import { keyValues, table } from './output.js';
import { powerRefusal } from './power-guard.js';
import { CANCELLATION, PROVISION } from './provisioning.js';
import { runAction } from './write.js';

const serverJson = (s: ServerRecord) => ({
  serverId: s.serverId,
  hostname: s.hostname,
  ip: s.ip,
  ips: s.ips,
  os: s.os,
  processor: s.processor,
  memory: s.memory,
  location: s.location,
  status: s.status,
  cancellation: s.cancellation,
});

const powerLeaf = (word: string, api: PowerAction, confirmWhat?: string): Leaf => ({
  path: ['power', word],
  args: ['SERVER_ID'],
  synopsis: '[--force]',
  options: ['force'],
  write: true,
  summary: `power ${word} a server (${confirmWhat ? 'asks for confirmation; ' : ''}checks the breaker and the cap)`,
  example: `baremetal-exporter api power ${word} 100001${confirmWhat ? ' --yes' : ''}`,
  run: (ctx) => {
    const serverId = ctx.args[0]!;
    return runAction(ctx, {
      action: api,
      serverId,
      call: (c) => power(c, api, serverId),
      guard: (q, now) => powerRefusal(q, ctx.config.remediation.safety, ctx.account, serverId, now),
      ...(confirmWhat ? { confirm: `${confirmWhat} server ${serverId}` } : {}),
    });
  },
});

/** Writes `data` to `file` (mode 0600); returns the byte count. */
function save(file: string, data: string | Buffer): number {
  writeFileSync(file, data, { mode: 0o600 });
  return Buffer.byteLength(data);
}

/** Every command of `baremetal-exporter api`. */
export const LEAVES: Leaf[] = [
  {
    path: ['servers', 'list'],
    args: [],
    options: [],
    write: false,
    summary: 'list every dedicated server',
    example: 'baremetal-exporter api servers list --output json',
    run: async (ctx) => {
      const { servers } = await listServers(ctx.client);
      return {
        data: servers.map(serverJson),
        table: table(
          ['SERVER_ID', 'HOSTNAME', 'IP', 'OS', 'LOCATION', 'STATUS'],
          servers.map((s) => [s.serverId, s.hostname, s.ip, s.os, s.location, s.status]),
        ),
      };
    },
  },
  {
    path: ['servers', 'show'],
    args: ['SERVER_ID'],
    options: [],
    write: false,
    summary: "show one server's record",
    example: 'baremetal-exporter api servers show 100001',
    run: async (ctx) => {
      const s = await getServer(ctx.client, ctx.args[0]!);
      const pairs: Array<[string, string]> = [
        ['server_id', s.serverId],
        ['hostname', s.hostname],
        ['ips', s.ips.join(', ')],
        ['os', s.os],
        ['processor', s.processor],
        ['memory', s.memory],
        ['location', s.location],
        ['status', s.status],
        ['cancellation', s.cancellation || 'none scheduled'],
      ];
      return { data: serverJson(s), table: keyValues(pairs) };
    },
  },
  powerLeaf('cycle', 'powercycle', 'power-cycle (hard reset)'),
  powerLeaf('on', 'poweron'),
  powerLeaf('off', 'poweroff', 'power off'),
  {
    path: ['console'],
    args: ['SERVER_ID'],
    synopsis: '[--out FILE.jnlp]',
    options: ['out'],
    write: false,
    summary: 'fetch the KVM/IPMI console launcher (JNLP)',
    example: 'baremetal-exporter api console 100001 --out console.jnlp',
    run: async (ctx) => {
      const serverId = ctx.args[0]!;
      const out = option(ctx, 'out');
      const jnlp = await getConsole(ctx.client, serverId);
      if (out === undefined) return { data: { serverId, jnlp }, table: jnlp };
      return {
        data: { serverId, file: out, bytes: save(out, jnlp) },
        table: `console launcher for ${serverId} written to ${out}`,
      };
    },
  },
  {
    path: ['graph'],
    args: ['SERVER_ID'],
    synopsis: '--type T --scale S [--out FILE.png]',
    options: ['type', 'scale', 'out'],
    write: false,
    summary: 'fetch a port-traffic graph (PNG)',
    example: 'baremetal-exporter api graph 100001 --type port_bits --scale day --out graph.png',
    run: async (ctx) => {
      const serverId = ctx.args[0]!;
      const type = requiredOption(ctx, 'type') as GraphType;
      const scale = requiredOption(ctx, 'scale') as GraphScale;
      const out = option(ctx, 'out');
      if (out === undefined && ctx.format === 'table' && ctx.io.stdoutIsTTY)
        throw usage(
          'graph: a PNG on a terminal is unreadable; give --out FILE.png, redirect stdout, or use --output json',
        );
      const png = await getGraph(ctx.client, serverId, type, scale);
      const meta = { serverId, type, scale, bytes: png.length };
      if (out !== undefined)
        return {
          data: { ...meta, file: out, bytes: save(out, png) },
          table: `graph ${type}/${scale} of ${serverId} written to ${out} (${png.length} bytes)`,
        };
      if (ctx.format === 'table') {
        ctx.io.stdout.write(png);
        return { data: meta, table: '' };
      }
      return { data: { ...meta, base64: png.toString('base64') }, table: '' };
    },
  },
  {
    path: ['os', 'list'],
    args: [],
    options: [],
    write: false,
    summary: 'list installable operating systems',
    example: 'baremetal-exporter api os list',
    run: async (ctx) => {
      const list = await listOperatingSystems(ctx.client);
      return {
        data: list,
        table: table(
          ['ID', 'NAME', 'ARCH', 'TYPE', 'PRICE_PER_CORE'],
          list.map((o) => [o.id, o.name, o.arch, o.type, o.pricePerCore]),
        ),
      };
    },
  },
  {
    path: ['locations', 'list'],
    args: [],
    options: [],
    write: false,
    summary: 'list locations (reseller)',
    example: 'baremetal-exporter api locations list --output yaml',
    run: async (ctx) => {
      const list = await listLocations(ctx.client);
      return {
        data: list.map((l) => ({ id: l.id, name: l.name })),
        table: table(
          ['ID', 'NAME'],
          list.map((l) => [l.id, l.name]),
        ),
      };
    },
  },
  PROVISION,
  {
    path: ['ptr', 'set'],
    args: ['SERVER_ID', 'IP', 'HOSTNAME'],
    options: [],
    write: true,
    summary: 'set the reverse DNS (PTR) record of an IP',
    example: 'baremetal-exporter api ptr set 100001 198.18.0.1 web1.example.com',
    run: (ctx) => {
      const [serverId, ip, hostname] = ctx.args as [string, string, string];
      return runAction(ctx, {
        action: 'reverse_dns',
        serverId,
        ip,
        value: hostname,
        call: (c) => setReverseDns(c, { serverId, ip, hostname }),
      });
    },
  },
  ...FIREWALL_LEAVES,
  CANCELLATION,
];
