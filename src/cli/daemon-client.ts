/**
 * The client of the daemon's own HTTP API that `actions …` and `circuit …` share, like amtool's of
 * Alertmanager's: where the daemon is (`--daemon.url`), who calls (`--token.file` or BAREMETAL_TOKEN, sent as
 * `Authorization: Bearer …` and never printed), TLS for an https daemon, every call bounded in time and size.
 * Exit codes: 0 done, 1 the daemon refused (its own message printed), 2 a usage error or no reply at all.
 */
import { STATUS_CODES } from 'node:http';
import type { Writable } from 'node:stream';
import type { ParseArgsOptionsConfig } from 'node:util';
import { Agent, request } from 'undici';
import { readBoundedText, readProblem } from '../read-bounded-file.js';
import { createScrubber, type Scrubber } from '../scrub.js';
import { CliExit, oneLine } from './api/exit.js';
import { OUTPUT_FORMATS, type OutputFormat, render } from './api/output.js';
import { CLI_ENV, type DaemonSettings, type Setting, TOKEN_ENV } from './cli-config.js';

/** 0 done, 1 refused by the daemon (4xx/5xx), 2 usage error or connection failure. */
export const DAEMON_EXIT = { ok: 0, refused: 1, usage: 2 } as const;

export const usageError = (message: string) => new CliExit(DAEMON_EXIT.usage, message);

/**
 * The local listener: `web.listen_address` defaults to `0.0.0.0:9877` (config/schema.ts), reached on loopback.
 */
export const DEFAULT_DAEMON_URL = 'http://127.0.0.1:9877';
/** A call's deadline, connection to the last byte of the reply, ms. */
export const REQUEST_TIMEOUT_MS = 15_000;
/** The largest reply read, bytes (a journal page of 1000 rows, or a large /metrics). */
export const MAX_REPLY_BYTES = 16 * 1024 * 1024;

/** The options every daemon command takes, for node:util parseArgs (strict, no coercion). */
export const DAEMON_OPTIONS = {
  'daemon.url': { type: 'string' },
  'token.file': { type: 'string' },
  'tls.ca-file': { type: 'string' },
  'tls.cert-file': { type: 'string' },
  'tls.key-file': { type: 'string' },
  output: { type: 'string', short: 'o' },
  help: { type: 'boolean', short: 'h' },
} as const satisfies ParseArgsOptionsConfig;

/** `--name` (and `-x`) of each option of `config` that takes a value (shell completion skips its value). */
export function valueOptions(config: ParseArgsOptionsConfig): string[] {
  return Object.entries(config).flatMap(([name, o]) =>
    o.type === 'string' ? [`--${name}`, ...(o.short ? [`-${o.short}`] : [])] : [],
  );
}

/** Their help lines, for every command's `--help` and the usage. */
export const DAEMON_OPTIONS_HELP = `Options of every command:
  --daemon.url URL        the daemon (env ${CLI_ENV['daemon.url']}; default ${DEFAULT_DAEMON_URL}, the local listener)
  --token.file FILE       the principal's bearer token (env ${CLI_ENV['token.file']}, or the token itself in ${TOKEN_ENV})
  --tls.ca-file FILE      CA certificates (PEM) to verify an https daemon
  --tls.cert-file FILE    client certificate (PEM), with --tls.key-file
  --tls.key-file FILE     client key (PEM)
  -o, --output FORMAT     table (default), extended (every column, nothing cut), json or yaml (env ${CLI_ENV.output})
  -h, --help              show this help
A flag not given is read from its environment variable, else from the CLI config file
($XDG_CONFIG_HOME or ~/.config, then baremetal-exporter/cli.yml; its keys are the flags' names:
daemon.url, token.file, output, tls.ca-file, tls.cert-file, tls.key-file), as amtool does.
Exit codes: 0 done, 1 refused by the daemon (its message printed), 2 usage error or the daemon unreachable.`;

