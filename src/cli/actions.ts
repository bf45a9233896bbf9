/**
 * `baremetal-exporter actions list|show|approve|deny|withdraw`: the remediation journal and the four-eyes
 * approvals through the daemon's HTTP API (`GET /api/v1/actions`, `POST /api/v1/actions/{id}/approve|deny|
 * withdraw`), as amtool is Alertmanager's. Whatever the daemon refuses (a 403 to the requester approving its own
 * request, a 409 `BM_ERR_APPROVED_NOT_SENT` when a guard denied the approved execution) is exit 1 with its message.
 */
import type { Writable } from 'node:stream';
import { type ParseArgsOptionsConfig, parseArgs } from 'node:util';
import { parseDuration } from '../config/formats.js';
import { VERIFICATIONS } from '../store/rows.js';
import { type OutputFormat, render, table } from './api/output.js';
import {
  DAEMON_OPTIONS,
  DAEMON_OPTIONS_HELP,
  DaemonClient,
  type DaemonFlags,
  extendedOutput,
  outputOf,
  runDaemonCommand,
  usageError,
  valueOptions,
} from './daemon-client.js';
import { daemonSettings } from './cli-config.js';

/** The most rows `GET /api/v1/actions` returns (its `limit`), the window `actions show` looks in. */
const MAX_LIMIT = 1000;

type Flags = DaemonFlags & Record<string, string | boolean | undefined>;

interface Subcommand {
  /** its words after `actions`, as the usage shows them */
  synopsis: string;
  summary: string;
  /** its own options and their help lines */
  options: ParseArgsOptionsConfig;
  optionsHelp: string[];
  /** whether it takes the journal entry's ID */
  id: boolean;
  /** `extended`: amtool's `-o extended`, every column and nothing cut */
  run(
    client: DaemonClient,
    id: string | undefined,
    flags: Flags,
    format: OutputFormat,
    extended: boolean,
  ): Promise<string>;
}

const reasonOption = { reason: { type: 'string' } } as const;

/** The journal as `GET /api/v1/actions` answers it (times ISO-8601). */
interface Row {
  id: number;
  account: string;
  createdAt: string;
  completedAt: string | null;
  source: string;
  action: string;
  serverId: string | null;
  ip: string | null;
  value: string | null;
  decision: string;
  principal: string | null;
  approver: string | null;
  reason: string | null;
  message: string | null;
  verification: string | null;
}

const rowsOf = (body: unknown): Row[] => ((body as { actions?: Row[] } | undefined)?.actions ?? []) as Row[];

/** `2026-11-27T00:31:44.123Z` → `2026-11-27T00:31:44Z`: ISO-8601 still, to the second, for a table cell. */
const shortTime = (iso: string | null) => (iso ? iso.replace(/\.\d+Z$/, 'Z') : '-');

function rowsTable(rows: Row[], extended: boolean): string {
  const target = (r: Row) => [r.serverId, r.ip, r.value].filter((v) => v !== null && v !== '').join(' ') || '-';
  if (extended)
    return table(
      [
        'ID',
        'CREATED',
        'COMPLETED',
        'ACCOUNT',
        'SOURCE',
        'TARGET',
        'ACTION',
        'DECISION',
        'VERIFICATION',
        'PRINCIPAL',
        'APPROVER',
        'REASON',
        'MESSAGE',
      ],
      rows.map((r) => [
        String(r.id),
        shortTime(r.createdAt),
        shortTime(r.completedAt),
        r.account,
        r.source,
        target(r),
        r.action,
        r.decision,
        r.verification ?? '-',
        r.principal ?? '-',
        r.approver ?? '-',
        r.reason ?? '-',
        r.message ?? '-',
      ]),
      { wide: true },
    );
  return table(
    ['ID', 'CREATED', 'ACCOUNT', 'TARGET', 'ACTION', 'DECISION', 'VERIFICATION', 'PRINCIPAL', 'APPROVER', 'REASON'],
    rows.map((r) => [
      String(r.id),
      shortTime(r.createdAt),
      r.account,
      target(r),
      r.action,
      r.decision,
      r.verification ?? '-',
      r.principal ?? '-',
      r.approver ?? '-',
      r.reason ?? '-',
    ]),
  );
}

/**
 * Every field of one row, one per line, nothing cut (a message is read in full here). Times in ISO-8601: a field
 * the API gives in Unix milliseconds beside its ISO twin (`approvedAt` and `approvedAtIso`) is shown once, as
 * the twin says it; `alertLabels` stands for the `labels` text.
 */
