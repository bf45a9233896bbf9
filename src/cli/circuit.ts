/**
 * `baremetal-exporter circuit status|close`: the remediation circuit breaker through the daemon's HTTP API.
 * `status` is `GET /api/v1/remediation/circuit` (the state store's breaker, as the engine consults it, for a
 * reader or an operator), `close` is `POST /api/v1/remediation/circuit/close`.
 */
import type { Writable } from 'node:stream';
import { parseArgs } from 'node:util';
import { type OutputFormat, render, table } from './api/output.js';
import { daemonSettings } from './cli-config.js';
import {
  DAEMON_OPTIONS,
  DAEMON_OPTIONS_HELP,
  DaemonClient,
  type DaemonFlags,
  outputOf,
  runDaemonCommand,
  usageError,
  valueOptions,
} from './daemon-client.js';

export const CIRCUIT_HELP = `Usage: baremetal-exporter circuit <command> [options]

The remediation circuit breaker of each account, through the daemon's HTTP API. Commands:
  status [--account A]
      open or closed per account, since when and why (GET /api/v1/remediation/circuit; a reader or an operator)
  close [--account A] --reason TEXT
      close the account's breaker (POST /api/v1/remediation/circuit/close); --account may be left out with one
      account; --reason is required and journaled with the closing principal; from a principal with
      require_approval it awaits a second operator's approval (actions approve ID)

${DAEMON_OPTIONS_HELP}
`;

const SUB_OPTIONS = {
  status: { account: { type: 'string' } },
  close: { account: { type: 'string' }, reason: { type: 'string' } },
} as const;

export const CIRCUIT_SUBCOMMANDS = Object.keys(SUB_OPTIONS);
/** Every option of `circuit` that takes a value (completion). */
export const CIRCUIT_VALUE_OPTIONS = valueOptions({ ...DAEMON_OPTIONS, ...SUB_OPTIONS.status, ...SUB_OPTIONS.close });
/** The option names of `circuit SUB` (completion). */
export const circuitOptions = (sub: string): string[] =>
  Object.keys({ ...DAEMON_OPTIONS, ...(SUB_OPTIONS[sub as keyof typeof SUB_OPTIONS] ?? {}) }).map((o) => `--${o}`);

/** One account's breaker as `GET /api/v1/remediation/circuit` answers it (times ISO-8601). */
interface Breaker {
  account: string;
  open: boolean;
  openedAt: string | null;
  closedAt: string | null;
  message: string | null;
}

type Flags = DaemonFlags & { account?: string; reason?: string };

async function status(client: DaemonClient, flags: Flags, format: OutputFormat): Promise<string> {
  const reply = await client.get('/api/v1/remediation/circuit', { account: flags.account });
  const breakers = ((reply.body as { breakers?: Breaker[] } | undefined)?.breakers ?? []) as Breaker[];
  return render(format, {
    data: reply.body,
    table: table(
      ['ACCOUNT', 'BREAKER', 'SINCE', 'WHY'],
      breakers.map((b) => [
        b.account,
        b.open ? 'open (power actions denied)' : 'closed',
        (b.open ? b.openedAt : b.closedAt) ?? '-',
        b.message ?? '-',
      ]),
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
