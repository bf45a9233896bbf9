/**
 * Loading the configuration: YAML text (or a file) plus environment overrides → `Config`, or a ConfigError
 * listing every problem at once, one line each, naming the key and what was expected. The schema finds what
 * a document alone shows (unknown keys, types, ranges, and with the format keywords of config/formats.ts
 * durations, cron expressions, the listen address, bcrypt hashes; config/document.ts); the checks beside it
 * read the files the config names and compare keys: credentials (config/credentials.ts), accounts and
 * upstream (config/upstream-accounts.ts), the database (config/database.ts). A key the schema already rejected is not
 * checked again.
 */
import { parse as parseYaml } from 'yaml';
import { buildWithFiles, readBoundedText, readProblem } from '../read-bounded-file.js';
import { ConfigError } from '../errors.js';
import { readAlertmanager, readBlockWhileFiring } from './alertmanager.js';
import { accountNames, compileScope, readAccounts } from './upstream-accounts.js';
import { readDatabase } from './database.js';
import { ConfigDocument, type ConfigEnv, type ReadFile } from './document.js';
import { checkTlsFiles, readCredentials, readPrincipals } from './credentials.js';
import { durationMs, parseDuration, parseListenAddress, type DurationFormat } from './formats.js';
import { DEFAULT_COOLDOWN_MS, HOLD_FORMAT, type ConfigFile } from './schema.js';
import { parseConfigSource, renderProblems, type ConfigSource } from './positions.js';
import type { Config, RemediationRule } from './types.js';

export type { ConfigEnv } from './document.js';
export {
  BCRYPT_HASH,
  MAX_BCRYPT_COST,
  bcryptCostProblem,
  bcryptHashProblem,
  parseDuration,
  parseListenAddress,
} from './formats.js';

/** The reader of a config built without configFromDocument: it names no file it could read. */
const noFiles: ReadFile = (path) => {
  throw new Error(`${path} was not read (the config is built by configFromDocument when it names files)`);
};

/** A duration the schema accepted (its `duration` keyword), in ms. */
const durationOf = (text: string, format: DurationFormat = text): number => durationMs(format, text)!;

/**
 * Validates parsed YAML (`raw`) with `env` overrides and returns the normalized Config.
 * `readFile` gives the text of key, token and TLS files (configFromDocument reads them first; tests inject
 * their own). Throws ConfigError with every problem found; with `source` (the file `raw` was parsed from), each
 * line whose key the file has starts with `file:line:column: `.
 */
export function buildConfig(
  raw: unknown,
  env: ConfigEnv = {},
  readFile: ReadFile = noFiles,
  source?: ConfigSource,
): Config {
  const doc = (raw ?? {}) as Record<string, unknown>;
  if (typeof doc !== 'object' || Array.isArray(doc)) throw new ConfigError(['(top level): must be a mapping']);
  const checks = new ConfigDocument(doc);
  const topScope = compileScope(checks, 'servers');
  const accounts = readAccounts(checks, env, readFile);
  const remediationAuth = readCredentials(checks, 'remediation.auth', readFile);
  const principals = readPrincipals(checks, readFile, remediationAuth, accountNames(checks));
  checkRules(checks);
  const webAuth = readCredentials(checks, 'web.auth', readFile);
  const database = readDatabase(checks, env, readFile);
  checkTlsFiles(checks, readFile);
  const alertmanager = readAlertmanager(checks, readFile, (text) => durationOf(text));
  const blockWhileFiring = readBlockWhileFiring(checks);

  const all = checks.lines();
  if (all.length > 0) throw new ConfigError(renderProblems(all, doc, source));
  // No problem: the document is a valid ConfigFile and every value above was read.
  const file = doc as ConfigFile;
  const { safety } = file.remediation;
  return {
    accounts: accounts.map((account) => account(topScope!)),
    web: {
      ...parseListenAddress(file.web.listen_address)!,
      ...(file.web.tls ? { tls: { certFile: file.web.tls.cert_file, keyFile: file.web.tls.key_file } } : {}),
      auth: webAuth,
      authLimits: {
        inFlightPerAddress: file.web.auth_limits.in_flight_per_address,
        wrongPasswordBurst: file.web.auth_limits.wrong_password_burst,
        wrongPasswordRefillMs: durationOf(file.web.auth_limits.wrong_password_refill),
      },
    },
    stateDir: file.state_dir,
    database: database!,
    logLevel: file.log_level,
    schedules: {
      ...file.schedules,
      firewall_under_attack: file.schedules.firewall_under_attack ?? file.schedules.firewall,
    },
    graphs: { types: file.graphs.types, scales: file.graphs.scales, maxWidth: file.graphs.max_width },
    firewall: {
      maxIpsPerService: file.firewall.max_ips_per_service,
      ipRetentionMs: durationOf(file.firewall.ip_retention),
    },
    collectors: { ...file.collectors },
    remediation: {
      dryRun: file.remediation.dry_run,
      journalRetentionMs: durationOf(file.remediation.journal_retention),
      retireAfterMs: durationOf(file.remediation.retire_after),
      approvalTimeoutMs: durationOf(file.remediation.approval_timeout),
      budgetPerHour: file.remediation.budget_per_hour,
      safety: {
        denyPowerWhenAttacked: safety.deny_power_when_attacked,
        attackWindowMs: durationOf(safety.attack_window),
        circuitBreaker: {
          windowMs: durationOf(safety.circuit_breaker.window),
          maxServers: safety.circuit_breaker.max_servers,
          maxFraction: safety.circuit_breaker.max_fraction,
        },
        maxPowerActionsPerServer: safety.max_power_actions_per_server,
        capWindowMs: durationOf(safety.cap_window),
        blockWhileFiring,
      },
      maxAlerts: file.remediation.max_alerts,
      ...(alertmanager ? { alertmanager } : {}),
      ...remediationAuth,
      principals,
      rules: file.remediation.rules.map(rule),
    },
  };
}

