/**
 * `baremetal-exporter circuit status|close`: the remediation circuit breaker through the daemon's HTTP API.
 * `close` is `POST /api/v1/remediation/circuit/close`; `status` reads the gauge
 * `baremetal_remediation_circuit_open{account}` of the daemon's metrics, since the daemon has no endpoint of its
 * own for it (the leader refreshes the gauge every 10 s from the state store).
 */
import type { Writable } from 'node:stream';
import { parseArgs } from 'node:util';
import { CliExit } from './api/exit.js';
import { type OutputFormat, render, table } from './api/output.js';
import {
  DAEMON_EXIT,
  DAEMON_OPTIONS,
  DAEMON_OPTIONS_HELP,
  DaemonClient,
  type DaemonFlags,
  outputOf,
  runDaemonCommand,
  usageError,
  valueOptions,
} from './daemon-client.js';
import { daemonSettings } from './cli-config.js';

const GAUGE = 'baremetal_remediation_circuit_open';

export const CIRCUIT_HELP = `Usage: baremetal-exporter circuit <command> [options]

The remediation circuit breaker of each account, through the daemon's HTTP API. Commands:
  status [--account A] [--web.telemetry-path PATH]
      open or closed per account, from the daemon's ${GAUGE} (its metrics, default /metrics)
  close [--account A] --reason TEXT
      close the account's breaker (POST /api/v1/remediation/circuit/close); --account may be left out with one
      account; --reason is required and journaled with the closing principal

${DAEMON_OPTIONS_HELP}
`;

const SUB_OPTIONS = {
  status: { account: { type: 'string' }, 'web.telemetry-path': { type: 'string' } },
  close: { account: { type: 'string' }, reason: { type: 'string' } },
} as const;

export const CIRCUIT_SUBCOMMANDS = Object.keys(SUB_OPTIONS);
/** Every option of `circuit` that takes a value (completion). */
export const CIRCUIT_VALUE_OPTIONS = valueOptions({ ...DAEMON_OPTIONS, ...SUB_OPTIONS.status, ...SUB_OPTIONS.close });
/** The option names of `circuit SUB` (completion). */
export const circuitOptions = (sub: string): string[] =>
  Object.keys({ ...DAEMON_OPTIONS, ...(SUB_OPTIONS[sub as keyof typeof SUB_OPTIONS] ?? {}) }).map((o) => `--${o}`);

/** Each account's breaker as the exposition says it: `{account, open}`, in the order exposed. */
export function breakersOf(exposition: string): Array<{ account: string; open: boolean }> {
  const breakers = [];
  const line = new RegExp(`^${GAUGE}\\{(?:[^}]*,)?account="((?:[^"\\\\]|\\\\.)*)"[^}]*\\}\\s+(\\S+)`);
  for (const text of exposition.split('\n')) {
    const m = line.exec(text);
    if (m) breakers.push({ account: m[1]!.replace(/\\(.)/g, '$1'), open: Number(m[2]) === 1 });
  }
  return breakers;
}

type Flags = DaemonFlags & { account?: string; reason?: string; 'web.telemetry-path'?: string };

async function status(client: DaemonClient, flags: Flags, format: OutputFormat): Promise<string> {
  const path = flags['web.telemetry-path'] ?? '/metrics';
  if (!path.startsWith('/'))
    throw usageError(`--web.telemetry-path: must start with "/" (got ${JSON.stringify(path)})`);
  const reply = await client.call('GET', path);
  const all = breakersOf(reply.text);
  const breakers = flags.account === undefined ? all : all.filter((b) => b.account === flags.account);
  if (breakers.length === 0)
    throw new CliExit(
      DAEMON_EXIT.refused,
      `the daemon's ${path} has no ${GAUGE}${flags.account === undefined ? '' : ` for account ${flags.account}`}: remediation is off there, or it is a replica that does not lead`,
    );
  return render(format, {
    data: { breakers },
    table: table(
      ['ACCOUNT', 'BREAKER'],
      breakers.map((b) => [b.account, b.open ? 'open (power actions denied)' : 'closed']),
    ),
  });
}

async function close(client: DaemonClient, flags: Flags, format: OutputFormat): Promise<string> {
  if (flags.reason === undefined) throw usageError('circuit close: --reason TEXT is required: say why');
  const reply = await client.post('/api/v1/remediation/circuit/close', {
    ...(flags.account !== undefined ? { account: flags.account } : {}),
    reason: flags.reason,
  });
  const body = reply.body as { account?: string; id?: number; message?: string; was_open?: boolean };
  const text = `account ${body.account}: ${body.message ?? ''}${body.was_open === false ? ' (it was not open)' : ''} (journal entry ${body.id})`;
  return render(format, { data: body, table: text });
}

/** Runs `circuit …`; resolves with the exit code. */
export async function runCircuit(
  args: string[],
  io: { stdout: Writable; stderr: Writable } = process,
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  let format: OutputFormat | undefined;
  return runDaemonCommand(
    io,
    async () => {
      const [sub, ...rest] = args;
      if (sub === '--help' || sub === '-h' || sub === 'help') return CIRCUIT_HELP;
      if (sub !== 'status' && sub !== 'close')
        throw usageError(
          `circuit: expected a command: status or close (got ${sub === undefined ? 'nothing' : JSON.stringify(sub)})`,
        );
      const { values, positionals } = parseArgs({
        args: rest,
        options: { ...DAEMON_OPTIONS, ...SUB_OPTIONS[sub] },
        allowPositionals: true,
        strict: true,
      });
      if (values.help) return CIRCUIT_HELP;
      const settings = await daemonSettings(values, env);
      format = outputOf(settings);
      if (positionals.length > 0)
        throw usageError(`circuit ${sub}: takes no arguments (got ${JSON.stringify(positionals[0])})`);
      const client = await DaemonClient.open(settings);
      try {
        return await (sub === 'status' ? status : close)(client, values as Flags, format);
      } finally {
        await client.close();
      }
    },
    () => format ?? 'table',
  );
}
