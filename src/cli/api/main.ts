/**
 * `baremetal-exporter api …`: every operation of the hosting API from the command line. Parses arguments
 * (node:util parseArgs, strict), resolves the command in the tree of commands.ts, loads the config as the
 * daemon does (`--config.file FILE`, or BAREMETAL_API_URL and BAREMETAL_API_KEY), runs the command and
 * renders its result. Returns the exit code: 0 success, 1 API or network error, 2 usage or validation
 * error, 3 refused by a safety check; errors go to stderr as one line.
 */
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { parseArgs } from 'node:util';
import { buildConfig, loadConfig } from '../../config/load.js';
import type { Config } from '../../config/types.js';
import { DEFAULT_POOL_LIMITS } from '../../store/postgres/bounds.js';
import { openStore } from '../../store/open.js';
import type { StateStore } from '../../store/store.js';
import { ID_PATTERN } from '../../http/schemas.js';
import { createLogger } from '../../logger.js';
import type { UpstreamClient } from '../../upstream/client.js';
import { clientFromConfig } from '../../upstream/from-config.js';
import { requireIp } from '../../upstream/params.js';
import { LEAVES } from './commands.js';
import type { Leaf } from './leaf.js';
import type { CliIo, CommandContext } from './context.js';
import { CliExit, EXIT, exitCodeOf, oneLine, usage } from './exit.js';
import { OUTPUT_FORMATS, render, type OutputFormat } from './output.js';

interface OptionSpec {
  type: 'string' | 'boolean';
  short?: string;
  /** the value's placeholder in help */
  arg?: string;
  help: string;
}

/** Every option of `api`; which command accepts which is said by COMMON, WRITE and each leaf's `options`. */
export const OPTIONS: Record<string, OptionSpec> = {
  'config.file': {
    type: 'string',
    arg: 'FILE',
    help: 'config file, as for "run" (default: BAREMETAL_API_URL and BAREMETAL_API_KEY)',
  },
  account: { type: 'string', arg: 'NAME', help: 'account to use (config `accounts`); optional when one is configured' },
  output: { type: 'string', short: 'o', arg: 'table|json|yaml', help: 'output format (default table)' },
  help: { type: 'boolean', short: 'h', help: 'show this help' },
  'dry-run': { type: 'boolean', help: 'print the request (path and parameters, never the key) and send nothing' },
  yes: {
    type: 'boolean',
    short: 'y',
    help: 'confirm without a terminal (needed for destructive writes when stdin is not a TTY)',
  },
  out: { type: 'string', arg: 'FILE', help: 'write the file here (mode 0600)' },
  type: { type: 'string', arg: 'T', help: 'graph type: port_bits, port_percent, port_errors, port_upkts' },
  scale: { type: 'string', arg: 'S', help: 'graph: day, week, month; firewall history: hour, day, week' },
  ip: { type: 'string', arg: 'IP', help: 'only this IP (default: every IP of the service)' },
  os: { type: 'string', arg: 'OS_ID', help: 'an id of "api os list" (checked before sending)' },
  'post-install': {
    type: 'string',
    arg: 'SCRIPT.sh',
    help: 'post-install BASH script (checked with bash -n before sending)',
  },
  'password-file': {
    type: 'string',
    arg: 'FILE',
    help: 'write the root password here (created 0600; an existing file is never overwritten)',
  },
  'show-password': { type: 'boolean', help: 'put the root password in the output even when stdout is not a terminal' },
  force: {
    type: 'boolean',
    help: "power: send even while the account's circuit breaker is open or the server's cap is reached (journaled as forced)",
  },
  wait: { type: 'boolean', help: 'inside the 2-minute window: wait until the next change is possible and retry once' },
};
const COMMON = ['config.file', 'account', 'output', 'help'];
const WRITE = ['dry-run', 'yes'];

/** Options a leaf accepts. */
export const optionsOf = (leaf: Leaf): string[] => [...leaf.options, ...(leaf.write ? WRITE : []), ...COMMON];

const flagText = (name: string) => {
  const spec = OPTIONS[name]!;
  return `${spec.short ? `-${spec.short}, ` : ''}--${name}${spec.arg ? ` ${spec.arg}` : ''}`;
};
const optionLines = (names: string[]) => {
  const width = Math.max(...names.map((n) => flagText(n).length));
  return names.map((n) => `  ${flagText(n).padEnd(width)}  ${OPTIONS[n]!.help}`).join('\n');
};
const synopsis = (leaf: Leaf) => [...leaf.path, ...leaf.args, ...(leaf.synopsis ? [leaf.synopsis] : [])].join(' ');
const usageOf = (leaf: Leaf) => `baremetal-exporter api ${synopsis(leaf)} [options]`;

