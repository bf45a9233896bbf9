/**
 * Loading the configuration: YAML text (or a file) plus environment overrides → `Config`, or a
 * ConfigError listing one line per problem, each naming the key and what was expected.
 */
import { readFileSync } from 'node:fs';
import { Ajv, type ErrorObject } from 'ajv';
import ms from 'ms';
import cron from 'node-cron';
import { parse as parseYaml } from 'yaml';
import { ConfigError, InsecureUrlError } from '../errors.js';
import { checkBaseUrl } from '../upstream/base-url.js';
import { DEFAULT_COOLDOWN_MS, JOB_NAMES, configFileSchema, type ActionName, type Config, type RemediationRule } from './schema.js';

/** Environment variables that override file values (secrets belong here or in files, not in YAML). */
export interface ConfigEnv {
  BAREMETAL_API_URL?: string;
  BAREMETAL_API_KEY?: string;
}

const ajv = new Ajv({ allErrors: true, useDefaults: true, strict: true });
const validateFile = ajv.compile(configFileSchema);

/** `/upstream/timeout` → `upstream.timeout`, plus the offending key for additionalProperties. */
function describe(error: ErrorObject): string {
  const path = error.instancePath.replace(/^\//, '').replaceAll('/', '.');
  if (error.keyword === 'additionalProperties') {
    const key = [path, String(error.params.additionalProperty)].filter(Boolean).join('.');
    return `${key}: unknown key`;
  }
  if (error.keyword === 'enum') {
    return `${path}: must be one of ${(error.params.allowedValues as unknown[]).map(String).join(', ')}`;
  }
  return `${path || '(top level)'}: ${error.message ?? 'invalid'}`;
}

/** Parses "10s", "5m", "250ms" into milliseconds; undefined when it is not a positive duration. */
export function parseDuration(text: string): number | undefined {
  const value = ms(text as ms.StringValue);
  return typeof value === 'number' && Number.isFinite(value) && value > 0 ? value : undefined;
}

/** Splits "host:port" or "[::1]:port" (port 0 allowed: pick a free one). */
export function parseListenAddress(text: string): { host: string; port: number } | undefined {
  const match = /^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/.exec(text);
  if (!match) return undefined;
  const port = Number(match[3]);
  if (port > 65535) return undefined;
  return { host: match[1] ?? (match[2] || '0.0.0.0'), port };
}

/**
 * Validates parsed YAML (`raw`) with `env` overrides and returns the normalized Config.
 * `readFile` reads `api_key_file` (injectable for tests). Throws ConfigError with every problem found.
 */
export function buildConfig(
  raw: unknown,
  env: ConfigEnv = {},
  readFile: (path: string) => string = (p) => readFileSync(p, 'utf8'),
): Config {
  const doc = (raw ?? {}) as Record<string, unknown>;
  if (typeof doc !== 'object' || Array.isArray(doc)) throw new ConfigError(['(top level): must be a mapping']);
  if (!validateFile(doc)) throw new ConfigError((validateFile.errors ?? []).map(describe));
  const file = doc as unknown as FileShape;
  const problems: string[] = [];

  const baseUrl = env.BAREMETAL_API_URL || file.upstream.base_url;
  if (!baseUrl) problems.push('upstream.base_url: required (or set BAREMETAL_API_URL)');
  else {
    try {
      checkBaseUrl(baseUrl);
    } catch (error) {
      problems.push(`upstream.base_url: ${error instanceof InsecureUrlError ? error.message : 'must be an absolute http(s) URL'}`);
    }
  }

  let apiKey = env.BAREMETAL_API_KEY || '';
  let apiKeySource: Config['upstream']['apiKeySource'] = 'env';
  if (!apiKey && file.upstream.api_key_file) {
    apiKeySource = 'file';
    try {
      apiKey = readFile(file.upstream.api_key_file).trim();
      if (!apiKey) problems.push(`upstream.api_key_file: file ${file.upstream.api_key_file} is empty`);
    } catch (error) {
      problems.push(`upstream.api_key_file: cannot read ${file.upstream.api_key_file} (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
    }
  }
  if (!apiKey && file.upstream.api_key) {
    apiKey = file.upstream.api_key;
    apiKeySource = 'yaml';
  }
  if (!apiKey && !problems.some((p) => p.startsWith('upstream.api_key_file'))) {
    problems.push('upstream.api_key: required (set BAREMETAL_API_KEY or upstream.api_key_file)');
  }

  const timeoutMs = parseDuration(file.upstream.timeout);
  if (timeoutMs === undefined) problems.push(`upstream.timeout: must be a duration such as "10s" (got ${JSON.stringify(file.upstream.timeout)})`);

  const ipRetentionMs = parseDuration(file.firewall.ip_retention);
  if (ipRetentionMs === undefined) problems.push(`firewall.ip_retention: must be a duration such as "24h" (got ${JSON.stringify(file.firewall.ip_retention)})`);

  const listen = parseListenAddress(file.web.listen_address);
  if (!listen) problems.push(`web.listen_address: must be "host:port" (got ${JSON.stringify(file.web.listen_address)})`);

  for (const job of JOB_NAMES) {
    const expression = file.schedules[job];
    if (!cron.validate(expression)) problems.push(`schedules.${job}: must be a cron expression, seconds allowed (got ${JSON.stringify(expression)})`);
  }

  const remediation = buildRemediation(file.remediation, problems, readFile);
  const webAuth = readCredentials('web.auth', file.web.auth, problems, readFile);
  if (file.web.tls) {
    for (const key of ['cert_file', 'key_file'] as const) {
      try {
        readFile(file.web.tls[key]);
      } catch (error) {
        problems.push(`web.tls.${key}: cannot read ${file.web.tls[key]} (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
      }
    }
  }

  if (problems.length > 0) throw new ConfigError(problems);
  return {
    upstream: {
      baseUrl: baseUrl!,
      apiKey,
      ...(file.upstream.ca_file ? { caFile: file.upstream.ca_file } : {}),
      timeoutMs: timeoutMs!,
      concurrency: file.upstream.concurrency,
      retries: file.upstream.retries,
      maxResponseBytes: file.upstream.max_response_bytes,
      apiKeySource,
    },
    web: {
      ...listen!,
      ...(file.web.tls ? { tls: { certFile: file.web.tls.cert_file, keyFile: file.web.tls.key_file } } : {}),
      auth: webAuth,
    },
    stateDir: file.state_dir,
    logLevel: file.log_level,
    schedules: file.schedules,
    graphs: { types: file.graphs.types, scales: file.graphs.scales, maxWidth: file.graphs.max_width },
    services: { colocationIds: file.services.colocation_ids, transitIds: file.services.transit_ids },
    firewall: { maxIpsPerService: file.firewall.max_ips_per_service, ipRetentionMs: ipRetentionMs ?? 0 },
    remediation,
  };
}

const BCRYPT_HASH = /^\$2[aby]?\$\d{2}\$[./A-Za-z0-9]{53}$/;

/** Reads bearer-token files and checks bcrypt hashes of a credentials block at `at` (remediation.auth, web.auth). */
function readCredentials(
  at: string,
  raw: { bearer_token_files: string[]; basic_auth_users: Record<string, string> },
  problems: string[],
  readFile: (path: string) => string,
): { bearerTokens: string[]; basicAuthUsers: Record<string, string> } {
  const bearerTokens: string[] = [];
  raw.bearer_token_files.forEach((path, i) => {
    try {
      const token = readFile(path).trim();
      if (token.length < 16) problems.push(`${at}.bearer_token_files.${i}: the token in ${path} is shorter than 16 characters`);
      else bearerTokens.push(token);
    } catch (error) {
      problems.push(`${at}.bearer_token_files.${i}: cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? 'error'})`);
    }
  });
  for (const [user, hash] of Object.entries(raw.basic_auth_users)) {
    if (!BCRYPT_HASH.test(hash)) problems.push(`${at}.basic_auth_users.${user}: must be a bcrypt hash ($2b$…), never a plain password`);
  }
  return { bearerTokens, basicAuthUsers: raw.basic_auth_users };
}

function buildRemediation(raw: FileShape['remediation'], problems: string[], readFile: (path: string) => string): Config['remediation'] {
  const { bearerTokens, basicAuthUsers } = readCredentials('remediation.auth', raw.auth, problems, readFile);
  const rules = raw.rules.map((rule, i): RemediationRule => {
    const at = `remediation.rules.${i}`;
    const holdMs = rule.hold === '0' || rule.hold === '0s' ? 0 : parseDuration(rule.hold);
    if (holdMs === undefined) problems.push(`${at}.hold: must be a duration such as "5m" (got ${JSON.stringify(rule.hold)})`);
    let cooldownMs = DEFAULT_COOLDOWN_MS[rule.action];
    if (rule.cooldown !== undefined) {
      const parsed = parseDuration(rule.cooldown);
      if (parsed === undefined) problems.push(`${at}.cooldown: must be a duration such as "30m" (got ${JSON.stringify(rule.cooldown)})`);
      // The API itself refuses a second firewall-state change within 2 minutes (contract §8).
      else cooldownMs = rule.action === 'firewall_state' ? Math.max(parsed, DEFAULT_COOLDOWN_MS.firewall_state) : parsed;
    }
    if (rule.action === 'firewall_sensitivity' && !rule.sensitivity) problems.push(`${at}.sensitivity: required for action firewall_sensitivity`);
    return {
      alertname: rule.alertname,
      matchers: rule.matchers,
      action: rule.action,
      serverIdLabel: rule.server_id_label,
      ipLabel: rule.ip_label,
      firingState: String(rule.firing_state) as '0' | '1',
      resolvedState: String(rule.resolved_state) as '0' | '1',
      ...(rule.sensitivity ? { sensitivity: rule.sensitivity } : {}),
      holdMs: holdMs ?? 0,
      cooldownMs,
      requireOwnedIp: rule.require_owned_ip,
    };
  });
  const journalRetentionMs = parseDuration(raw.journal_retention);
  if (journalRetentionMs === undefined) problems.push(`remediation.journal_retention: must be a duration such as "30d" (got ${JSON.stringify(raw.journal_retention)})`);
  return { dryRun: raw.dry_run, journalRetentionMs: journalRetentionMs ?? 0, budgetPerHour: raw.budget_per_hour, bearerTokens, basicAuthUsers, rules };
}

/** Parses YAML text; a syntax error becomes a ConfigError naming the line. */
export function parseConfigText(text: string, env: ConfigEnv = {}, readFile?: (path: string) => string): Config {
  let raw: unknown;
  try {
    raw = parseYaml(text);
  } catch (error) {
    throw new ConfigError([`(yaml): ${(error as Error).message.split('\n')[0]}`], { cause: error });
  }
  return buildConfig(raw, env, readFile);
}

/** Reads and validates the config file at `path` with `env` overrides. Throws ConfigError. */
export function loadConfig(path: string, env: ConfigEnv = process.env): Config {
  let text: string;
  try {
    text = readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError([`(file): cannot read ${path} (${(error as NodeJS.ErrnoException).code ?? 'error'})`]);
  }
  return parseConfigText(text, env);
}

/** The file's shape after Ajv filled in defaults. */
interface FileShape {
  upstream: {
    base_url?: string;
    api_key?: string;
    api_key_file?: string;
    ca_file?: string;
    timeout: string;
    concurrency: number;
    retries: number;
    max_response_bytes: number;
  };
  web: {
    listen_address: string;
    tls?: { cert_file: string; key_file: string };
    auth: { bearer_token_files: string[]; basic_auth_users: Record<string, string> };
  };
  state_dir: string;
  log_level: string;
  schedules: Config['schedules'];
  graphs: { types: Config['graphs']['types']; scales: Config['graphs']['scales']; max_width: number };
  services: { colocation_ids: string[]; transit_ids: string[] };
  firewall: { max_ips_per_service: number; ip_retention: string };
  remediation: {
    dry_run: boolean;
    journal_retention: string;
    budget_per_hour: number;
    auth: { bearer_token_files: string[]; basic_auth_users: Record<string, string> };
    rules: Array<{
      alertname: string;
      matchers: Record<string, string>;
      action: ActionName;
      server_id_label: string;
      ip_label: string;
      firing_state: string | number;
      resolved_state: string | number;
      sensitivity?: 'low' | 'medium' | 'normal' | 'high';
      hold: string;
      cooldown?: string;
      require_owned_ip: boolean;
    }>;
  };
}
