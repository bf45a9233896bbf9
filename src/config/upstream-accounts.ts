/**
 * The accounts the config names, each with its upstream block and its scope: the `accounts:` list or the
 * single-account form (`upstream:` and `services:`), the API key read from the environment, its file or the
 * YAML, the CA file read, the base URL checked (an `http://` URL to a remote host is refused), and each
 * `hostname` selector compiled by RE2.
 */
import { InsecureUrlError } from '../errors.js';
import { readProblem } from '../read-bounded-file.js';
import { parseApiKey } from './api-key.js';
import { checkBaseUrl } from './base-url.js';
import type { ConfigDocument, ConfigEnv, ReadFile } from './document.js';
import { parseDuration } from './formats.js';
import { ACCOUNT_NAME, DEFAULT_ACCOUNT, type ConfigFile } from './schema.js';
import { compileHostname, type ServerScope, type ServerSelectorFile } from './scope.js';
import type { AccountConfig, UpstreamConfig } from './types.js';

type UpstreamFile = ConfigFile['upstream'];
type ServicesFile = ConfigFile['services'];

/**
 * The accounts: `accounts:` (each entry checked at `accounts.N`), or the single-account form (`upstream:`
 * and `services:`, one account named `default`, env overrides applied) — never both. Duplicate names are
 * one line each. Returns builders that read the (then valid) document once every problem is known.
 */
export function readAccounts(
  checks: ConfigDocument,
  env: ConfigEnv,
  readFile: ReadFile,
): Array<(top: ServerScope) => AccountConfig> {
  const { doc } = checks;
  if (doc.accounts === undefined) {
    const upstream = readUpstream(checks, 'upstream', env, readFile);
    return [
      (top) => ({
        name: DEFAULT_ACCOUNT,
        upstream: upstream(doc.upstream as UpstreamFile),
        services: services(doc.services as ServicesFile),
        scope: top,
      }),
    ];
  }
  for (const key of ['upstream', 'services'] as const) {
    if (checks.raw.has(key))
      checks.problems.push(
        `${key}: not allowed together with accounts (give each account its ${key === 'upstream' ? 'upstream keys' : 'services'})`,
      );
  }
  const list = checks.value('accounts');
  if (!Array.isArray(list)) return [];
  const seen = new Set<string>();
  return list.map((_entry: unknown, i) => {
    const name = checks.text(`accounts.${i}.name`);
    if (name !== undefined && ACCOUNT_NAME.test(name)) {
      if (seen.has(name)) checks.problems.push(`accounts.${i}.name: duplicate account name ${JSON.stringify(name)}`);
      seen.add(name);
    }
    const upstream = readUpstream(checks, `accounts.${i}`, {}, readFile);
    const own = compileScope(checks, `accounts.${i}.servers`);
    return (top) => {
      const entry = (doc.accounts as Array<UpstreamFile & { name: string; services: ServicesFile }>)[i]!;
      return {
        name: entry.name,
        upstream: upstream(entry),
        services: services(entry.services),
        // The account's selectors add to the top level's.
        scope: { include: [...top.include, ...own!.include], exclude: [...top.exclude, ...own!.exclude] },
      };
    };
  });
}

/**
 * The scope at `at` (`servers` or `accounts.N.servers`): each `hostname` selector compiled by RE2
 * (config/scope.ts); a pattern RE2 refuses is a problem naming its key (`servers.exclude[2].hostname: …`). Undefined when the schema refused it.
 */
export function compileScope(checks: ConfigDocument, at: string): ServerScope | undefined {
  const scope: ServerScope = { include: [], exclude: [] };
  for (const list of ['include', 'exclude'] as const) {
    const selectors = checks.value(`${at}.${list}`);
    if (!Array.isArray(selectors)) return selectors === undefined && !checks.rejected(at) ? scope : undefined;
    for (const [i, selector] of (selectors as ServerSelectorFile[]).entries()) {
      if (!('hostname' in selector)) {
        scope[list].push({ ...selector });
        continue;
      }
      const compiled = compileHostname(selector.hostname);
      if (typeof compiled === 'string') checks.problems.push(`${at}.${list}.${i}.hostname: ${compiled}`);
      else scope[list].push({ hostname: compiled });
    }
  }
  return scope;
}

/** The names of the accounts the file configures (`default` in the single-account form). */
export function accountNames(checks: ConfigDocument): string[] {
  const list = checks.value('accounts');
  if (list === undefined) return [DEFAULT_ACCOUNT];
  return (Array.isArray(list) ? list : []).flatMap((_, i) => checks.text(`accounts.${i}.name`) ?? []);
}

