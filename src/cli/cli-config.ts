/**
 * Where `actions …` and `circuit …` find the daemon, their token and their output format when a flag does not say,
 * as amtool does: first the flag, then the environment (BAREMETAL_DAEMON_URL, BAREMETAL_TOKEN_FILE or
 * BAREMETAL_TOKEN, BAREMETAL_OUTPUT), then the CLI's own config file in the user's config directory
 * (`baremetal-exporter/cli.yml` under `$XDG_CONFIG_HOME`, else under `$HOME/.config`), whose keys are the flags'
 * names:
 *
 * ```yaml
 * daemon.url: https://exporter.example.net:9877
 * token.file: ~/.config/baremetal-exporter/token   # relative paths are from the file's directory
 * output: table
 * ```
 *
 * A missing file is no error; an unreadable or malformed one, an unknown key or a value that is not a string is a
 * usage error (exit 2) naming the file, line and key.
 */
import { homedir } from 'node:os';
import { dirname, isAbsolute, join, resolve } from 'node:path';
import { isMap, isScalar, LineCounter, parseDocument } from 'yaml';
import { readBoundedText, readProblem } from '../read-bounded-file.js';
import { CliExit } from './api/exit.js';

/** The environment variables of each setting, in the order they are read. */
export const CLI_ENV = {
  'daemon.url': 'BAREMETAL_DAEMON_URL',
  'token.file': 'BAREMETAL_TOKEN_FILE',
  output: 'BAREMETAL_OUTPUT',
} as const;
/** The environment variable holding the bearer token itself (not a file), read when no token file is named. */
export const TOKEN_ENV = 'BAREMETAL_TOKEN';

/** The keys the CLI config file may have: the names of the flags they stand for. */
export const CLI_CONFIG_KEYS = [
  'daemon.url',
  'token.file',
  'output',
  'tls.ca-file',
  'tls.cert-file',
  'tls.key-file',
] as const;
export type CliConfigKey = (typeof CLI_CONFIG_KEYS)[number];
/** The keys that name a file: a relative path is read from the config file's directory. */
const FILE_KEYS: ReadonlySet<CliConfigKey> = new Set(['token.file', 'tls.ca-file', 'tls.cert-file', 'tls.key-file']);

/** The path of the CLI config file for this environment, or undefined when there is no home to look in. */
export function cliConfigPath(env: NodeJS.ProcessEnv): string | undefined {
  const xdg = env.XDG_CONFIG_HOME;
  // The XDG base directory specification: a relative XDG_CONFIG_HOME is invalid and ignored.
  if (xdg !== undefined && isAbsolute(xdg)) return join(xdg, 'baremetal-exporter', 'cli.yml');
  const home = env.HOME !== undefined && env.HOME !== '' ? env.HOME : homedir();
  return home ? join(home, '.config', 'baremetal-exporter', 'cli.yml') : undefined;
}

const usageError = (message: string) => new CliExit(2, message);

/** One setting's value and where it came from: `--daemon.url`, `BAREMETAL_DAEMON_URL`, `FILE:2: daemon.url`. */
export interface Setting {
  value: string;
  source: string;
}

/** The CLI config file's settings, each with its `file:line` source; {} when there is no file. */
export async function readCliConfig(path: string): Promise<Partial<Record<CliConfigKey, Setting>>> {
  let text: string;
  try {
    text = await readBoundedText(path, 'config');
  } catch (error) {
    if ((error as { code?: unknown }).code === 'ENOENT') return {};
    throw usageError(`${path}: cannot read the CLI config file (${readProblem(error)})`);
  }
  const lineCounter = new LineCounter();
  const doc = parseDocument(text, { lineCounter, uniqueKeys: true });
  const line = (offset: number | undefined) => (offset === undefined ? '' : `:${lineCounter.linePos(offset).line}`);
  const [error] = doc.errors;
  if (error) throw usageError(`${path}${line(error.pos[0])}: (yaml): ${error.message.split('\n')[0]}`);
  if (doc.contents === null) return {};
  if (!isMap(doc.contents))
    throw usageError(`${path}: the CLI config file must be a mapping of ${CLI_CONFIG_KEYS.join(', ')}`);
  const out: Partial<Record<CliConfigKey, Setting>> = {};
  for (const pair of doc.contents.items) {
    const key = isScalar(pair.key) ? pair.key.value : undefined;
    const at = `${path}${line(isScalar(pair.key) ? pair.key.range?.[0] : undefined)}`;
    if (typeof key !== 'string' || !(CLI_CONFIG_KEYS as readonly string[]).includes(key))
      throw usageError(
        `${at}: unknown key ${JSON.stringify(key === undefined ? null : String(key))}; the keys are ${CLI_CONFIG_KEYS.join(', ')}`,
      );
    const value = isScalar(pair.value) ? pair.value.value : undefined;
    // No coercion: `output: 1` or `daemon.url: [..]` is refused, not turned into text.
    if (typeof value !== 'string' || value === '') throw usageError(`${at}: ${key}: must be a non-empty string`);
    const name = key as CliConfigKey;
    out[name] = {
      value: FILE_KEYS.has(name) ? resolve(dirname(path), value.replace(/^~(?=\/)/, homedir())) : value,
      source: `${at}: ${key}`,
    };
  }
  return out;
}

/** The settings of a daemon command: each from its flag, else its environment variable, else the config file. */
export interface DaemonSettings {
  'daemon.url'?: Setting;
  'token.file'?: Setting;
  /** the token itself, from TOKEN_ENV, when no token file is named anywhere above the config file */
  token?: Setting;
  output?: Setting;
  'tls.ca-file'?: Setting;
  'tls.cert-file'?: Setting;
  'tls.key-file'?: Setting;
}

/**
 * Resolves the settings in amtool's order: flag, environment, config file. An empty environment variable counts
 * as unset. BAREMETAL_TOKEN_FILE and BAREMETAL_TOKEN both set is a usage error: two ways to say one thing.
 */
export async function daemonSettings(
  flags: Partial<Record<CliConfigKey, string | undefined>>,
  env: NodeJS.ProcessEnv,
): Promise<DaemonSettings> {
  const envOf = (name: string): Setting | undefined => {
    const value = env[name];
    return value === undefined || value === '' ? undefined : { value, source: name };
  };
  const path = cliConfigPath(env);
  const file = path === undefined ? {} : await readCliConfig(path);
  const out: DaemonSettings = {};
  for (const key of CLI_CONFIG_KEYS) {
    const flag = flags[key];
    const fromEnv = key in CLI_ENV ? envOf(CLI_ENV[key as keyof typeof CLI_ENV]) : undefined;
    const setting = flag !== undefined ? { value: flag, source: `--${key}` } : (fromEnv ?? file[key]);
    if (setting !== undefined) out[key] = setting;
  }
  const tokenFileEnv = envOf(CLI_ENV['token.file']);
  const token = envOf(TOKEN_ENV);
  if (tokenFileEnv && token)
    throw usageError(`${CLI_ENV['token.file']} and ${TOKEN_ENV} are both set: two ways to say one thing; unset one`);
  // The token in the environment outranks a token file of the config file, not a flag's.
  if (token && flags['token.file'] === undefined) {
    delete out['token.file'];
    out.token = token;
  }
  return out;
}
