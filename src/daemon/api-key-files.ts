/**
 * Each account's `api_key_file` while the daemon runs: a reload (SIGHUP, `POST /-/reload`) puts in force the
 * key the new configuration read (`applyApiKeys`), and a change of the file re-reads it (`watchApiKeyFiles`:
 * polled as the TLS files are, which also sees a Kubernetes Secret update, where the `..data` symlink is
 * replaced and the path then names another file). The next request sends the new key; a request already
 * sent finishes with the old one (upstream/api-key.ts). A file that is empty, cannot be read or holds what
 * cannot be a key (a second line, a control character, whitespace inside: config/api-key.ts) keeps the old
 * key and fails that reload (`baremetal_config_last_reload_successful 0`); the log names the file, never a key.
 * A key given by `BAREMETAL_API_KEY` or in the YAML needs a restart.
 */
import { unwatchFile, watchFile, type Stats } from 'node:fs';
import type { Logger } from 'pino';
import type { AccountRuntime } from './accounts.js';
import { parseApiKey } from '../config/api-key.js';
import type { Config } from '../config/types.js';
import type { Metrics } from '../metrics/definitions.js';
import { readBoundedText, readProblem } from '../read-bounded-file.js';

/** How often each key file is checked for a change, in milliseconds (as the TLS files). */
export const KEY_FILE_INTERVAL_MS = 10_000;

type Clients = ReadonlyMap<string, Pick<AccountRuntime, 'client'>>;

/**
 * After a reload read `next`: each account of `config` (the configuration in force, changed in place) whose
 * key came from the same file in both gets the key `next` read. Returns the accounts whose key changed.
 */
export function applyApiKeys(config: Config, next: Config, clients: Clients, logger: Logger): string[] {
  const changed: string[] = [];
  for (const account of config.accounts) {
    const upstream = next.accounts.find((a) => a.name === account.name)?.upstream;
    const file = account.upstream.apiKeyFile;
    if (file === undefined || upstream?.apiKeyFile !== file) continue;
    if (putInForce(account, clients, upstream.apiKey, logger)) changed.push(account.name);
  }
  return changed;
}

/** Puts `key` in force for `account`; true when it differs from the key in force. */
function putInForce(account: Config['accounts'][number], clients: Clients, key: string, logger: Logger): boolean {
  const client = clients.get(account.name)?.client;
  if (!client?.apiKey.set(key)) return false;
  account.upstream.apiKey = key;
  logger.info(
    { account: account.name, file: account.upstream.apiKeyFile },
    'API key reloaded from its file: the next request sends the new key',
  );
  return true;
}

export interface KeyFileWatchDeps {
  /** the configuration in force: its accounts' `apiKeyFile` and (updated) `apiKey` */
  config: Config;
  clients: Clients;
  metrics: Pick<Metrics, 'configReloadSuccessful' | 'configReloadSuccessAt'>;
  /** the exposition shows the outcome */
  markDirty: () => void;
  logger: Logger;
  /** ms since epoch */
  now: () => number;
  /** how often each file is checked, ms (default KEY_FILE_INTERVAL_MS) */
  intervalMs?: number;
}

/**
 * Watches every account's key file; a change (modification time, inode or size: a rename over it and a
 * symlink swap change the inode) re-reads it as a reload of that key would. Returns `stop()`.
 */
export function watchApiKeyFiles(d: KeyFileWatchDeps): { stop: () => void } {
  const watched: Array<[string, (current: Stats, previous: Stats) => void]> = [];
  for (const account of d.config.accounts) {
    const file = account.upstream.apiKeyFile;
    if (file === undefined) continue;
    // The newest change's read wins: an earlier read that finishes later is ignored.
    let reads = 0;
    const reread = async () => {
      const read = ++reads;
      let key: string | undefined;
      let problem: string | undefined;
      try {
        const parsed = parseApiKey(await readBoundedText(file, 'secret'));
        key = parsed.key;
        if (parsed.problem !== undefined) problem = `file ${file} ${parsed.problem}`;
      } catch (error) {
        problem = `cannot read ${file} (${readProblem(error)})`;
      }
      if (read !== reads) return;
      if (problem !== undefined || key === undefined) {
        d.logger.error(
          { account: account.name, file, problem },
          'API key file reload failed; keeping the previous key',
        );
        d.metrics.configReloadSuccessful.set(0);
      } else {
        putInForce(account, d.clients, key, d.logger);
        d.metrics.configReloadSuccessful.set(1);
        d.metrics.configReloadSuccessAt.set(d.now() / 1000);
      }
      d.markDirty();
    };
    const onChange = (current: Stats, previous: Stats) => {
      if (current.mtimeMs === previous.mtimeMs && current.ino === previous.ino && current.size === previous.size)
        return;
      void reread();
    };
    watchFile(file, { interval: d.intervalMs ?? KEY_FILE_INTERVAL_MS, persistent: false }, onChange);
    watched.push([file, onChange]);
  }
  return {
    stop: () => {
      for (const [file, onChange] of watched) unwatchFile(file, onChange);
    },
  };
}
