/**
 * The credentials the config names by file: the bearer-token files of a credentials block (`remediation.auth`,
 * `web.auth`), the remediation principals (`remediation.auth.principals`) and the daemon's TLS files. The
 * schema has checked the hashes (the `bcrypt` keyword); these read the files and compare the entries.
 */
import { readProblem } from '../read-bounded-file.js';
import type { ConfigDocument, ReadFile } from './document.js';
import type { ConfigFile } from './schema.js';
import type { Credentials, Principal } from './types.js';

type PrincipalFile = ConfigFile['remediation']['auth']['principals'][number];

/** The token in `path` (trimmed), or undefined with a problem at `key`: unreadable, or shorter than 16 characters. */
function readToken(checks: ConfigDocument, key: string, path: string, readFile: ReadFile): string | undefined {
  try {
    const token = readFile(path, 'secret').trim();
    if (token.length >= 16) return token;
    checks.problems.push(`${key}: the token in ${path} is shorter than 16 characters`);
  } catch (error) {
    checks.problems.push(`${key}: cannot read ${path} (${readProblem(error)})`);
  }
  return undefined;
}

/** The credentials block at `key` (remediation.auth, web.auth) with its bearer-token files read. */
export function readCredentials(checks: ConfigDocument, key: string, readFile: ReadFile): Credentials {
  const bearerTokens: string[] = [];
  const files = checks.value(`${key}.bearer_token_files`);
  (Array.isArray(files) ? files : []).forEach((path: unknown, i) => {
    if (typeof path !== 'string') return;
    const token = readToken(checks, `${key}.bearer_token_files.${i}`, path, readFile);
    if (token !== undefined) bearerTokens.push(token);
  });
  const users = checks.value(`${key}.basic_auth_users`);
  const basicAuthUsers = users !== null && typeof users === 'object' ? (users as Record<string, string>) : {};
  return { bearerTokens, basicAuthUsers };
}

/**
 * `remediation.auth.principals`: names unique (also against the deprecated form's `token-N` and user
 * names), exactly one credential each, token files read and unique, accounts configured.
 */
export function readPrincipals(
  checks: ConfigDocument,
  readFile: ReadFile,
  legacy: Credentials,
  accounts: readonly string[],
): Principal[] {
  const key = 'remediation.auth.principals';
  const list = checks.value(key);
  if (!Array.isArray(list)) return [];
  const { problems } = checks;
  const names = new Set([
    ...legacy.bearerTokens.map((_, i) => `token-${i + 1}`),
    ...Object.keys(legacy.basicAuthUsers),
  ]);
  // A token names one principal: two with one token could not be told apart.
  const tokens = new Set(legacy.bearerTokens);
  return (list as PrincipalFile[]).flatMap((p, i): Principal[] => {
    const at = `${key}.${i}`;
    if (checks.rejected(at)) return [];
    const before = problems.length;
    if (names.has(p.name)) problems.push(`${at}.name: duplicate principal name ${JSON.stringify(p.name)}`);
    names.add(p.name);
    const principal: Principal = { name: p.name, roles: [...p.roles] };
    if ((p.bearer_token_file === undefined) === (p.basic_auth_hash === undefined))
      problems.push(`${at}: give exactly one of bearer_token_file and basic_auth_hash`);
    else if (p.bearer_token_file !== undefined) {
      const token = readToken(checks, `${at}.bearer_token_file`, p.bearer_token_file, readFile);
      if (token !== undefined && tokens.has(token))
        problems.push(`${at}.bearer_token_file: another principal has the same token`);
      if (token !== undefined) tokens.add(token);
      if (token !== undefined) principal.bearerToken = token;
    } else principal.basicAuthHash = p.basic_auth_hash!;
    for (const [j, account] of (p.accounts ?? []).entries())
      if (!accounts.includes(account))
        problems.push(`${at}.accounts.${j}: no account ${JSON.stringify(account)} is configured`);
    if (p.accounts) principal.accounts = [...p.accounts];
    if (p.actions) principal.actions = [...p.actions];
    if (p.require_approval) principal.requireApproval = true;
    return problems.length === before ? [principal] : [];
  });
}

/** `web.tls`: its certificate and key files are readable (the web server reads them again when it starts). */
export function checkTlsFiles(checks: ConfigDocument, readFile: ReadFile): void {
  for (const key of ['cert_file', 'key_file'] as const) {
    const path = checks.text(`web.tls.${key}`);
    if (path === undefined) continue;
    try {
      readFile(path, 'pem');
    } catch (error) {
      checks.problems.push(`web.tls.${key}: cannot read ${path} (${readProblem(error)})`);
    }
  }
}
