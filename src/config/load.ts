/**
 * Loading the configuration: YAML text (or a file) plus environment overrides → `Config`, or a ConfigError
 * listing every problem at once, one line each, naming the key and what was expected: the schema's findings
 * (unknown keys, types, ranges) and the checks JSON Schema cannot express (an `http://` URL to a remote host,
 * unreadable key or token files, cron expressions, durations, the listen address) together. A key the schema
 * already rejected is not checked again.
 */
import { Ajv, type ErrorObject } from 'ajv';
import ms from 'ms';
import cron from 'node-cron';
import { parse as parseYaml } from 'yaml';
import { redactDatabaseUrl } from './database-url.js';
import { buildWithFiles, readBoundedText, readProblem, type FileKind } from '../read-bounded-file.js';
import { ConfigError, InsecureUrlError } from '../errors.js';
import { checkBaseUrl } from './base-url.js';
import { compileHostname, type ServerScope, type ServerSelectorFile } from './scope.js';
import {
  ACCOUNT_NAME,
  ACTIONS,
  DEFAULT_ACCOUNT,
  DEFAULT_COOLDOWN_MS,
  JOB_NAMES,
  configFileSchema,
  SCHEMA_ANNOTATIONS,
  type AccountConfig,
  type Config,
  type ConfigFile,
  type Credentials,
  type Principal,
  type RemediationRule,
  type UpstreamConfig,
} from './schema.js';

/** Environment variables that override file values (secrets belong here or in files, not in YAML). */
export interface ConfigEnv {
  BAREMETAL_API_URL?: string | undefined;
  BAREMETAL_API_KEY?: string | undefined;
  BAREMETAL_DATABASE_URL?: string | undefined;
}

/**
 * Reads the text of a file the config names; `kind` picks its cap (see readBoundedFile). Synchronous: the
 * files are read beforehand, asynchronously (configFromDocument).
 */
type ReadFile = (path: string, kind: FileKind) => string;

/** The reader of a config built without configFromDocument: it names no file it could read. */
const noFiles: ReadFile = (path) => {
  throw new Error(`${path} was not read (the config is built by configFromDocument when it names files)`);
};

const ajv = new Ajv({ allErrors: true, useDefaults: true, strict: true, keywords: SCHEMA_ANNOTATIONS });
const validateFile = ajv.compile<ConfigFile>(configFileSchema);