/** The parsed values of DAEMON_OPTIONS. */
export interface DaemonFlags {
  'daemon.url'?: string | undefined;
  'token.file'?: string | undefined;
  'tls.ca-file'?: string | undefined;
  'tls.cert-file'?: string | undefined;
  'tls.key-file'?: string | undefined;
  output?: string | undefined;
}

/** What `-o` may say to a daemon command: the api command's formats, and amtool's `extended` (a wider table). */
export const DAEMON_OUTPUT_FORMATS = [...OUTPUT_FORMATS, 'extended'] as const;

/**
 * The output format of `-o` (or its environment variable or config key), or a usage error naming where it came
 * from. `extended` is a table (`extendedOutput` says which: every column, nothing cut).
 */
export function outputOf(settings: DaemonSettings): OutputFormat {
  const format = settings.output?.value ?? 'table';
  if (!(DAEMON_OUTPUT_FORMATS as readonly string[]).includes(format))
    throw usageError(
      `${settings.output?.source ?? '--output'}: must be one of ${DAEMON_OUTPUT_FORMATS.join(', ')} (got ${JSON.stringify(format)})`,
    );
  return format === 'extended' ? 'table' : (format as OutputFormat);
}

/** Whether the settings ask for amtool's `-o extended`: the wide table. */
export const extendedOutput = (settings: DaemonSettings) => settings.output?.value === 'extended';

/** A reply of the daemon: its status and its body parsed as JSON (or the text, when it is not JSON). */
export interface DaemonReply {
  status: number;
  body: unknown;
  text: string;
}

/** The daemon answered, but not with a 2xx: exit 1 with its message. `body` is its JSON error reply. */
export class DaemonRefusal extends CliExit {
  constructor(
    message: string,
    readonly body: unknown,
  ) {
    super(DAEMON_EXIT.refused, message);
    this.name = 'DaemonRefusal';
  }
}

/** The files the flags name, read with the one bounded reader (regular file or pipe, byte cap, deadline). */
interface FlagFiles {
  token?: string;
  ca?: string;
  cert?: string;
  key?: string;
}

/** The text of the file a setting names, or a usage error naming where the setting came from and the file. */
async function readFlagFile(setting: Setting, kind: 'secret' | 'pem'): Promise<string> {
  try {
    return await readBoundedText(setting.value, kind);
  } catch (error) {
    throw usageError(`${setting.source}: cannot read ${setting.value} (${readProblem(error)})`);
  }
}

/** Reads every file the settings name, before the client is built. */
async function readFlagFiles(flags: DaemonSettings): Promise<FlagFiles> {
  const read = async (flag: 'token.file' | 'tls.ca-file' | 'tls.cert-file' | 'tls.key-file', kind: 'secret' | 'pem') =>
    flags[flag] === undefined ? undefined : readFlagFile(flags[flag], kind);
  const [token, ca, cert, key] = await Promise.all([
    read('token.file', 'secret'),
    read('tls.ca-file', 'pem'),
    read('tls.cert-file', 'pem'),
    read('tls.key-file', 'pem'),
  ]);
  return {
    ...(token !== undefined ? { token } : {}),
    ...(ca !== undefined ? { ca } : {}),
    ...(cert !== undefined ? { cert } : {}),
    ...(key !== undefined ? { key } : {}),
  };
}

