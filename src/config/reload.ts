/**
 * What a configuration reload may change while the daemon runs, and what needs a restart: the keys the schema
 * annotates `reloadable: true` (RELOADABLE_KEYS: each account's `services` and `servers` scope, `collectors`,
 * the `schedules`, and `remediation.rules`, `dry_run`, `budget_per_hour` and `safety`) are applied by
 * daemon/reload.ts, with two exceptions of their own: a `schedules.firewall_under_attack` that starts or stops
 * differing from `schedules.firewall` adds or removes a poll job (a restart), and the API key read from an
 * `api_key_file` is reloaded (its contents; the file's path needs a restart). Anything else that changed keeps
 * its previous value until a restart; the reload applies the rest and names those keys (never their values)
 * in one log line.
 */
import { configFileSchema, underAttackPollApart } from './schema.js';
import type { Config } from './types.js';

/** The key named when a reload would add or remove the `firewall_under_attack` job (underAttackPollApart). */
export const UNDER_ATTACK_SPLIT_KEY = 'schedules.firewall_under_attack';

/** The outcome of `Daemon.reload()`. */
export type ReloadResult =
  | { ok: true; needsRestart: string[] }
  /** `invalid`: the new file was refused (ConfigError); otherwise it could not be reloaded at all */
  | { ok: false; invalid: boolean; problems: string[] };

/** A node of the config schema as it is walked here: its keys, its items, its `reloadable` annotation. */
interface SchemaNode {
  properties?: Record<string, SchemaNode>;
  items?: SchemaNode;
  reloadable?: boolean;
}

/**
 * The keys a reload applies, in the file's spelling (`accounts[].services` for a list's items): every key the
 * schema annotates `reloadable: true`, which covers every key under it. The schema is the one home of that
 * fact; daemon/reload.ts applies these parts, and docs/configuration.md's reload column is generated from
 * the same annotation.
 */
export const RELOADABLE_KEYS: readonly string[] = (function walk(node: SchemaNode, prefix: string): string[] {
  return Object.entries(node.properties ?? {}).flatMap(([name, child]) => {
    const key = `${prefix}${name}`;
    if (child.reloadable === true) return [key];
    return [...walk(child, `${key}.`), ...(child.items ? walk(child.items, `${key}[].`) : [])];
  });
})(configFileSchema as SchemaNode, '');

/**
 * A loaded value's path (`accounts.<name>.scope.include`, `remediation.journal_retention_ms`) as the schema
 * spells the key: an account's entry as `accounts[]`, its `scope` as `servers`, a duration without the `_ms`
 * the loader added.
 */
function schemaKey(path: string): string {
  return path
    .replace(/^accounts\.[^.]+/, 'accounts[]')
    .replace(/^accounts\[\]\.scope(?=\.|$)/, 'accounts[].servers')
    .replace(/_ms(?=\.|$)/g, '');
}

/** Whether a reload applies the value at `path` (a loaded value's, see `schemaKey`). */
const reloadable = (path: string): boolean => {
  const key = schemaKey(path);
  return RELOADABLE_KEYS.some((r) => key === r || key.startsWith(`${r}.`));
};

/**
 * The config as compared: accounts by name, and an upstream's key left out when it came from its
 * `api_key_file`, whose contents a reload (and the file watcher) puts in force; the file's path is not
 * reloadable (daemon/api-key-files.ts). The schema cannot say "the file's contents", hence this one case.
 */
function compared(config: Config) {
  return {
    ...config,
    accounts: Object.fromEntries(
      config.accounts.map(({ name, upstream, ...account }) => {
        const { apiKey: _k, ...fromFile } = upstream;
        return [name, { ...account, upstream: upstream.apiKeySource === 'file' ? fromFile : upstream }];
      }),
    ),
  };
}

const snake = (key: string) => key.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`);

/** The config-file key under which a loaded value (and everything under it) was read, where the two differ. */
const FILE_PREFIXES: ReadonlyArray<readonly [string, string]> = [
  ['remediation.principals', 'remediation.auth.principals'],
  ['remediation.bearer_tokens', 'remediation.auth.bearer_token_files'],
  ['remediation.basic_auth_users', 'remediation.auth.basic_auth_users'],
  ['web.auth.bearer_tokens', 'web.auth.bearer_token_files'],
];

/** `path` (a loaded value's) in the file's spelling: FILE_KEYS, FILE_PREFIXES, and no `_ms` the loader added. */
function fileKey(path: string): string {
  if (FILE_KEYS[path] !== undefined) return FILE_KEYS[path];
  const prefix = FILE_PREFIXES.find(([loaded]) => path === loaded || path.startsWith(`${loaded}.`));
  return prefix ? prefix[1] : path.replace(/_ms(?=\.|$)/g, '');
}

/** The config-file key of a loaded value whose name differs otherwise than by `_ms`. */
const FILE_KEYS: Record<string, string> = {
  'web.host': 'web.listen_address',
  'web.port': 'web.listen_address',
  'web.additional': 'web.listen_address',
  'database.kind': 'database.url',
  'database.redacted_url': 'database.url',
  'database.shares': 'database.share_accounts',
  'database.shares.replica': 'database.replica_name',
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
  const paths = differences(compared(current), compared(next), '', false).map((k) => k.slice(1));
  const fixed = paths.filter((path) => !reloadable(path));
  const keys = [...new Set(fixed.map(fileKey))];
  if (underAttackPollApart(current.schedules) !== underAttackPollApart(next.schedules))
    keys.push(UNDER_ATTACK_SPLIT_KEY);
  return keys;
}
