/**
 * SIGHUP and `POST /-/reload`: re-reads the config file through the daemon's loader and applies what can change
 * safely (config/reload.ts says which keys need a restart), the API keys of `api_key_file`s (api-key-files.ts),
 * and the web config (TLS files, `--web.config.file`).
 * An invalid new file is refused and the previous configuration stays in force; reloads run one at a time.
 */
import type { Logger } from 'pino';
import type { AccountRuntime } from './accounts.js';
import { restartKeys, type ReloadResult, UNDER_ATTACK_SPLIT_KEY } from '../config/reload.js';
import type { Config } from '../config/types.js';
import { ConfigError } from '../errors.js';
import { applyApiKeys } from './api-key-files.js';
import type { Metrics } from '../metrics/definitions.js';
import type { RemediationEngine } from '../remediation/engine.js';

export interface ReloadDeps {
  /** the configuration in force, changed in place */
  config: Config;
  /** re-reads the config file; without it a reload fails */
  reloadConfig: (() => Promise<Config>) | undefined;
  /** re-reads the TLS files or the web-config file; false when that failed */
  reloadWeb: () => Promise<boolean>;
  /**
   * each account's scheduler (restarted when the schedules change), client (its API key), poll jobs (the
   * switched-off collectors, the new scope) and state
   */
  accounts: ReadonlyMap<string, Pick<AccountRuntime, 'name' | 'scheduler' | 'client' | 'state' | 'polls'>>;
  /** an account's inventory now follows the new scope: render the exposition, publish the server list */
  scopeApplied: (account: Pick<AccountRuntime, 'name' | 'state' | 'polls'>) => void;
  /** each account's engine: a removed rule takes its pending changes with it */
  engines: ReadonlyMap<string, Pick<RemediationEngine, 'rulesChanged'>>;
  metrics: Pick<Metrics, 'configReloadSuccessful' | 'configReloadSuccessAt'>;
  /** the exposition shows the reload's outcome */
  markDirty: () => void;
  logger: Logger;
  now: () => number;
  /** the daemon is stopping: a reload changes nothing */
  stopping: () => boolean;
}

/** Applies the parts of `next` a reload may change to `config`, in place; returns the keys that need a restart. */
async function apply(d: ReloadDeps, next: Config): Promise<string[]> {
  const { config } = d;
  const needsRestart = restartKeys(config, next);
  if (needsRestart.length > 0)
    d.logger.warn(
      { keys: needsRestart },
      'configuration reload: these keys changed and need a restart; they keep their previous values, the rest is applied',
    );
  for (const account of config.accounts) {
    const services = next.accounts.find((a) => a.name === account.name)?.services;
    // Read by the next firewall run of the account.
    if (services) Object.assign(account.services, services);
  }
  const schedulesChanged = JSON.stringify(config.schedules) !== JSON.stringify(next.schedules);
  if (schedulesChanged && !needsRestart.includes(UNDER_ATTACK_SPLIT_KEY)) {
    Object.assign(config.schedules, next.schedules);
    await Promise.all([...d.accounts.values()].map((account) => account.scheduler.restart()));
  }
  const { rules, dryRun, budgetPerHour, safety } = next.remediation;
  Object.assign(config.remediation, { rules, dryRun, budgetPerHour, safety });
  // The key the new configuration read from each api_key_file: the next request sends it.
  applyApiKeys(config, next, d.accounts, d.logger);
  // Collector switches: read by each account's next runs; a collector switched off loses its series and
  // images at once. The scope: applied to the latest server list at once, so that remediation and discovery
  // stop seeing a newly excluded server before the next servers run.
  Object.assign(config.collectors, next.collectors);
  await Promise.all([...d.accounts.values()].map((account) => account.polls.dropSwitchedOff()));
  for (const account of config.accounts)
    Object.assign(account.scope, next.accounts.find((a) => a.name === account.name)?.scope ?? {});
  await Promise.all(
    [...d.accounts.values()].map((account) =>
      account.polls.applyScope().then(
        () => d.scopeApplied(account),
        (error: unknown) =>
          d.logger.error(
            { account: account.name, err: error },
            'cannot apply the new scope to the latest server list; the next servers run applies it',
          ),
      ),
    ),
  );
  // A removed rule takes its pending changes with it; a journal that fails here fails no reload.
  await Promise.all(
    [...d.engines.values()].map((e) =>
      e.rulesChanged().catch((error: unknown) => {
        d.logger.error({ err: error }, 'cannot cancel the pending changes of removed remediation rules');
      }),
    ),
  );
  return needsRestart;
}

/** The daemon's `reload()`: one at a time, each answering what it applied or why it refused. */
export function createReload(d: ReloadDeps): () => Promise<ReloadResult> {
  const failed = (invalid: boolean, problems: string[]): ReloadResult => {
    d.metrics.configReloadSuccessful.set(0);
    d.markDirty();
    return { ok: false, invalid, problems };
  };
  const once = async (): Promise<ReloadResult> => {
    if (d.stopping()) return failed(false, ['the daemon is stopping']);
    const webOk = await d.reloadWeb();
    if (!d.reloadConfig) return failed(false, ['no configuration file to reload']);
    let next: Config;
    try {
      next = await d.reloadConfig();
    } catch (error) {
      const invalid = error instanceof ConfigError;
      const problems = invalid ? error.problems : [(error as Error).message];
      d.logger.error({ problems }, 'configuration reload failed; the previous configuration stays in force');
      return failed(invalid, problems);
    }
    const needsRestart = await apply(d, next);
    if (!webOk)
      return failed(false, [
        'the web config could not be reloaded; the previous one stays in force (see its log line)',
      ]);
    d.metrics.configReloadSuccessful.set(1);
    d.metrics.configReloadSuccessAt.set(d.now() / 1000);
    d.markDirty();
    const { rules, dryRun, budgetPerHour } = d.config.remediation;
    d.logger.info(
      { rules: rules.length, dry_run: dryRun, budget_per_hour: budgetPerHour, needs_restart: needsRestart.length },
      'configuration reloaded',
    );
    return { ok: true, needsRestart };
  };
  /** the reload in progress: one at a time */
  let reloading: Promise<unknown> = Promise.resolve();
  return () => {
    const result = reloading.then(once);
    reloading = result.catch(() => undefined);
    return result;
  };
}
