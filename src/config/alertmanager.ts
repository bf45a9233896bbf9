/**
 * `remediation.alertmanager`: where the daemon reads Alertmanager's alerts (the outage gate,
 * `remediation.safety.block_while_firing`) and, later, writes its silences. `http_config` is spelled as
 * Prometheus's `alertmanager_config` and Alertmanager's own `http_config` write it (`authorization`,
 * `basic_auth`, `tls_config`), secrets by file only. Off unless configured: nothing then changes.
 */
import type { ConfigDocument, ReadFile } from './document.js';
import { type LabelMatcher, parseMatcher } from './matchers.js';
import type { AlertmanagerConfig } from './types.js';
import { readNamedFile } from './upstream-accounts.js';

const AT = 'remediation.alertmanager';

/** The URL at `key`: http or https, no credentials in it (they go in `http_config`). */
function checkUrl(checks: ConfigDocument, key: string): string | undefined {
  const text = checks.text(key);
  if (text === undefined) return undefined;
  let url: URL;
  try {
    url = new URL(text);
  } catch {
    // Not echoed: a text that does not parse may still hold a password.
    checks.problems.push(`${key}: not a URL`);
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    checks.problems.push(`${key}: must be http:// or https:// (got ${url.protocol})`);
  else if (url.username || url.password)
    checks.problems.push(`${key}: credentials go in http_config (basic_auth, authorization), not in the URL`);
  else if (url.search || url.hash) checks.problems.push(`${key}: must have no query or fragment`);
  else return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
  return undefined;
}

/**
 * `remediation.alertmanager` with its files read, or undefined when absent or with a problem (added to
 * `checks`). `timeoutMs` is the schema-checked duration, converted by the caller.
 */
export function readAlertmanager(
  checks: ConfigDocument,
  readFile: ReadFile,
  durationMs: (text: string) => number,
): AlertmanagerConfig | undefined {
  if (checks.value(AT) === undefined) return undefined;
  const before = checks.problems.length;
  const url = checkUrl(checks, `${AT}.url`);
  const http = `${AT}.http_config`;
  const hasAuth = checks.value(`${http}.authorization`) !== undefined;
  const hasBasic = checks.value(`${http}.basic_auth`) !== undefined;
  if (hasAuth && hasBasic) checks.problems.push(`${http}: give at most one of authorization and basic_auth`);
  const credentials = readNamedFile(checks, `${http}.authorization.credentials_file`, readFile, 'secret')?.trim();
  const password = readNamedFile(checks, `${http}.basic_auth.password_file`, readFile, 'secret')?.trim();
  const tls = `${http}.tls_config`;
  const [ca, cert, key] = (['ca_file', 'cert_file', 'key_file'] as const).map((k) =>
    readNamedFile(checks, `${tls}.${k}`, readFile, 'pem'),
  );
  if ((cert === undefined) !== (key === undefined) && checks.problems.length === before)
    checks.problems.push(`${tls}: give cert_file and key_file together`);
  if (checks.problems.length > before || url === undefined) return undefined;
  const serverName = checks.text(`${tls}.server_name`);
  return {
    url,
    timeoutMs: durationMs(checks.text(`${AT}.timeout`)!),
    resendIntervalMs: durationMs(checks.text(`${AT}.resend_interval`)!),
    maxResponseBytes: checks.value(`${AT}.max_response_bytes`) as number,
    silenceWhileHandled: checks.value(`${AT}.silence_while_handled`) !== false,
    ...(credentials !== undefined
      ? { authorization: { type: checks.text(`${http}.authorization.type`)!, credentials } }
      : {}),
    ...(password !== undefined
      ? { basicAuth: { username: checks.text(`${http}.basic_auth.username`)!, password } }
      : {}),
    tls: {
      ...(ca !== undefined ? { ca } : {}),
      ...(cert !== undefined ? { cert } : {}),
      ...(key !== undefined ? { key } : {}),
      ...(serverName !== undefined ? { serverName } : {}),
      insecureSkipVerify: checks.value(`${tls}.insecure_skip_verify`) === true,
    },
  };
}

/** `remediation.safety.block_while_firing`, parsed; a problem per matcher that is none, and when no Alertmanager is set. */
export function readBlockWhileFiring(checks: ConfigDocument): LabelMatcher[] {
  const key = 'remediation.safety.block_while_firing';
  const list = checks.value(key);
  if (!Array.isArray(list)) return [];
  const parsed = list.flatMap((text: string, i) => {
    const m = parseMatcher(text);
    if (typeof m === 'string') checks.problems.push(`${key}.${i}: ${m}`);
    return typeof m === 'string' ? [] : [m];
  });
  if (list.length > 0 && checks.value(AT) === undefined)
    checks.problems.push(`${key}: needs remediation.alertmanager (the gate reads its active alerts)`);
  return parsed;
}
