/**
 * The state backend the config names: BAREMETAL_DATABASE_URL, else the file `database.url_file` names, else
 * `database.url` (PostgreSQL), else SQLite.
 */
import { hostname } from 'node:os';
import { readProblem } from '../read-bounded-file.js';
import { redactDatabaseUrl } from './database-url.js';
import type { ConfigDocument, ConfigEnv, ReadFile } from './document.js';
import type { Config } from './types.js';

/**
 * The state backend: BAREMETAL_DATABASE_URL, else `database.url_file`, else `database.url` (PostgreSQL), else
 * SQLite. The URL must be `postgres://` or `postgresql://` with a host; problems name the key, never the URL
 * (it carries the password). Undefined with a problem when it is unusable.
 */
export function readDatabase(
  checks: ConfigDocument,
  env: ConfigEnv,
  readFile: ReadFile,
): Config['database'] | undefined {
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
        problems.push(`database.url_file: cannot read ${urlFile} (${readProblem(error)})`);
        return undefined;
      }
    } else {
      url = checks.text('database.url');
      at = 'database.url';
    }
  }
  const shares = checks.value('database.share_accounts') === true;
  if (!url) {
    if (!shares) return { kind: 'sqlite' };
    problems.push(
      'database.share_accounts: needs PostgreSQL (database.url, database.url_file or BAREMETAL_DATABASE_URL): with SQLite there is one replica',
    );
    return undefined;
  }
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
  return {
    kind: 'postgres',
    url,
    redactedUrl: redactDatabaseUrl(url),
    ...(shares ? { shares: { replica: checks.text('database.replica_name') ?? hostname() } } : {}),
  };
}