function rowDetail(row: Record<string, unknown>): string {
  const shown = { ...row };
  for (const key of Object.keys(row))
    if (key.endsWith('AtIso')) {
      shown[key.slice(0, -3)] = row[key];
      delete shown[key];
    }
  if (shown.alertLabels !== undefined) delete shown.labels;
  const entries = Object.entries(shown).filter(([, v]) => v !== null && v !== undefined && v !== '');
  const width = Math.max(...entries.map(([k]) => k.length));
  return `${entries.map(([k, v]) => `${`${k}:`.padEnd(width + 1)} ${typeof v === 'string' ? v : JSON.stringify(v)}`).join('\n')}\n`;
}

/** The reply's `message` (what the daemon says was done) for people, the whole reply for machines. */
const said = (format: OutputFormat, body: unknown) =>
  render(format, { data: body, table: String((body as { message?: unknown })?.message ?? '') });

/** A settling call's body: `{"reason"}` when one was given. */
const reasonBody = (flags: Flags) => (typeof flags.reason === 'string' ? { reason: flags.reason } : {});

const SUBCOMMANDS: Record<string, Subcommand> = {
  list: {
    synopsis:
      'list [--decision D] [--verification V] [--server ID] [--principal P] [--approver P] [--account A] [--action A] [--since 24h] [--limit N] [-o extended]',
    summary: 'the journal, newest first (GET /api/v1/actions); every filter given must match',
    options: {
      decision: { type: 'string' },
      verification: { type: 'string' },
      server: { type: 'string' },
      principal: { type: 'string' },
      approver: { type: 'string' },
      account: { type: 'string' },
      action: { type: 'string' },
      since: { type: 'string' },
      limit: { type: 'string' },
    },
    optionsHelp: [
      '--decision D     a decision (awaiting_approval, executed, denied_by_approver …) or executing',
      `--verification V whether an executed action helped: ${VERIFICATIONS.join(', ')}`,
      '--server ID      the server id',
      '--principal P    who asked',
      "--approver P     who approved or denied, or withdrew an alert's request",
      '--account A      the account',
      '--action A       the action (powercycle, poweron, poweroff, firewall_state …)',
      '--since D        rows created within this Prometheus duration back from now (24h, 1h30m; at most 365d)',
      `--limit N        at most N rows, 1 to ${MAX_LIMIT} (default 100)`,
      '-o extended      every column (completion, source, message), nothing cut',
    ],
    id: false,
    async run(client, _id, flags, format, extended) {
      const limit = flags.limit as string | undefined;
      if (limit !== undefined && !(/^[1-9][0-9]{0,3}$/.test(limit) && Number(limit) <= MAX_LIMIT))
        throw usageError(`--limit: a whole number from 1 to ${MAX_LIMIT} (got ${JSON.stringify(limit)})`);
      const verification = flags.verification as string | undefined;
      if (verification !== undefined && !(VERIFICATIONS as readonly string[]).includes(verification))
        throw usageError(`--verification: one of ${VERIFICATIONS.join(', ')} (got ${JSON.stringify(verification)})`);
      const since = flags.since as string | undefined;
      if (since !== undefined && parseDuration(since) === undefined)
        throw usageError(
          `--since: a duration in Prometheus's format such as 24h or 1h30m (got ${JSON.stringify(since)})`,
        );
      const reply = await client.get('/api/v1/actions', {
        decision: flags.decision as string | undefined,
        verification: flags.verification as string | undefined,
        server_id: flags.server as string | undefined,
        principal: flags.principal as string | undefined,
        approver: flags.approver as string | undefined,
        account: flags.account as string | undefined,
        action: flags.action as string | undefined,
        since,
        limit,
      });
      return render(format, { data: reply.body, table: rowsTable(rowsOf(reply.body), extended) });
    },
  },
  show: {
    synopsis: 'show ID',
    summary: 'one journal entry, every field (GET /api/v1/actions/ID)',
    options: {},
    optionsHelp: [],
    id: true,
    async run(client, id, _flags, format) {
      const row = (await client.get(`/api/v1/actions/${id}`)).body as Record<string, unknown>;
      return render(format, { data: row, table: rowDetail(row) });
    },
  },
  approve: {
    synopsis: 'approve ID [--reason TEXT]',
    summary: "approve another principal's request awaiting approval; it runs through the guards again",
    options: reasonOption,
    optionsHelp: ['--reason TEXT    why (journaled as approverReason, at most 200 characters)'],
    id: true,
    async run(client, id, flags, format) {
      return said(format, (await client.post(`/api/v1/actions/${id}/approve`, reasonBody(flags))).body);
    },
  },
  deny: {
    synopsis: 'deny ID --reason TEXT',
    summary: "deny another principal's request awaiting approval; nothing is sent",
    options: reasonOption,
    optionsHelp: ['--reason TEXT    why (required; journaled as approverReason, at most 200 characters)'],
    id: true,
    async run(client, id, flags, format) {
      if (typeof flags.reason !== 'string') throw usageError('actions deny: --reason TEXT is required: say why');
      const body = (await client.post(`/api/v1/actions/${id}/deny`, reasonBody(flags))).body;
      return said(format, body);
    },
  },
  withdraw: {
    synopsis: 'withdraw ID [--reason TEXT]',
    summary: "withdraw your own request awaiting approval, or an alert's in your accounts; nothing is sent",
    options: reasonOption,
    optionsHelp: ['--reason TEXT    why (at most 200 characters)'],
    id: true,
    async run(client, id, flags, format) {
      return said(format, (await client.post(`/api/v1/actions/${id}/withdraw`, reasonBody(flags))).body);
    },
  },
};

