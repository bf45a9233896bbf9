/**
 * The command tree of `baremetal-exporter api`: one leaf per operation of the API contract (§4), each
 * calling the typed function of src/upstream/ and rendering its result. Adding an operation is one entry.
 * JSON shapes are documented in docs/api-command.md; docs/cli.md is generated from these leaves.
 */
import { closeSync, lstatSync, openSync, statSync, writeSync, writeFileSync } from 'node:fs';
import { dirname } from 'node:path';
import {
  getConsole,
  getGraph,
  getServer,
  listOperatingSystems,
  listServers,
  power,
  provision,
  setReverseDns,
  type PowerAction,
} from '../upstream/dedicated.js';
import { BoundedFileError, FILE_LIMITS, readBoundedFile, readProblem } from '../read-bounded-file.js';
import type { ActionResult, ServerRecord } from '../upstream/decode.js';
import { getFirewallHistory, setFirewallSensitivity, setFirewallState } from '../upstream/firewall.js';
import {
  CANCELLATION_TYPES,
  FIREWALL_STATES,
  SENSITIVITIES,
  SERVICE_TYPES,
  type FirewallScale,
  type GraphScale,
  type GraphType,
  type ServiceType,
} from '../config/api-terms.js';
import { listLocations, setCancellation } from '../upstream/reseller.js';
import { flag, option, requiredOption, type CommandContext } from './context.js';
import { refused, usage } from './exit.js';
import { withFirewallWindow } from './firewall-window.js';
import { keyValues, table, type Rendered } from './output.js';
import { renderPlanned, runWrite, type WriteAction } from './write.js';

export interface Leaf {
  /** words after `api`, e.g. ["servers", "list"] */
  path: string[];
  /** positional arguments, for usage lines */
  args: string[];
  /** the leaf's own options in usage lines, e.g. "--type T --scale S [--out FILE.png]" */
  synopsis?: string;
  /** options besides the common ones (--config.file, --account, --output, --help) */
  options: string[];
  /** a write: accepts --dry-run (and --yes) */
  write: boolean;
  summary: string;
  example: string;
  run: (ctx: CommandContext) => Promise<Rendered>;
}

/** Largest post-install script read, bytes. */
export const MAX_SCRIPT_BYTES = FILE_LIMITS.script;

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

/** A write whose reply is an ActionResult: runs it and renders the API's message (or the dry run). */
async function action(ctx: CommandContext, write: WriteAction<ActionResult>): Promise<Rendered> {
  const outcome = await runWrite(ctx, write);
  if ('planned' in outcome) return renderPlanned(outcome.planned);
  const data = {
    action: write.action,
    serverId: write.serverId,
    ...(write.ip ? { ip: write.ip } : {}),
    ...(write.value ? { value: write.value } : {}),
    success: true,
    message: outcome.result.message,
  };
  return {
    data,
    table: `${write.action} ${write.serverId}${write.ip ? ` ${write.ip}` : ''}: ${outcome.result.message || 'done'}`,
  };
}

const powerLeaf = (word: string, api: PowerAction, confirmWhat?: string): Leaf => ({
  path: ['power', word],
  args: ['SERVER_ID'],
  options: [],
  write: true,
  summary: `power ${word} a server${confirmWhat ? ' (asks for confirmation)' : ''}`,
  example: `baremetal-exporter api power ${word} 100001${confirmWhat ? ' --yes' : ''}`,
  run: (ctx) => {
    const serverId = ctx.args[0]!;
    return action(ctx, {
      action: api,
      serverId,
      call: (c) => power(c, api, serverId),
      ...(confirmWhat ? { confirm: `${confirmWhat} server ${serverId}` } : {}),
    });
  },
});

/** Writes `data` to `file` (mode 0600); returns the byte count. */
function save(file: string, data: string | Buffer): number {
  writeFileSync(file, data, { mode: 0o600 });
  return Buffer.byteLength(data);
}

/**
 * Checks where provisioning's root password will go, before anything is sent: a new file (not even a broken
 * symbolic link there) in a folder that exists. Throws CliExit (exit 3) with a sentence naming the path.
 */
function passwordDestination(ctx: CommandContext): { file?: string; show: boolean } {
  const file = option(ctx, 'password-file');
  const show = flag(ctx, 'show-password') || (file === undefined && ctx.io.stdoutIsTTY);
  if (file !== undefined) {
    // lstat, not exists: a dangling symbolic link would be followed by the write (and then EEXIST).
    const there = lstatSync(file, { throwIfNoEntry: false });
    if (there?.isSymbolicLink())
      throw refused(`--password-file ${file} is a symbolic link; refusing to write through it (nothing was sent)`);
    if (there) throw refused(`--password-file ${file} exists; refusing to overwrite it (nothing was sent)`);
    const folder = dirname(file);
    if (!statSync(folder, { throwIfNoEntry: false })?.isDirectory())
      throw refused(`--password-file ${file}: the folder ${folder} does not exist (nothing was sent)`);
  }
  if (file === undefined && !show) {
    throw refused(
      'the root password needs a place: --password-file FILE, a terminal on stdout, or --show-password (nothing was sent)',
    );
  }
  return { ...(file !== undefined ? { file } : {}), show };
}