/** Help of a leaf: usage, summary, its options, an example. */
export function leafHelp(leaf: Leaf): string {
  return `Usage: ${usageOf(leaf)}\n\n${leaf.summary}\n\nOptions:\n${optionLines(optionsOf(leaf))}\n\nExample:\n  ${leaf.example}\n`;
}

/** Help of a group (`[]` is `api` itself): its commands, an example, and for `api` the exit codes. */
export function groupHelp(prefix: string[]): string {
  const leaves = LEAVES.filter((l) => prefix.every((w, i) => l.path[i] === w));
  const lines = leaves.map((l) => [synopsis(l), l.summary] as const);
  const width = Math.max(...lines.map(([u]) => u.length));
  const root = prefix.length === 0;
  return [
    `Usage: baremetal-exporter api ${prefix.length ? `${prefix.join(' ')} ` : ''}<command> [options]`,
    '',
    root ? 'Every operation of the hosting API, validated before anything is sent. Commands:' : 'Commands:',
    ...lines.map(([u, s]) => `  ${u.padEnd(width)}  ${s}`),
    '',
    `Common options:\n${optionLines(COMMON)}`,
    ...(root
      ? [
          '',
          `Writes also take:\n${optionLines(WRITE)}`,
          '',
          'Exit codes: 0 success, 1 API or network error, 2 usage or validation error, 3 refused by a safety check.',
        ]
      : []),
    '',
    `Example:\n  ${leaves[0]!.example}`,
    `"baremetal-exporter api ${prefix.length ? `${prefix.join(' ')} ` : ''}<command> --help" shows a command's options.`,
    '',
  ].join('\n');
}

/** The leaf named by the leading positionals, or the deepest group they name. */
export function resolve(positionals: string[]): { leaf: Leaf; args: string[] } | { group: string[]; unknown?: string } {
  const leaf = LEAVES.find((l) => l.path.every((w, i) => positionals[i] === w));
  if (leaf) return { leaf, args: positionals.slice(leaf.path.length) };
  const group: string[] = [];
  for (const word of positionals) {
    if (!LEAVES.some((l) => [...group, word].every((w, i) => l.path[i] === w))) return { group, unknown: word };
    group.push(word);
  }
  return { group };
}

/** The process's own streams, clock and sleep. */
export function processIo(): CliIo {
  return {
    stdout: process.stdout,
    stderr: process.stderr,
    stdin: process.stdin,
    stdinIsTTY: process.stdin.isTTY === true,
    stdoutIsTTY: process.stdout.isTTY === true,
    env: process.env,
    now: Date.now,
    sleep: (ms) => delay(ms),
  };
}

/** The config as the daemon reads it; without a file, a minimal one from the environment. */
async function loadCliConfig(file: string | undefined, env: NodeJS.ProcessEnv): Promise<Config> {
  if (file !== undefined) return loadConfig(file, env);
  if (!env.BAREMETAL_API_URL || !env.BAREMETAL_API_KEY)
    throw usage('no API configured: give --config.file FILE, or set BAREMETAL_API_URL and BAREMETAL_API_KEY');
  return buildConfig({}, { BAREMETAL_API_URL: env.BAREMETAL_API_URL, BAREMETAL_API_KEY: env.BAREMETAL_API_KEY });
}

/**
 * The daemon's journal for a write, so that its budget and cooldowns see the CLI's actions: with
 * `database.url` the shared PostgreSQL one, which must answer within its connect timeout (else CliExit: an
 * action the daemons could not see is not sent); else the SQLite journal when `state_dir` already holds one
 * (`fromFile`: a config file was given; the CLI never creates a journal).
 */
async function openCliJournal(config: Config, fromFile: boolean): Promise<StateStore | undefined> {
  // The CLI never creates a SQLite journal: it writes to the daemon's when state_dir already holds one.
  if (config.database.kind === 'sqlite' && !(fromFile && existsSync(join(config.stateDir, 'journal.db'))))
    return undefined;
  const store = await openStore(config, {
    logger: createLogger('silent'),
    postgres: { retryMs: 60_000, limits: { max: 2 } },
  });
  if (store.kind === 'sqlite') return store;
  // A timer that keeps the process alive (the store's own retry timers do not) while the first attempt runs;
  // cleared once the race is over (its AbortError then goes to the race, which has settled and ignores it).
  const timer = new AbortController();
  const timeout = delay(DEFAULT_POOL_LIMITS.connectTimeoutMs + 1_000, false, { signal: timer.signal });
  const open = await Promise.race([store.opened, timeout]).finally(() => timer.abort());
  if (open) return store;
  const reason = store.unavailable ?? 'it does not answer';
  await store.close();
  throw new CliExit(
    EXIT.upstream,
    `the state database does not answer (${reason}): not sending an action the daemons' budget and cooldowns would not see`,
  );
}

