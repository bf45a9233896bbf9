/**
 * `--web.config.file`: prometheus/exporter-toolkit's web-config format, shared by every official exporter
 * (https://github.com/prometheus/exporter-toolkit/blob/master/docs/web-configuration.md), mapped onto node's
 * https options and this daemon's basic auth. Parsed from text (tests need no I/O but the PEM files), checked
 * strictly like exporter-toolkit's `yaml.UnmarshalStrict`: an unknown key is an error, and every problem is
 * one line naming the key.
 *
 * Differences, each refused or documented rather than silently ignored: `client_allowed_sans`, inline
 * `cert`/`key`/`client_ca` and `rate_limit` are refused as unsupported; `http2` is accepted and HTTP/1.1 is
 * served; TLS 1.3 cipher suites are not configurable (as in Go), so `cipher_suites` limits TLS 1.2 and below.
 */
import { createSecureContext, DEFAULT_CIPHERS, type SecureVersion, type TLSSocket } from 'node:tls';
import { Ajv, type ErrorObject } from 'ajv';
import type { Static } from 'typebox';
import { parse as parseYaml } from 'yaml';
import { bcryptHashProblem } from '../config/load.js';
import { ConfigError } from '../errors.js';
import { buildWithFiles, readBoundedText, readProblem } from '../read-bounded-file.js';
import { webConfigSchema } from './generated/web-config.js';
import { CURVES, TLS_VERSIONS, type ClientAuthType } from './web-config-names.js';

/** Go's cipher-suite names (crypto/tls `CipherSuites()` and `InsecureCipherSuites()`) → OpenSSL's. */
export const CIPHER_SUITES: Record<string, string> = {
  TLS_RSA_WITH_RC4_128_SHA: 'RC4-SHA',
  TLS_RSA_WITH_3DES_EDE_CBC_SHA: 'DES-CBC3-SHA',
  TLS_RSA_WITH_AES_128_CBC_SHA: 'AES128-SHA',
  TLS_RSA_WITH_AES_256_CBC_SHA: 'AES256-SHA',
  TLS_RSA_WITH_AES_128_CBC_SHA256: 'AES128-SHA256',
  TLS_RSA_WITH_AES_128_GCM_SHA256: 'AES128-GCM-SHA256',
  TLS_RSA_WITH_AES_256_GCM_SHA384: 'AES256-GCM-SHA384',
  TLS_ECDHE_ECDSA_WITH_RC4_128_SHA: 'ECDHE-ECDSA-RC4-SHA',
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA: 'ECDHE-ECDSA-AES128-SHA',
  TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA: 'ECDHE-ECDSA-AES256-SHA',
  TLS_ECDHE_RSA_WITH_RC4_128_SHA: 'ECDHE-RSA-RC4-SHA',
  TLS_ECDHE_RSA_WITH_3DES_EDE_CBC_SHA: 'ECDHE-RSA-DES-CBC3-SHA',
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA: 'ECDHE-RSA-AES128-SHA',
  TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA: 'ECDHE-RSA-AES256-SHA',
  TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256: 'ECDHE-ECDSA-AES128-SHA256',
  TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256: 'ECDHE-RSA-AES128-SHA256',
  TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256: 'ECDHE-RSA-AES128-GCM-SHA256',
  TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256: 'ECDHE-ECDSA-AES128-GCM-SHA256',
  TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384: 'ECDHE-RSA-AES256-GCM-SHA384',
  TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384: 'ECDHE-ECDSA-AES256-GCM-SHA384',
  TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256: 'ECDHE-RSA-CHACHA20-POLY1305',
  TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256: 'ECDHE-ECDSA-CHACHA20-POLY1305',
  // TLS 1.3: accepted as Go accepts them, and like Go never restricted (see TLS13_SUITES).
  TLS_AES_128_GCM_SHA256: 'TLS_AES_128_GCM_SHA256',
  TLS_AES_256_GCM_SHA384: 'TLS_AES_256_GCM_SHA384',
  TLS_CHACHA20_POLY1305_SHA256: 'TLS_CHACHA20_POLY1305_SHA256',
};

/** Node's TLS 1.3 suites, always kept: Go's `cipher_suites` does not apply to TLS 1.3. */
const TLS13_SUITES = DEFAULT_CIPHERS.split(':').filter((name) => name.startsWith('TLS_'));

/**
 * The headers exporter-toolkit lets `http_server_config.headers` set, with the values it allows (`undefined`:
 * any value). Every other header (Authorization, Content-Type, Set-Cookie, …) is refused, as there.
 */
const ALLOWED_HEADERS: Record<string, readonly string[] | undefined> = {
  'strict-transport-security': undefined,
  'x-content-type-options': ['nosniff'],
  'x-frame-options': ['deny', 'sameorigin'],
  'x-xss-protection': undefined,
  'content-security-policy': undefined,
};