/** Creates the password file (0600, never an existing one); a failure is a sentence naming the path (exit 3). */
function claimPasswordFile(file: string): number {
  try {
    return openSync(file, 'wx', 0o600);
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code ?? 'error';
    throw refused(`--password-file ${file} cannot be created (${code}); nothing was sent`);
  }
}

/**
 * The text of a post-install script from its bytes: UTF-8 without NUL bytes (a BASH script, not a binary).
 * Throws CliExit (exit 2) naming `path` otherwise.
 */
export function scriptText(path: string, bytes: Uint8Array): string {
  if (bytes.includes(0))
    throw usage(`--post-install: ${path} is a binary file (it holds NUL bytes), not a BASH script`);
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(bytes);
  } catch {
    throw usage(`--post-install: ${path} is not UTF-8 text; a post-install script must be a UTF-8 BASH script`);
  }
}

/** The script at `path`: a regular file or a pipe (`<(…)`), at most MAX_SCRIPT_BYTES from every source, as UTF-8 text. */
async function readScript(path: string): Promise<string> {
  let bytes: Buffer;
  try {
    bytes = await readBoundedFile(path, 'script');
  } catch (error) {
    if (error instanceof BoundedFileError && error.code === 'EFBIG')
      throw usage(
        error.size === undefined
          ? `--post-install: ${path} is more than ${MAX_SCRIPT_BYTES} bytes (read from a pipe); at most ${MAX_SCRIPT_BYTES}`
          : `--post-install: ${path} is ${error.size} bytes; at most ${MAX_SCRIPT_BYTES}`,
      );
    throw usage(`--post-install: cannot read ${path} (${readProblem(error)})`);
  }
  return scriptText(path, bytes);
}

async function runProvision(ctx: CommandContext): Promise<Rendered> {
  const serverId = ctx.args[0]!;
  const osid = requiredOption(ctx, 'os');
  const scriptPath = option(ctx, 'post-install');
  const postInstallation = scriptPath === undefined ? undefined : await readScript(scriptPath);
  let dest: { file?: string; show: boolean } = { show: false };
  let fd: number | undefined;
  const outcome = await runWrite(ctx, {
    action: 'provision',
    serverId,
    value: osid,
    confirm: `install OS ${osid} on server ${serverId}, wiping its disks`,
    call: (c) => provision(c, { serverId, osid, ...(postInstallation !== undefined ? { postInstallation } : {}) }),
    validate: () => {
      dest = passwordDestination(ctx);
    },
    before: async () => {
      const known = await listOperatingSystems(ctx.client);
      if (!known.some((os) => os.id === osid))
        throw usage(
          `provision: --os ${osid} is not in the API's OS list (${known.map((os) => os.id).join(', ')}); see "api os list"`,
        );
    },
    around: async (send) => {
      // Claim the file before the disk is wiped: created now (0600, never an existing one), filled after.
      if (dest.file !== undefined) fd = claimPasswordFile(dest.file);
      try {
        return await send();
      } catch (error) {
        if (fd !== undefined) closeSync(fd);
        fd = undefined;
        throw error;
      }
    },
  });
  if ('planned' in outcome) return renderPlanned(outcome.planned);
  const password = outcome.result.rootPassword;
  if (fd !== undefined) {
    writeSync(fd, `${password}\n`);
    closeSync(fd);
  }
  const data = {
    action: 'provision',
    serverId,
    osid,
    success: true,
    ...(dest.file !== undefined ? { passwordFile: dest.file } : {}),
    ...(dest.show ? { rootPassword: password } : {}),
  };
  const lines = [`provision ${serverId}: OS ${osid} is being installed`];
  if (password === '') lines.push('the API returned no root password');
  else {
    if (dest.file !== undefined) lines.push(`root password written to ${dest.file} (mode 0600)`);
    if (dest.show) lines.push(`root password (shown once): ${password}`);
  }
  return { data, table: lines.join('\n') };
}