const ID = new RegExp(ID_PATTERN);

/**
 * Checks the ids and IPs a command names with the daemon's own shapes (ID_PATTERN of its HTTP API, the
 * upstream IP check) before anything is sent: `100001;id` or `../../x` is a usage error (exit 2).
 */
function checkTargets(leaf: Leaf, args: string[], os: unknown): void {
  const where = leaf.path.join(' ');
  const ids: Array<[string, unknown]> = leaf.args.flatMap((name, i) =>
    name === 'SERVER_ID' || name === 'ID' ? [[name, args[i]] as [string, unknown]] : [],
  );
  if (os !== undefined) ids.push(['--os', os]);
  for (const [name, value] of ids)
    if (typeof value !== 'string' || !ID.test(value))
      throw usage(
        `${where}: ${name} must be an id as the API gives them: a letter or digit, then up to 63 letters, digits, _ . : or - (got ${JSON.stringify(value)})`,
      );
  const ip = leaf.args.indexOf('IP');
  if (ip >= 0) requireIp(where, args[ip]!);
}

/** Runs `baremetal-exporter api <argv…>`; resolves with the exit code. */
export async function runApi(argv: string[], io: CliIo = processIo()): Promise<number> {
  let client: UpstreamClient | undefined;
  let store: StateStore | undefined;
  try {
    const options = Object.fromEntries(
      Object.entries(OPTIONS).map(([name, o]) => [name, { type: o.type, ...(o.short ? { short: o.short } : {}) }]),
    );
    const { values, positionals } = parseArgs({ args: argv, options, allowPositionals: true, strict: true });
    const found = resolve(positionals);
    if ('group' in found) {
      const help = groupHelp(found.group);
      if (values.help === true && found.unknown === undefined) {
        io.stdout.write(help);
        return EXIT.ok;
      }
      const next = [
        ...new Set(
          LEAVES.filter((l) => found.group.every((w, i) => l.path[i] === w)).map((l) => l.path[found.group.length]!),
        ),
      ];
      const where = ['api', ...found.group].join(' ');
      throw usage(
        `${where}: ${found.unknown !== undefined ? `unknown command "${found.unknown}"` : 'a command is required'}; one of ${next.join(', ')} (see "baremetal-exporter ${where} --help")`,
      );
    }
    const { leaf, args } = found;
    if (values.help === true) {
      io.stdout.write(leafHelp(leaf));
      return EXIT.ok;
    }
    const allowed = optionsOf(leaf);
    const extra = Object.keys(values).find((name) => !allowed.includes(name));
    if (extra !== undefined) throw usage(`${leaf.path.join(' ')}: unknown option --${extra} (see --help)`);
    if (args.length !== leaf.args.length)
      throw usage(`${leaf.path.join(' ')}: expected ${leaf.args.length} argument(s): ${usageOf(leaf)}`);
    checkTargets(leaf, args, values.os);
    const format = (values.output ?? 'table') as OutputFormat;
    if (!OUTPUT_FORMATS.includes(format))
      throw usage(`--output must be one of ${OUTPUT_FORMATS.join(', ')} (got ${JSON.stringify(values.output)})`);
    const file = values['config.file'] as string | undefined;
    const config = await loadCliConfig(file, io.env);
    const names = config.accounts.map((a) => a.name);
    const wanted = values.account === undefined ? (names.length === 1 ? names[0] : undefined) : String(values.account);
    const account = config.accounts.find((a) => a.name === wanted);
    if (!account)
      throw usage(
        `--account: ${wanted === undefined ? 'required with several accounts' : `unknown account ${JSON.stringify(wanted)}`} (configured: ${names.join(', ')})`,
      );
    client = clientFromConfig(account.upstream);
    let opening: Promise<StateStore | undefined> | undefined;
    const ctx: CommandContext = {
      io,
      values,
      args,
      format,
      config,
      client,
      account: account.name,
      store: () => (opening ??= openCliJournal(config, file !== undefined).then((opened) => (store = opened))),
    };
    io.stdout.write(render(format, await leaf.run(ctx)));
    return EXIT.ok;
  } catch (error) {
    const line = oneLine(error);
    io.stderr.write(`baremetal-exporter api: ${client ? client.scrub(line) : line}\n`);
    return exitCodeOf(error);
  } finally {
    await store?.close();
    await client?.close();
  }
}