/** An RFC 9110 field name: one or more `tchar`. */
const HEADER_NAME = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/;
/**
 * A control character HTTP does not allow in a field value (RFC 9110 §5.5): C0 but the tab, DEL, and the C1
 * controls. Any other character is allowed, as exporter-toolkit (Go) allows it: `€` is sent as its UTF-8
 * bytes, which RFC 9110 calls obs-text.
 */
const HEADER_VALUE_CONTROL = /(?!\t)\p{Cc}/u;

/** `value` as Node must be given it to send its UTF-8 bytes: one character per byte (Node writes latin1). */
const wireValue = (value: string) => Buffer.from(value, 'utf8').toString('latin1');

type WebConfigFile = Static<typeof webConfigSchema>;

const validate = new Ajv({ allErrors: true, strict: true }).compile<WebConfigFile>(webConfigSchema);

/** node https/tls options built from `tls_server_config`, plus the client-certificate policy node lacks. */
export interface WebTls {
  cert: Buffer;
  key: Buffer;
  ca?: Buffer;
  requestCert: boolean;
  rejectUnauthorized: boolean;
  minVersion: SecureVersion;
  maxVersion?: SecureVersion;
  ciphers?: string;
  ecdhCurve?: string;
  honorCipherOrder?: boolean;
  clientAuthType: ClientAuthType;
}

/** A valid web-config file. */
export interface WebConfig {
  /** absent: plain HTTP */
  tls?: WebTls;
  /** added to every reply; each value as Node sends it (its UTF-8 bytes, one character per byte) */
  headers: Record<string, string>;
  /** user → bcrypt hash */
  basicAuthUsers: Record<string, string>;
  /** the PEM files it names (watched for changes) */
  files: string[];
  /** the file has no document at all (empty, or only comments): plain HTTP and open at start, refused on reload */
  empty: boolean;
  /** the file has a `basic_auth_users` key, `{}` included: only such a file may remove basic auth on reload */
  statesBasicAuth: boolean;
}