/** The daemon's base URL, or a usage error naming where it came from: http or https, no credentials in it. */
function baseUrl(setting: Setting): URL {
  const where = setting.source;
  let url: URL;
  try {
    url = new URL(setting.value);
  } catch {
    // Not echoed: a text that does not parse may still hold a password.
    throw usageError(`${where}: not a URL`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw usageError(`${where}: must be http:// or https:// (got ${url.protocol})`);
  if (url.username || url.password)
    throw usageError(`${where}: must not carry credentials; give the token with --token.file`);
  if (url.search || url.hash) throw usageError(`${where}: must not have a query or a fragment`);
  return url;
}

/** The bearer token: from the token file the settings name, else the token TOKEN_ENV holds, else none. */
function tokenOf(flags: DaemonSettings, files: FlagFiles): string | undefined {
  const file = flags['token.file'];
  const token = file !== undefined ? files.token?.trim() : flags.token?.value.trim();
  if (token === '')
    throw usageError(file !== undefined ? `${file.source}: ${file.value} is empty` : `${TOKEN_ENV} is empty`);
  // A header cannot carry a line break or a control character; say so without echoing the token.
  if (token !== undefined && !/^[\x21-\x7e]+$/.test(token))
    throw usageError('the token holds spaces or characters a header cannot carry');
  return token;
}

/** The undici agent: deadlines, and the TLS files for an https daemon. */
function agentOf(url: URL, flags: DaemonSettings, files: FlagFiles): Agent {
  const ca = flags['tls.ca-file'];
  const cert = flags['tls.cert-file'];
  const key = flags['tls.key-file'];
  if ((cert === undefined) !== (key === undefined))
    throw usageError('--tls.cert-file and --tls.key-file: give both or neither');
  const tls = ca !== undefined || cert !== undefined;
  if (tls && url.protocol !== 'https:') throw usageError('--tls.* files need an https:// --daemon.url');
  return new Agent({
    headersTimeout: REQUEST_TIMEOUT_MS,
    bodyTimeout: REQUEST_TIMEOUT_MS,
    connectTimeout: REQUEST_TIMEOUT_MS,
    connect: {
      ...(files.ca !== undefined ? { ca: files.ca } : {}),
      ...(files.cert !== undefined ? { cert: files.cert } : {}),
      ...(files.key !== undefined ? { key: files.key } : {}),
    },
  });
}

/** The message of a refusal: the daemon's `message` (its JSON error reply), else an excerpt of the text. */
function refusalMessage(reply: DaemonReply): string {
  const body = reply.body as { message?: unknown; code?: unknown } | undefined;
  const said =
    typeof body?.message === 'string'
      ? `${body.message}${typeof body.code === 'string' ? ` (${body.code})` : ''}`
      : reply.text.slice(0, 200).replace(/\s+/g, ' ').trim();
  return `${reply.status} ${STATUS_CODES[reply.status] ?? ''}${said ? `: ${said}` : ''}`;
}

/** A client of one daemon; `close()` when done. */
export class DaemonClient {
  readonly #url: URL;
  readonly #token: string | undefined;
  readonly #agent: Agent;
  /** what every reply's text goes through before it is parsed or printed: the caller's token never comes back */
  readonly #scrub: Scrubber;

  private constructor(settings: DaemonSettings, files: FlagFiles) {
    this.#url = baseUrl(settings['daemon.url'] ?? { value: DEFAULT_DAEMON_URL, source: '--daemon.url' });
    this.#token = tokenOf(settings, files);
    this.#agent = agentOf(this.#url, settings, files);
    this.#scrub = createScrubber(this.#token === undefined ? [] : [this.#token]);
  }

  /**
   * A client for the settings (cli-config.ts's daemonSettings: flag, environment, config file): its files (token,
   * TLS) read first. Throws a usage error (exit 2).
   */
  static async open(settings: DaemonSettings): Promise<DaemonClient> {
    return new DaemonClient(settings, await readFlagFiles(settings));
  }

  /** `GET path` (with `query`, undefined values left out); throws DaemonRefusal for a non-2xx reply. */
  get(path: string, query: Record<string, string | undefined> = {}): Promise<DaemonReply> {
    const params = new URLSearchParams();
    for (const [k, v] of Object.entries(query)) if (v !== undefined) params.set(k, v);
    const search = params.size > 0 ? `?${params}` : '';
    return this.call('GET', `${path}${search}`);
  }

  /** `POST path` with the JSON `body`; throws DaemonRefusal for a non-2xx reply. */
  post(path: string, body: Record<string, unknown>): Promise<DaemonReply> {
    return this.call('POST', path, body);
  }

  async close(): Promise<void> {
    await this.#agent.close();
  }

  /**
   * One call, bounded by REQUEST_TIMEOUT_MS and MAX_REPLY_BYTES. No reply (refused connection, TLS, deadline):
   * exit 2 naming the URL; a non-2xx reply: DaemonRefusal with the daemon's message.
   */
  async call(method: 'GET' | 'POST', path: string, body?: Record<string, unknown>): Promise<DaemonReply> {
    // A daemon behind a path prefix (a reverse proxy) keeps it: `https://host/bm/` + `/api/v1/…`.
    const target = `${this.#url.origin}${this.#url.pathname.replace(/\/+$/, '')}${path}`;
    const where = `[${method}] "${target}"`;
    let reply: DaemonReply;
    try {
      const res = await request(target, {
        method,
        dispatcher: this.#agent,
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        headers: {
          accept: 'application/json, text/plain;q=0.9',
          ...(this.#token !== undefined ? { authorization: `Bearer ${this.#token}` } : {}),
          ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
        },
        ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
      });
      // Scrubbed before it is parsed (scrub.ts): a reply that echoes the token prints [REDACTED] in its place.
      const text = this.#scrub(await boundedText(res.body, where));
      let parsed: unknown;
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = undefined;
      }
      reply = { status: res.statusCode, body: parsed, text };
    } catch (error) {
      if (error instanceof CliExit) throw error;
      throw usageError(`${where}: no reply from the daemon: ${describeFailure(error)}`);
    }
    if (reply.status < 200 || reply.status > 299)
      throw new DaemonRefusal(`${where}: ${refusalMessage(reply)}`, reply.body);
    return reply;
  }
}

/** The body as text, at most MAX_REPLY_BYTES (a larger one is exit 2, the rest of it not read). */
async function boundedText(body: AsyncIterable<Buffer> & { destroy(): unknown }, where: string): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.length;
    if (size > MAX_REPLY_BYTES) {
      body.destroy();
      throw usageError(`${where}: the reply is larger than ${MAX_REPLY_BYTES} bytes`);
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** A transport failure in one line: its code (ECONNREFUSED, UND_ERR_CONNECT_TIMEOUT …) and message. */
function describeFailure(error: unknown): string {
  const e = error as { code?: unknown; name?: unknown; cause?: { code?: unknown; message?: unknown } };
  if (e?.name === 'TimeoutError') return `no reply within ${REQUEST_TIMEOUT_MS / 1000}s`;
  const code = typeof e?.code === 'string' ? e.code : typeof e?.cause?.code === 'string' ? e.cause.code : undefined;
  const message = oneLine(error);
  return code !== undefined && !message.includes(code) ? `${code}: ${message}` : message;
}

/**
 * Runs a daemon command: prints what `act` returns on stdout, a refusal or usage error as one line on
 * stderr (with `-o json|yaml`, a refusal's JSON reply also on stdout, `sent: false` included); the exit code.
 */
export async function runDaemonCommand(
  io: { stdout: Writable; stderr: Writable },
  act: () => Promise<string>,
  format: () => OutputFormat,
): Promise<number> {
  try {
    io.stdout.write(await act());
    return DAEMON_EXIT.ok;
  } catch (error) {
    if (error instanceof DaemonRefusal && error.body !== undefined) {
      let chosen: OutputFormat = 'table';
      try {
        chosen = format();
      } catch {}
      if (chosen !== 'table') io.stdout.write(render(chosen, { data: error.body, table: '' }));
    }
    io.stderr.write(`baremetal-exporter: ${oneLine(error)}\n`);
    if (error instanceof CliExit) return error.exitCode;
    const code = (error as { code?: unknown })?.code;
    return typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS_') ? DAEMON_EXIT.usage : DAEMON_EXIT.refused;
  }
}
