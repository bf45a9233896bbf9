/**
 * What a configuration reload may change while the daemon runs, and what needs a restart. Reloadable:
 * each account's `services` and `servers` scope, `collectors`, the `schedules` (unless `firewall_under_attack` starts or stops differing from
 * `firewall`: that adds or removes a poll job), and `remediation.rules`, `dry_run`, `budget_per_hour` and `safety`.
 * The API key read from an `api_key_file` is reloaded too (its contents; the file's path needs a restart).
 * Anything else that changed (accounts added or removed, an upstream's base_url or key, state_dir, database,
 * web.listen_address, web.tls, credentials, graphs, firewall limits, log_level) keeps its previous value
 * until a restart; the reload applies the rest and names those keys (never their values) in one log line.
 */
import { underAttackPollApart } from './schema.js';
import type { Config } from './types.js';

/** The key named when a reload would add or remove the `firewall_under_attack` job (underAttackPollApart). */
export const UNDER_ATTACK_SPLIT_KEY = 'schedules.firewall_under_attack';

/** The outcome of `Daemon.reload()`. */
export type ReloadResult =
  | { ok: true; needsRestart: string[] }
  /** `invalid`: the new file was refused (ConfigError); otherwise it could not be reloaded at all */
  | { ok: false; invalid: boolean; problems: string[] };

/** The config with its reloadable parts left out; accounts by name. */
function fixedParts(config: Config) {
  const { schedules: _s, remediation, accounts, collectors: _c, ...rest } = config;
  const { rules: _r, dryRun: _d, budgetPerHour: _b, safety: _g, ...fixedRemediation } = remediation;
  return {
    ...rest,
    remediation: fixedRemediation,
    accounts: Object.fromEntries(
      accounts.map(({ services: _, scope: _scope, name, upstream, ...account }) => {
        // A key read from a file is reloaded (its file's path is not): see daemon/api-key-files.ts.
        const { apiKey: _k, ...fixed } = upstream;
        return [name, { ...account, upstream: upstream.apiKeySource === 'file' ? fixed : upstream }];
      }),
    ),
  };
}

const snake = (key: string) => key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** The config-file key of a loaded value whose name differs. */
const FILE_KEYS: Record<string, string> = {
  'web.host': 'web.listen_address',
  'web.port': 'web.listen_address',
  'web.additional': 'web.listen_address',
  'web.auth_limits.wrong_password_refill_ms': 'web.auth_limits.wrong_password_refill',
  'database.kind': 'database.url',
  'database.redacted_url': 'database.url',
};

/** Dotted paths (config-file spelling) where `a` and `b` differ; an account's name is kept as it is. */
function differences(a: unknown, b: unknown, path: string, names: boolean): string[] {
  const isObject = (v: unknown): v is Record<string, unknown> =>
    typeof v === 'object' && v !== null && !Array.isArray(v);
  if (!isObject(a) || !isObject(b)) return JSON.stringify(a) === JSON.stringify(b) ? [] : [path];
  const keys = [...new Set([...Object.keys(a), ...Object.keys(b)])].sort();
  return keys.flatMap((key) => {
    const child = `${path}.${names ? key : snake(key)}`;
    if (!(key in a) || !(key in b)) return [child];
    return differences(a[key], b[key], child, path === '' && key === 'accounts');
  });
}

/** The keys that changed from `current` to `next` but need a restart to take effect. */
export function restartKeys(current: Config, next: Config): string[] {
  const paths = differences(fixedParts(current), fixedParts(next), '', false).map((k) => k.slice(1));
  const keys = [...new Set(paths.map((path) => FILE_KEYS[path] ?? path))];
  if (underAttackPollApart(current.schedules) !== underAttackPollApart(next.schedules))
    keys.push(UNDER_ATTACK_SPLIT_KEY);
  return keys;
}