function describe(error: ErrorObject): string {
  const path = error.instancePath.replace(/^\//, '').replaceAll('/', '.');
  if (error.keyword === 'additionalProperties')
    return `${[path, String(error.params.additionalProperty)].filter(Boolean).join('.')}: unknown key`;
  if (error.keyword === 'not') return `${path}: not supported by baremetal-exporter`;
  if (error.keyword === 'enum')
    return `${path}: must be one of ${(error.params.allowedValues as unknown[]).map(String).join(', ')}`;
  return `${path || '(top level)'}: ${error.message ?? 'invalid'}`;
}

/**
 * Parses and checks a web-config file's text; `readFile` reads the PEM files (relative paths are the
 * caller's to resolve). Throws ConfigError listing every problem, one line each, prefixed `web.config.file`.
 */
export function parseWebConfig(text: string, readFile: (path: string) => Buffer): WebConfig {
  let doc: unknown;
  let empty = false;
  try {
    doc = parseYaml(text);
    empty = doc === null || doc === undefined;
    if (empty) doc = {};
  } catch (error) {
    throw new ConfigError([`web.config.file: (yaml): ${(error as Error).message.split('\n')[0]}`]);
  }
  if (doc === null || typeof doc !== 'object' || Array.isArray(doc))
    throw new ConfigError(['web.config.file: (top level): must be a mapping']);
  if (!validate(doc)) throw new ConfigError((validate.errors ?? []).map((e) => `web.config.file: ${describe(e)}`));
  const problems: string[] = [];
  const configured = doc.http_server_config?.headers ?? {};
  const headers: Record<string, string> = {};
  for (const [name, value] of Object.entries(configured)) {
    headers[name] = wireValue(value);
    const lower = name.toLowerCase();
    // Checked like Go's httpguts (ValidHeaderFieldName/Value): a value node would refuse at the first reply
    // (a newline answers every route, /healthz included, with 500) is refused here, at start and on reload.
    if (!HEADER_NAME.test(name))
      problems.push(`http_server_config.headers.${JSON.stringify(name)}: not a valid header name`);
    else if (HEADER_VALUE_CONTROL.test(value))
      problems.push(
        `http_server_config.headers.${name}: the value has a control character (newline, NUL, …), which HTTP does not allow`,
      );
    else if (!(lower in ALLOWED_HEADERS)) problems.push(`http_server_config.headers.${name}: cannot be configured`);
    else if (ALLOWED_HEADERS[lower] && !ALLOWED_HEADERS[lower].includes(value.toLowerCase()))
      problems.push(
        `http_server_config.headers.${name}: must be one of ${ALLOWED_HEADERS[lower].join(', ')} (got ${JSON.stringify(value)})`,
      );
  }
  const basicAuthUsers = doc.basic_auth_users ?? {};
  for (const [user, hash] of Object.entries(basicAuthUsers)) {
    const problem = bcryptHashProblem(user, hash, 'must be a bcrypt hash ($2b$…)');
    if (problem !== undefined) problems.push(`basic_auth_users.${user}: ${problem}`);
  }
  const tls = doc.tls_server_config ? checkTls(doc.tls_server_config, readFile, problems) : undefined;
  if (problems.length > 0) throw new ConfigError(problems.map((line) => `web.config.file: ${line}`));
  const { cert_file, key_file, client_ca_file } = doc.tls_server_config ?? {};
  const files = [cert_file, key_file, client_ca_file].filter((f): f is string => Boolean(f));
  return {
    ...(tls ? { tls } : {}),
    headers,
    basicAuthUsers,
    files,
    empty,
    statesBasicAuth: doc.basic_auth_users !== undefined,
  };
}

function checkTls(
  file: NonNullable<WebConfigFile['tls_server_config']>,
  readFile: (path: string) => Buffer,
  problems: string[],
): WebTls | undefined {
  const before = problems.length;
  const read = (key: 'cert_file' | 'key_file' | 'client_ca_file') => {
    const path = file[key];
    if (path === undefined || path === '') return undefined;
    try {
      return readFile(path);
    } catch (error) {
      problems.push(`tls_server_config.${key}: cannot read ${path} (${readProblem(error)})`);
      return undefined;
    }
  };
  if (!file.cert_file) problems.push('tls_server_config.cert_file: missing (required with tls_server_config)');
  if (!file.key_file) problems.push('tls_server_config.key_file: missing (required with tls_server_config)');
  const cert = read('cert_file');
  const key = read('key_file');
  const ca = read('client_ca_file');
  const clientAuthType = file.client_auth_type ?? 'NoClientCert';
  if (file.client_ca_file && clientAuthType === 'NoClientCert')
    problems.push('tls_server_config.client_ca_file: set without a client_auth_type that asks for a certificate');
  const unknown = (file.cipher_suites ?? []).filter((name) => !(name in CIPHER_SUITES));
  for (const name of unknown) problems.push(`tls_server_config.cipher_suites: unknown cipher suite ${name}`);
  const minVersion = TLS_VERSIONS[file.min_version ?? 'TLS12']!;
  const maxVersion = file.max_version === undefined ? undefined : TLS_VERSIONS[file.max_version];
  if (maxVersion && file.min_version && file.max_version! < file.min_version)
    problems.push('tls_server_config.max_version: lower than min_version');
  if (problems.length > before || !cert || !key) return undefined;
  const legacy = (file.cipher_suites ?? []).map((name) => CIPHER_SUITES[name]!).filter((n) => !n.startsWith('TLS_'));
  const tls: WebTls = {
    cert,
    key,
    ...(ca ? { ca } : {}),
    requestCert: clientAuthType !== 'NoClientCert',
    rejectUnauthorized: clientAuthType === 'RequireAndVerifyClientCert',
    minVersion,
    ...(maxVersion ? { maxVersion } : {}),
    ...(legacy.length > 0 ? { ciphers: [...TLS13_SUITES, ...legacy].join(':') } : {}),
    ...(file.curve_preferences?.length ? { ecdhCurve: file.curve_preferences.map((c) => CURVES[c]).join(':') } : {}),
    ...(file.prefer_server_cipher_suites !== undefined ? { honorCipherOrder: file.prefer_server_cipher_suites } : {}),
    clientAuthType,
  };
  try {
    // The pair must match and OpenSSL must know every suite: found now, not at the first handshake.
    createSecureContext(tls);
  } catch (error) {
    problems.push(`tls_server_config: ${(error as Error).message}`);
    return undefined;
  }
  return tls;
}

/**
 * Reads and checks the file at `path` and the PEM files it names, without blocking the event loop
 * (readBoundedFile). Rejects with ConfigError.
 */
export async function loadWebConfig(path: string): Promise<WebConfig> {
  let text: string;
  try {
    text = await readBoundedText(path, 'webConfig');
  } catch (error) {
    throw new ConfigError([`web.config.file: cannot read ${path} (${readProblem(error)})`]);
  }
  return buildWithFiles((read) => parseWebConfig(text, (p) => read(p, 'pem')));
}

/**
 * What node's options cannot say: RequireAnyClientCert (a certificate, unverified) and
 * VerifyClientCertIfGiven (none, or a valid one). Returns why `socket` must be closed, or undefined.
 */
export function clientCertRefusal(type: ClientAuthType, socket: TLSSocket): string | undefined {
  const given = Object.keys(socket.getPeerCertificate()).length > 0;
  if (type === 'RequireAnyClientCert' && !given) return 'no client certificate';
  if (type === 'VerifyClientCertIfGiven' && given && !socket.authorized)
    return `client certificate not verified: ${String(socket.authorizationError)}`;
  return undefined;
}