/** The key an Ajv error is about (`upstream.timeout`; for an unknown key, that key) and its line. */
function describe(error: ErrorObject): { key: string; line: string } {
  const path = error.instancePath.replace(/^\//, '').replaceAll('/', '.');
  if (error.keyword === 'additionalProperties') {
    const key = [path, String(error.params.additionalProperty)].filter(Boolean).join('.');
    return { key, line: `${key}: unknown key` };
  }
  if (error.keyword === 'enum') {
    return {
      key: path,
      line: `${path}: must be one of ${(error.params.allowedValues as unknown[]).map(String).join(', ')}`,
    };
  }
  return { key: path, line: `${path || '(top level)'}: ${error.message ?? 'invalid'}` };
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

const errno = readProblem;

/**
 * The semantic checks, run on the document whatever the schema found: each reads a value only if it has
 * the type the schema asks for and the schema found nothing wrong at that key, so one problem is one line.
 */
class Checks {
  readonly problems: string[] = [];
  /** the top-level keys the file itself has (before Ajv filled in defaults) */
  readonly raw: Set<string>;
  readonly #doc: Record<string, unknown>;
  readonly #rejected: string[];

  constructor(doc: Record<string, unknown>, rejectedKeys: string[], raw: Set<string>) {
    this.raw = raw;
    this.#doc = doc;
    this.#rejected = rejectedKeys;
  }

  /** The schema rejected `key` (dotted) or an object it sits in. */
  rejected(key: string): boolean {
    return this.#rejected.some((k) => k === key || key.startsWith(`${k}.`));
  }

  /** The value at `key` unless the schema rejected it or an object it sits in. */
  value(key: string): unknown {
    if (this.rejected(key)) return undefined;
    let node: unknown = this.#doc;
    for (const part of key.split('.'))
      node = node !== null && typeof node === 'object' ? (node as Record<string, unknown>)[part] : undefined;
    return node;
  }

  text(key: string): string | undefined {
    const value = this.value(key);
    return typeof value === 'string' ? value : undefined;
  }

  duration(key: string, example: string): number | undefined {
    const text = this.text(key);
    if (text === undefined) return undefined;
    const value = parseDuration(text);
    if (value === undefined)
      this.problems.push(`${key}: must be a duration such as "${example}" (got ${JSON.stringify(text)})`);
    return value;
  }

  /** Reads bearer-token files and checks bcrypt hashes of a credentials block at `key` (remediation.auth, web.auth). */
  credentials(key: string, readFile: ReadFile): Credentials {
    const bearerTokens: string[] = [];
    const files = this.value(`${key}.bearer_token_files`);
    (Array.isArray(files) ? files : []).forEach((path: unknown, i) => {
      if (typeof path !== 'string') return;
      const token = this.#token(`${key}.bearer_token_files.${i}`, path, readFile);
      if (token !== undefined) bearerTokens.push(token);
    });
    const users = this.value(`${key}.basic_auth_users`);
    const basicAuthUsers = users !== null && typeof users === 'object' ? (users as Record<string, string>) : {};
    for (const [user, hash] of Object.entries(basicAuthUsers)) {
      if (typeof hash !== 'string') continue;
      const problem = bcryptHashProblem(user, hash, 'must be a bcrypt hash ($2b$…), never a plain password');
      if (problem !== undefined) this.problems.push(`${key}.basic_auth_users.${user}: ${problem}`);
    }
    return { bearerTokens, basicAuthUsers };
  }

  /**
   * `remediation.auth.principals`: names unique (also against the deprecated form's `token-N` and user
   * names), exactly one credential each, token files read, hashes checked, accounts configured.
   */
  principals(readFile: ReadFile, legacy: Credentials, accounts: readonly string[]): Principal[] {
    const key = 'remediation.auth.principals';
    const list = this.value(key);
    if (!Array.isArray(list)) return [];
    const names = new Set([
      ...legacy.bearerTokens.map((_, i) => `token-${i + 1}`),
      ...Object.keys(legacy.basicAuthUsers),
    ]);
    // A token names one principal: two with one token could not be told apart.
    const tokens = new Set(legacy.bearerTokens);
    return (list as PrincipalFile[]).flatMap((p, i): Principal[] => {
      const at = `${key}.${i}`;
      if (this.rejected(at)) return [];
      const before = this.problems.length;
      if (names.has(p.name)) this.problems.push(`${at}.name: duplicate principal name ${JSON.stringify(p.name)}`);
      names.add(p.name);
      const principal: Principal = { name: p.name, roles: [...p.roles] };
      if ((p.bearer_token_file === undefined) === (p.basic_auth_hash === undefined))
        this.problems.push(`${at}: give exactly one of bearer_token_file and basic_auth_hash`);
      else if (p.bearer_token_file !== undefined) {
        const token = this.#token(`${at}.bearer_token_file`, p.bearer_token_file, readFile);
        if (token !== undefined && tokens.has(token))
          this.problems.push(`${at}.bearer_token_file: another principal has the same token`);
        if (token !== undefined) tokens.add(token);
        if (token !== undefined) principal.bearerToken = token;
      } else {
        const hash = p.basic_auth_hash!;
        const problem = bcryptHashProblem(p.name, hash, 'must be a bcrypt hash ($2b$…), never a plain password');
        if (problem !== undefined) this.problems.push(`${at}.basic_auth_hash: ${problem}`);
        principal.basicAuthHash = hash;
      }
      for (const [j, account] of (p.accounts ?? []).entries())
        if (!accounts.includes(account))
          this.problems.push(`${at}.accounts.${j}: no account ${JSON.stringify(account)} is configured`);
      if (p.accounts) principal.accounts = [...p.accounts];
      if (p.actions) principal.actions = [...p.actions];
      if (p.require_approval) principal.requireApproval = true;
      return this.problems.length === before ? [principal] : [];
    });
  }

  /** The token in `path` (trimmed), or undefined with a problem at `key`: unreadable, or shorter than 16 characters. */
  #token(key: string, path: string, readFile: ReadFile): string | undefined {
    try {
      const token = readFile(path, 'secret').trim();
      if (token.length >= 16) return token;
      this.problems.push(`${key}: the token in ${path} is shorter than 16 characters`);
    } catch (error) {
      this.problems.push(`${key}: cannot read ${path} (${errno(error)})`);
    }
    return undefined;
  }
}

type PrincipalFile = ConfigFile['remediation']['auth']['principals'][number];

/**
 * A bcrypt hash as htpasswd and bcryptjs write it: `$2a$`, `$2b$` or `$2y$`. The original `$2$` and the
 * broken-implementation marker `$2x$` are not: bcryptjs compares no password with them as equal.
 */
export const BCRYPT_HASH = /^\$2[aby]\$\d{2}\$[./A-Za-z0-9]{53}$/;

/**
 * What is wrong with `hash`, the bcrypt hash of `user`, as a sentence: a bcrypt variant other than `$2a$`,
 * `$2b$`, `$2y$`, or a cost outside 4…MAX_BCRYPT_COST; `notBcrypt` when it is no bcrypt hash at all;
 * undefined when it is usable.
 */
export function bcryptHashProblem(user: string, hash: string, notBcrypt: string): string | undefined {
  if (BCRYPT_HASH.test(hash)) return bcryptCostProblem(user, hash);
  const variant = /^\$(2[a-z]?)\$\d{2}\$/.exec(hash)?.[1];
  if (variant !== undefined)
    return `the bcrypt hash of user ${user} is of variant $${variant}$, which never matches a password; only $2a$, $2b$ and $2y$ are supported: hash the password again (htpasswd -nbB ${user} PASSWORD)`;
  return notBcrypt;
}

/**
 * The highest bcrypt cost accepted: one check at cost 14 takes about a second on one core, and each step up
 * doubles it; a cost-31 hash would hold the only bcrypt worker for days at every uncached login.
 */
export const MAX_BCRYPT_COST = 14;

/**
 * What is wrong with the cost of `hash`, a BCRYPT_HASH of `user`: outside 4…MAX_BCRYPT_COST (bcrypt itself
 * allows 4…31), as a sentence naming the user; undefined when it is usable.
 */
export function bcryptCostProblem(user: string, hash: string): string | undefined {
  const cost = Number(hash.split('$')[2]);
  if (cost < 4) return `the bcrypt hash of user ${user} has cost ${cost}; bcrypt needs 4 or more`;
  if (cost > MAX_BCRYPT_COST)
    return `the bcrypt hash of user ${user} has cost ${cost}, above ${MAX_BCRYPT_COST}: each login would take minutes to days; hash the password again with cost ${MAX_BCRYPT_COST} or less (htpasswd -B -C 10)`;
  return undefined;
}

/**
 * Validates parsed YAML (`raw`) with `env` overrides and returns the normalized Config.
 * `readFile` gives the text of key, token and TLS files (configFromDocument reads them first; tests inject
 * their own). Throws ConfigError with every problem found.
 */
export function buildConfig(raw: unknown, env: ConfigEnv = {}, readFile: ReadFile = noFiles): Config {
  const doc = (raw ?? {}) as Record<string, unknown>;
  if (typeof doc !== 'object' || Array.isArray(doc)) throw new ConfigError(['(top level): must be a mapping']);
  const fileKeys = new Set(Object.keys(doc));
  // Ajv fills in defaults even where it finds errors, so the checks below see the same document either way.
  const valid = validateFile(doc);
  const schemaErrors = valid ? [] : (validateFile.errors ?? []).map(describe);
  const checks = new Checks(
    doc,
    schemaErrors.map((e) => e.key),
    fileKeys,
  );
  const { problems } = checks;

  const topScope = checkScope(checks, 'servers');
  const accounts = checkAccounts(doc, checks, env, readFile);
  const ipRetentionMs = checks.duration('firewall.ip_retention', '24h');

  const listenText = checks.text('web.listen_address');
  const listen = listenText === undefined ? undefined : parseListenAddress(listenText);
  if (listenText !== undefined && !listen)
    problems.push(`web.listen_address: must be "host:port" (got ${JSON.stringify(listenText)})`);

  for (const job of JOB_NAMES) {
    const expression = checks.text(`schedules.${job}`);
    if (expression !== undefined && !cron.validate(expression)) {
      problems.push(`schedules.${job}: must be a cron expression, seconds allowed (got ${JSON.stringify(expression)})`);
    }
  }

  const remediationAuth = checks.credentials('remediation.auth', readFile);
  const principals = checks.principals(readFile, remediationAuth, accountNames(checks));
  const rules = checkRules(checks);
  const journalRetentionMs = checks.duration('remediation.journal_retention', '30d');
  const retireAfterMs = checks.duration('remediation.retire_after', '24h');
  const safety = {
    attackWindowMs: checks.duration('remediation.safety.attack_window', '15m'),
    windowMs: checks.duration('remediation.safety.circuit_breaker.window', '15m'),
    capWindowMs: checks.duration('remediation.safety.cap_window', '24h'),
  };
  const approvalTimeoutMs = checks.duration('remediation.approval_timeout', '15m');
  const webAuth = checks.credentials('web.auth', readFile);
  const database = checkDatabase(checks, env, readFile);
  for (const key of ['cert_file', 'key_file'] as const) {
    const path = checks.text(`web.tls.${key}`);
    if (path === undefined) continue;
    try {
      readFile(path, 'pem');
    } catch (error) {
      problems.push(`web.tls.${key}: cannot read ${path} (${errno(error)})`);
    }
  }

  const all = [...schemaErrors.map((e) => e.line), ...problems];
  if (all.length > 0) throw new ConfigError(all);
  // No problem: the document is a valid ConfigFile and every value above was read.
  const file = doc as ConfigFile;
  return {
    accounts: accounts.map((account) => account(topScope!)),
    web: {
      ...listen!,
      ...(file.web.tls ? { tls: { certFile: file.web.tls.cert_file, keyFile: file.web.tls.key_file } } : {}),
      auth: webAuth,
    },
    stateDir: file.state_dir,
    database: database!,
    logLevel: file.log_level,
    schedules: {
      ...file.schedules,
      firewall_under_attack: file.schedules.firewall_under_attack ?? file.schedules.firewall,
    },
    graphs: { types: file.graphs.types, scales: file.graphs.scales, maxWidth: file.graphs.max_width },
    firewall: { maxIpsPerService: file.firewall.max_ips_per_service, ipRetentionMs: ipRetentionMs! },
    collectors: { ...file.collectors },
    remediation: {
      dryRun: file.remediation.dry_run,
      journalRetentionMs: journalRetentionMs!,
      retireAfterMs: retireAfterMs!,
      approvalTimeoutMs: approvalTimeoutMs!,
      budgetPerHour: file.remediation.budget_per_hour,
      safety: {
        denyPowerWhenAttacked: file.remediation.safety.deny_power_when_attacked,
        attackWindowMs: safety.attackWindowMs!,
        circuitBreaker: {
          windowMs: safety.windowMs!,
          maxServers: file.remediation.safety.circuit_breaker.max_servers,
          maxFraction: file.remediation.safety.circuit_breaker.max_fraction,
        },
        maxPowerActionsPerServer: file.remediation.safety.max_power_actions_per_server,
        capWindowMs: safety.capWindowMs!,
      },
      maxAlerts: file.remediation.max_alerts,
      ...remediationAuth,
      principals,
      rules: file.remediation.rules.map(
        (rule, i): RemediationRule => ({
          alertname: rule.alertname,
          matchers: rule.matchers,
          action: rule.action,
          accountLabel: rule.account_label,
          serverIdLabel: rule.server_id_label,
          ipLabel: rule.ip_label,
          firingState: String(rule.firing_state) as '0' | '1',
          resolvedState: String(rule.resolved_state) as '0' | '1',
          ...(rule.sensitivity ? { sensitivity: rule.sensitivity } : {}),
          ...rules[i]!,
          requireOwnedIp: rule.require_owned_ip,
          requireApproval: rule.require_approval,
        }),
      ),
    },
  };
}

/**
 * The state backend: BAREMETAL_DATABASE_URL, else `database.url_file`, else `database.url` (PostgreSQL), else
 * SQLite. The URL must be `postgres://` or `postgresql://` with a host; problems name the key, never the URL
 * (it carries the password).
 */
function checkDatabase(checks: Checks, env: ConfigEnv, readFile: ReadFile): Config['database'] | undefined {
  const { problems } = checks;
  let url: string | undefined;
  let at = 'BAREMETAL_DATABASE_URL';
  if (env.BAREMETAL_DATABASE_URL) url = env.BAREMETAL_DATABASE_URL.trim();
  else {
    const urlFile = checks.text('database.url_file');
    if (urlFile !== undefined && checks.text('database.url') !== undefined) {
      problems.push('database: set url or url_file, not both');
      return undefined;
    }
    if (urlFile !== undefined) {
      at = 'database.url_file';
      try {
        url = readFile(urlFile, 'secret').trim();
        if (!url) problems.push(`database.url_file: file ${urlFile} is empty`);
      } catch (error) {
        problems.push(`database.url_file: cannot read ${urlFile} (${errno(error)})`);
        return undefined;
      }
    } else {
      url = checks.text('database.url');
      at = 'database.url';
    }
  }
  if (!url) return { kind: 'sqlite' };
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    problems.push(`${at}: not a URL (postgres://user:password@host:port/database expected)`);
    return undefined;
  }
  if ((parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') || !parsed.hostname) {
    problems.push(`${at}: must be a postgres:// or postgresql:// URL with a host`);
    return undefined;
  }
  return { kind: 'postgres', url, redactedUrl: redactDatabaseUrl(url) };
}

type UpstreamFile = ConfigFile['upstream'];
type ServicesFile = ConfigFile['services'];

/**
 * The accounts: `accounts:` (each entry checked at `accounts.N`), or the single-account form (`upstream:`
 * and `services:`, one account named `default`, env overrides applied) — never both. Duplicate names are
 * one line each. Returns builders that read the (then valid) document once every problem is known.
 */
function checkAccounts(
  doc: Record<string, unknown>,
  checks: Checks,
  env: ConfigEnv,
  readFile: ReadFile,
): Array<(top: ServerScope) => AccountConfig> {
  if (doc.accounts === undefined) {
    const upstream = checkUpstream(checks, 'upstream', env, readFile);
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
    const upstream = checkUpstream(checks, `accounts.${i}`, {}, readFile);
    const own = checkScope(checks, `accounts.${i}.servers`);
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
 * (config/scope.ts); a pattern RE2 refuses is a problem naming its key (`servers.exclude.2.hostname: …`). Undefined when the schema refused it.
 */
function checkScope(checks: Checks, at: string): ServerScope | undefined {
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
      if (typeof compiled === 'string')
        checks.problems.push(`${at}.${list}.${i}.hostname: not a valid RE2 regular expression: ${compiled}`);
      else scope[list].push({ hostname: compiled });
    }
  }
  return scope;
}

/** The names of the accounts the file configures (`default` in the single-account form). */
function accountNames(checks: Checks): string[] {
  const list = checks.value('accounts');
  if (list === undefined) return [DEFAULT_ACCOUNT];
  return (Array.isArray(list) ? list : []).flatMap((_, i) => checks.text(`accounts.${i}.name`) ?? []);
}

const services = (file: ServicesFile): AccountConfig['services'] => ({
  colocationIds: file.colocation_ids,
  transitIds: file.transit_ids,
});

/**
 * One upstream block at `at` (`upstream` or `accounts.N`): the base URL, the key (env, then the key file,
 * then the YAML key) and the timeout. Returns the builder of the normalized block.
 */
function checkUpstream(
  checks: Checks,
  at: string,
  env: ConfigEnv,
  readFile: ReadFile,
): (file: UpstreamFile) => UpstreamConfig {
  const { problems } = checks;
  const envNames = at === 'upstream' ? ' (or set BAREMETAL_API_URL)' : '';
  const fileUrl = checks.value(`${at}.base_url`);
  const baseUrl = env.BAREMETAL_API_URL || (typeof fileUrl === 'string' ? fileUrl : undefined);
  if (!baseUrl) {
    if (!checks.rejected(`${at}.base_url`)) problems.push(`${at}.base_url: required${envNames}`);
  } else {
    try {
      checkBaseUrl(baseUrl);
    } catch (error) {
      problems.push(
        `${at}.base_url: ${error instanceof InsecureUrlError ? error.message : 'must be an absolute http(s) URL'}`,
      );
    }
  }

  let apiKey = env.BAREMETAL_API_KEY || '';
  let apiKeySource: UpstreamConfig['apiKeySource'] = 'env';
  const keyFile = checks.text(`${at}.api_key_file`);
  let keyFileFailed = false;
  if (!apiKey && keyFile) {
    apiKeySource = 'file';
    try {
      apiKey = readFile(keyFile, 'secret').trim();
      if (!apiKey) problems.push(`${at}.api_key_file: file ${keyFile} is empty`);
    } catch (error) {
      problems.push(`${at}.api_key_file: cannot read ${keyFile} (${errno(error)})`);
    }
    keyFileFailed = !apiKey;
  }
  const yamlKey = checks.text(`${at}.api_key`);
  if (!apiKey && yamlKey) {
    apiKey = yamlKey;
    apiKeySource = 'yaml';
  }
  const keyRejected = checks.rejected(`${at}.api_key`) || checks.rejected(`${at}.api_key_file`);
  if (!apiKey && !keyFileFailed && !keyRejected) {
    problems.push(
      `${at}.api_key: required (${at === 'upstream' ? 'set BAREMETAL_API_KEY or upstream.api_key_file' : `set ${at}.api_key_file`})`,
    );
  }
  const caFile = checks.text(`${at}.ca_file`);
  let ca: string | undefined;
  if (caFile !== undefined) {
    try {
      ca = readFile(caFile, 'pem');
    } catch (error) {
      problems.push(`${at}.ca_file: cannot read ${caFile} (${errno(error)})`);
    }
  }
  const timeoutMs = checks.duration(`${at}.timeout`, '10s');
  return (file) => ({
    baseUrl: baseUrl!,
    apiKey,
    ...(file.ca_file ? { caFile: file.ca_file, ca: ca! } : {}),
    timeoutMs: timeoutMs!,
    concurrency: file.concurrency,
    retries: file.retries,
    maxResponseBytes: file.max_response_bytes,
    maxRequestsPerSecond: file.max_requests_per_second,
    apiKeySource,
    ...(apiKeySource === 'file' ? { apiKeyFile: keyFile! } : {}),
  });
}

/** Checks each rule's durations and needs; returns its hold and cooldown in ms (0 where a problem was reported). */
function checkRules(checks: Checks): Array<{ holdMs: number; cooldownMs: number }> {
  const rules = checks.value('remediation.rules');
  if (!Array.isArray(rules)) return [];
  return rules.map((rule: Record<string, unknown> | null, i) => {
    const at = `remediation.rules.${i}`;
    const action = checks.value(`${at}.action`);
    const known =
      typeof action === 'string' && (ACTIONS as readonly string[]).includes(action)
        ? (action as keyof typeof DEFAULT_COOLDOWN_MS)
        : undefined;
    const hold = checks.text(`${at}.hold`);
    const holdMs = hold === '0' || hold === '0s' ? 0 : checks.duration(`${at}.hold`, '5m');
    let cooldownMs = known ? DEFAULT_COOLDOWN_MS[known] : 0;
    const cooldown = checks.duration(`${at}.cooldown`, '30m');
    // The API itself refuses a second firewall-state change within 2 minutes (contract §8).
    if (cooldown !== undefined)
      cooldownMs = known === 'firewall_state' ? Math.max(cooldown, DEFAULT_COOLDOWN_MS.firewall_state) : cooldown;
    if (known === 'firewall_sensitivity' && rule?.sensitivity === undefined)
      checks.problems.push(`${at}.sensitivity: required for action firewall_sensitivity`);
    return { holdMs: holdMs ?? 0, cooldownMs };
  });
}

/** Command-line flags that override the file (`--web.listen-address`, `--log.level`). */
export interface ConfigFlags {
  /** `--web.listen-address`, each `host:port`: the first replaces web.listen_address, the others are added */
  listen?: string[] | undefined;
  /** `--log.level` */
  logLevel?: string | undefined;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const;

/** The config with the flags applied over the file's values; throws ConfigError naming the flag. */
export function applyFlags(config: Config, flags: ConfigFlags): Config {
  const problems: string[] = [];
  let web = config.web;
  if (flags.listen !== undefined && flags.listen.length > 0) {
    const addresses = flags.listen.map((text) => {
      const listen = parseListenAddress(text);
      if (!listen) problems.push(`--web.listen-address: must be "host:port" (got ${JSON.stringify(text)})`);
      return listen;
    });
    const [first, ...additional] = addresses;
    if (first && additional.every(Boolean))
      web = { ...web, ...first, ...(additional.length > 0 ? { additional: additional as (typeof first)[] } : {}) };
  }
  let logLevel = config.logLevel;
  if (flags.logLevel !== undefined) {
    if ((LOG_LEVELS as readonly string[]).includes(flags.logLevel)) logLevel = flags.logLevel as Config['logLevel'];
    else problems.push(`--log.level: must be one of ${LOG_LEVELS.join(', ')} (got ${JSON.stringify(flags.logLevel)})`);
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return { ...config, web, logLevel };
}

/** The document of YAML text; a syntax error becomes a ConfigError naming the line. */
function parseYamlText(text: string): unknown {
  try {
    return parseYaml(text);
  } catch (error) {
    throw new ConfigError([`(yaml): ${(error as Error).message.split('\n')[0]}`], { cause: error });
  }
}

/** Parses YAML text; a syntax error becomes a ConfigError naming the line. */
export function parseConfigText(text: string, env: ConfigEnv = {}, readFile?: ReadFile): Config {
  return buildConfig(parseYamlText(text), env, readFile);
}

/**
 * buildConfig with the files the document names (key, token, URL, CA and TLS files) read first, all at
 * once and without blocking the event loop (readBoundedFile: a pipe nobody writes fails after its deadline,
 * a problem naming the key and the path). Rejects with ConfigError.
 */
export function configFromDocument(raw: unknown, env: ConfigEnv = {}): Promise<Config> {
  // A copy for each run: buildConfig fills the schema's defaults into the document it is given.
  return buildWithFiles((read) =>
    buildConfig(structuredClone(raw), env, (path, kind) => read(path, kind).toString('utf8')),
  );
}

/**
 * Reads and validates the config file at `path` with `env` overrides, reading it and every file it names
 * without blocking the event loop (see configFromDocument). Rejects with ConfigError.
 */
export async function loadConfig(path: string, env: ConfigEnv = process.env): Promise<Config> {
  let text: string;
  try {
    text = await readBoundedText(path, 'config');
  } catch (error) {
    throw new ConfigError([`(file): cannot read ${path} (${errno(error)})`]);
  }
  return configFromDocument(parseYamlText(text), env);
}