function oneOf<T extends string>(name: string, value: string, allowed: readonly T[]): T {
  if (!(allowed as readonly string[]).includes(value))
    throw usage(`${name} must be one of ${allowed.join(', ')} (got ${JSON.stringify(value)})`);
  return value as T;
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
  {
    path: ['provision'],
    args: ['SERVER_ID'],
    synopsis: '--os OS_ID [--post-install SCRIPT.sh] [--password-file FILE]',
    options: ['os', 'post-install', 'password-file', 'show-password'],
    write: true,
    summary: 'install an OS, wiping the disks (asks for confirmation)',
    example: 'baremetal-exporter api provision 100001 --os 1 --post-install setup.sh --password-file root.pw',
    run: runProvision,
  },
  {
    path: ['ptr', 'set'],
    args: ['SERVER_ID', 'IP', 'HOSTNAME'],
    options: [],
    write: true,
    summary: 'set the reverse DNS (PTR) record of an IP',
    example: 'baremetal-exporter api ptr set 100001 198.18.0.1 web1.example.com',
    run: (ctx) => {
      const [serverId, ip, hostname] = ctx.args as [string, string, string];
      return action(ctx, {
        action: 'reverse_dns',
        serverId,
        ip,
        value: hostname,
        call: (c) => setReverseDns(c, { serverId, ip, hostname }),
      });
    },
  },
  {
    path: ['firewall', 'history'],
    args: ['dedicated|colocation|transit', 'ID'],
    synopsis: '[--ip IP] [--scale hour|day|week]',
    options: ['ip', 'scale'],
    write: false,
    summary: 'firewall (DDoS) events of a service (--scale hour|day|week, default day)',
    example: 'baremetal-exporter api firewall history colocation colo-1 --scale week',
    run: async (ctx) => {
      const type = oneOf<ServiceType>('service type', ctx.args[0]!, SERVICE_TYPES);
      const events = await getFirewallHistory(
        ctx.client,
        type,
        ctx.args[1]!,
        (option(ctx, 'scale') ?? 'day') as FirewallScale,
        option(ctx, 'ip'),
      );
      return {
        data: events,
        table: table(
          ['ID', 'IP', 'EVENT'],
          events.map((e) => [e.id, e.ip, e.raw]),
        ),
      };
    },
  },
  {
    path: ['firewall', 'sensitivity'],
    args: ['SERVER_ID', 'IP', SENSITIVITIES.join('|')],
    options: [],
    write: true,
    summary: 'set the firewall sensitivity of an IP',
    example: 'baremetal-exporter api firewall sensitivity 100001 198.18.0.1 high',
    run: (ctx) => {
      const [serverId, ip, level] = ctx.args as [string, string, string];
      return action(ctx, {
        action: 'firewall_sensitivity',
        serverId,
        ip,
        value: level,
        call: (c) => setFirewallSensitivity(c, { serverId, ip, sensitivity: level as never }),
      });
    },
  },
  {
    path: ['firewall', 'state'],
    args: ['SERVER_ID', 'IP', FIREWALL_STATES.join('|')],
    synopsis: '[--wait]',
    options: ['wait'],
    write: true,
    summary: 'set the firewall state of an IP: 1 Always On, 0 Redirect On Attack (once per 2 minutes)',
    example: 'baremetal-exporter api firewall state 100001 198.18.0.1 1 --wait',
    run: (ctx) => {
      const [serverId, ip, state] = ctx.args as [string, string, string];
      const lastChange = async () => (await ctx.journal())?.lastSent(ctx.account, 'firewall_state', serverId, ip);
      return action(ctx, {
        action: 'firewall_state',
        serverId,
        ip,
        value: state,
        call: (c) => setFirewallState(c, { serverId, ip, state: state as never }),
        around: async (send) =>
          withFirewallWindow(send, {
            wait: flag(ctx, 'wait'),
            now: ctx.io.now,
            sleep: ctx.io.sleep,
            lastChange: await lastChange(),
            notify: (l) => ctx.io.stderr.write(`${l}\n`),
          }),
      });
    },
  },
  {
    path: ['cancellation'],
    args: ['SERVER_ID', CANCELLATION_TYPES.join('|')],
    options: [],
    write: true,
    summary: 'schedule (immediate, end of billing cycle) or withdraw (delete) cancellation',
    example: 'baremetal-exporter api cancellation 100001 end --yes',
    run: (ctx) => {
      const [serverId, type] = ctx.args as [string, string];
      const confirmWhat =
        type === 'immediate'
          ? `cancel server ${serverId} immediately`
          : type === 'end'
            ? `cancel server ${serverId} at the end of its billing cycle`
            : undefined;
      return action(ctx, {
        action: 'cancellation',
        serverId,
        value: type,
        call: (c) => setCancellation(c, serverId, type as never),
        ...(confirmWhat ? { confirm: confirmWhat } : {}),
      });
    },
  },
];