/**
 * One rule, normalized: its hold ("0" and "0s": none) and its cooldown (the action's default; a firewall
 * state rule's never below the API's 2 minutes, contract §8) in ms.
 */
function rule(file: ConfigFile['remediation']['rules'][number]): RemediationRule {
  const action = file.action ?? file.steps![0]!.action;
  const cooldown = file.cooldown === undefined ? undefined : parseDuration(file.cooldown)!;
  const cooldownMs =
    cooldown === undefined
      ? DEFAULT_COOLDOWN_MS[action]
      : action === 'firewall_state'
        ? Math.max(cooldown, DEFAULT_COOLDOWN_MS.firewall_state)
        : cooldown;
  const steps = file.steps?.map((step, i, all) => ({
    action: step.action,
    verifyWithinMs: durationOf(step.verify_within),
    requireApproval: step.require_approval,
    cooldownMs:
      step.cooldown !== undefined
        ? durationOf(step.cooldown)
        : i === 0
          ? cooldownMs
          : durationOf(all[i - 1]!.verify_within),
  }));
  const first = steps?.[0];
  return {
    alertname: file.alertname,
    matchers: file.matchers,
    action,
    accountLabel: file.account_label,
    serverIdLabel: file.server_id_label,
    ipLabel: file.ip_label,
    firingState: String(file.firing_state) as '0' | '1',
    resolvedState: String(file.resolved_state) as '0' | '1',
    ...(file.sensitivity ? { sensitivity: file.sensitivity } : {}),
    holdMs: durationOf(file.hold, HOLD_FORMAT),
    cooldownMs: first?.cooldownMs ?? cooldownMs,
    requireOwnedIp: file.require_owned_ip,
    requireApproval: first?.requireApproval ?? file.require_approval,
    ...(first
      ? { verifyWithinMs: first.verifyWithinMs, steps: steps! }
      : file.verify_within === undefined
        ? {}
        : { verifyWithinMs: durationOf(file.verify_within) }),
  };
}

/** A `firewall_sensitivity` rule names its sensitivity. */
function checkRules(checks: ConfigDocument): void {
  const rules = checks.value('remediation.rules');
  if (!Array.isArray(rules)) return;
  rules.forEach((entry: Record<string, unknown> | null, i) => {
    const action = checks.value(`remediation.rules.${i}.action`);
    if (action === 'firewall_sensitivity' && entry?.sensitivity === undefined)
      checks.problems.push(`remediation.rules.${i}.sensitivity: required for action firewall_sensitivity`);
    if ((entry?.action === undefined) === (entry?.steps === undefined) && !checks.rejected(`remediation.rules.${i}`))
      checks.problems.push(`remediation.rules.${i}: give exactly one of action and steps`);
    else if (entry?.steps !== undefined)
      for (const key of ['verify_within', 'require_approval', 'cooldown'])
        if (entry[key] !== undefined && entry[key] !== false)
          checks.problems.push(`remediation.rules.${i}.${key}: a ladder sets it per step (steps[].${key})`);
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
 * a problem naming the key and the path). Rejects with ConfigError, whose lines carry positions in `source`.
 */
export function configFromDocument(raw: unknown, env: ConfigEnv = {}, source?: ConfigSource): Promise<Config> {
  // A copy for each run: buildConfig fills the schema's defaults into the document it is given.
  return buildWithFiles((read) =>
    buildConfig(structuredClone(raw), env, (path, kind) => read(path, kind).toString('utf8'), source),
  );
}

/**
 * Reads and validates the config file at `path` with `env` overrides, reading it and every file it names
 * without blocking the event loop (see configFromDocument). Rejects with ConfigError, each line whose key the
 * file has starting with `path:line:column: ` (config/positions.ts), a YAML syntax error's too.
 */
export async function loadConfig(path: string, env: ConfigEnv = process.env): Promise<Config> {
  let text: string;
  try {
    text = await readBoundedText(path, 'config');
  } catch (error) {
    throw new ConfigError([`(file): cannot read ${path} (${readProblem(error)})`]);
  }
  const { value, source } = parseConfigSource(path, text);
  return configFromDocument(value, env, source);
}