/** `actions --help`. */
export const ACTIONS_HELP = `Usage: baremetal-exporter actions <command> [options]

The remediation journal and its approvals, through the daemon's HTTP API. Commands:
${Object.values(SUBCOMMANDS)
  .map((s) => `  ${s.synopsis}\n      ${s.summary}`)
  .join('\n')}

${DAEMON_OPTIONS_HELP}
`;

const subHelp = (s: Subcommand) =>
  `Usage: baremetal-exporter actions ${s.synopsis}\n\n${s.summary}.\n${s.optionsHelp.length ? `\n${s.optionsHelp.map((l) => `  ${l}`).join('\n')}\n` : ''}\n${DAEMON_OPTIONS_HELP}\n`;

/** The option names of `actions SUB` (completion). */
export const actionsOptions = (sub: string): string[] =>
  Object.keys({ ...DAEMON_OPTIONS, ...(SUBCOMMANDS[sub]?.options ?? {}) }).map((o) => `--${o}`);
export const ACTIONS_SUBCOMMANDS = Object.keys(SUBCOMMANDS);
/** Every option of `actions` that takes a value (completion). */
export const ACTIONS_VALUE_OPTIONS = valueOptions(
  Object.assign({}, DAEMON_OPTIONS, ...Object.values(SUBCOMMANDS).map((s) => s.options)),
);

/** Runs `actions …`; resolves with the exit code. */
export async function runActions(
  args: string[],
  io: { stdout: Writable; stderr: Writable } = process,
  env: NodeJS.ProcessEnv = process.env,
): Promise<number> {
  let format: OutputFormat | undefined;
  return runDaemonCommand(
    io,
    async () => {
      const [sub, ...rest] = args;
      if (sub === undefined || sub === '--help' || sub === '-h' || sub === 'help') {
        if (sub === undefined) throw usageError(`actions: expected a command: ${ACTIONS_SUBCOMMANDS.join(', ')}`);
        return ACTIONS_HELP;
      }
      const command = SUBCOMMANDS[sub];
      if (!command)
        throw usageError(
          `actions: unknown command ${JSON.stringify(sub)}; expected one of ${ACTIONS_SUBCOMMANDS.join(', ')}`,
        );
      const { values, positionals } = parseArgs({
        args: rest,
        options: { ...DAEMON_OPTIONS, ...command.options },
        allowPositionals: true,
        strict: true,
      });
      const flags = values as Flags;
      if (flags.help) return subHelp(command);
      const settings = await daemonSettings(flags, env);
      format = outputOf(settings);
      const expected = command.id ? 1 : 0;
      if (positionals.length !== expected)
        throw usageError(
          `actions ${sub}: ${command.id ? 'expected one journal entry ID' : 'takes no arguments'} (usage: actions ${command.synopsis})`,
        );
      const id = positionals[0];
      if (id !== undefined && !/^[1-9][0-9]{0,15}$/.test(id))
        throw usageError(`actions ${sub}: ID must be a journal entry's number (got ${JSON.stringify(id)})`);
      const client = await DaemonClient.open(settings);
      try {
        return await command.run(client, id, flags, format, extendedOutput(settings));
      } finally {
        await client.close();
      }
    },
    () => format ?? 'table',
  );
}