const services = (file: ServicesFile): AccountConfig['services'] => ({
  colocationIds: file.colocation_ids,
  transitIds: file.transit_ids,
});

/** The base URL of the upstream block at `at`: env, then the file; a problem when it is missing or refused. */
function readBaseUrl(checks: ConfigDocument, at: string, env: ConfigEnv): string | undefined {
  const envNames = at === 'upstream' ? ' (or set BAREMETAL_API_URL)' : '';
  const fileUrl = checks.value(`${at}.base_url`);
  const baseUrl = env.BAREMETAL_API_URL || (typeof fileUrl === 'string' ? fileUrl : undefined);
  if (!baseUrl) {
    if (!checks.rejected(`${at}.base_url`)) checks.problems.push(`${at}.base_url: required${envNames}`);
    return undefined;
  }
  try {
    checkBaseUrl(baseUrl);
  } catch (error) {
    checks.problems.push(
      `${at}.base_url: ${error instanceof InsecureUrlError ? error.message : 'must be an absolute http(s) URL'}`,
    );
  }
  return baseUrl;
}

/** The text of the file at `key` (the text of that key), or undefined with a problem naming it. */
export function readNamedFile(checks: ConfigDocument, key: string, readFile: ReadFile, kind: 'secret' | 'pem') {
  const path = checks.text(key);
  if (path === undefined) return undefined;
  try {
    return readFile(path, kind);
  } catch (error) {
    checks.problems.push(`${key}: cannot read ${path} (${readProblem(error)})`);
    return undefined;
  }
}

/**
 * One upstream block at `at` (`upstream` or `accounts.N`): the base URL, the key (env, then the key file,
 * then the YAML key) and the CA file. Returns the builder of the normalized block.
 */
function readUpstream(
  checks: ConfigDocument,
  at: string,
  env: ConfigEnv,
  readFile: ReadFile,
): (file: UpstreamFile) => UpstreamConfig {
  const { problems } = checks;
  const baseUrl = readBaseUrl(checks, at, env);
  // Every source passes the same rule (config/api-key.ts); a problem names where the key came from, never the key.
  const keyOf = (text: string, where: string): string => {
    const { key, problem } = parseApiKey(text);
    if (problem !== undefined) problems.push(`${where} ${problem}`);
    return key ?? '';
  };
  let apiKeyFailed = false;
  let apiKey = '';
  let apiKeySource: UpstreamConfig['apiKeySource'] = 'env';
  if (env.BAREMETAL_API_KEY) {
    apiKey = keyOf(env.BAREMETAL_API_KEY, `${at}.api_key: the environment variable BAREMETAL_API_KEY`);
    apiKeyFailed = !apiKey;
  }
  const keyFile = checks.text(`${at}.api_key_file`);
  if (!apiKey && !apiKeyFailed && keyFile) {
    apiKeySource = 'file';
    const text = readNamedFile(checks, `${at}.api_key_file`, readFile, 'secret');
    if (text !== undefined) apiKey = keyOf(text, `${at}.api_key_file: file ${keyFile}`);
    apiKeyFailed = !apiKey;
  }
  const yamlKey = checks.text(`${at}.api_key`);
  if (!apiKey && !apiKeyFailed && yamlKey) {
    apiKeySource = 'yaml';
    apiKey = keyOf(yamlKey, `${at}.api_key: the key`);
    apiKeyFailed = !apiKey;
  }
  const keyRejected = checks.rejected(`${at}.api_key`) || checks.rejected(`${at}.api_key_file`);
  if (!apiKey && !apiKeyFailed && !keyRejected) {
    problems.push(
      `${at}.api_key: required (${at === 'upstream' ? 'set BAREMETAL_API_KEY or upstream.api_key_file' : `set ${at}.api_key_file`})`,
    );
  }
  const ca = readNamedFile(checks, `${at}.ca_file`, readFile, 'pem');
  return (file) => ({
    baseUrl: baseUrl!,
    apiKey,
    ...(file.ca_file ? { caFile: file.ca_file, ca: ca! } : {}),
    timeoutMs: parseDuration(file.timeout)!,
    concurrency: file.concurrency,
    retries: file.retries,
    maxResponseBytes: file.max_response_bytes,
    maxRequestsPerSecond: file.max_requests_per_second,
    apiKeySource,
    ...(apiKeySource === 'file' ? { apiKeyFile: keyFile! } : {}),
  });
}
