import bcrypt from 'bcryptjs';
import { describe, expect, it } from 'vitest';
import { configProblems } from '../helpers/config-problems.js';
import { parseWebConfig, type WebConfig } from '../../src/http/web-config.js';
import { makeTestPki } from '../helpers/certs.js';

const pki = makeTestPki();
const other = makeTestPki();
const FILES: Record<string, string> = {
  '/c.pem': pki.cert,
  '/k.pem': pki.key,
  '/ca.pem': pki.ca,
  '/other-k.pem': other.key,
};
const readFile = (path: string) => {
  const text = FILES[path];
  if (text === undefined) throw Object.assign(new Error(`ENOENT ${path}`), { code: 'ENOENT' });
  return Buffer.from(text);
};
const HASH = bcrypt.hashSync('secret', 4);
const TLS = 'tls_server_config: { cert_file: /c.pem, key_file: /k.pem';

const problems = (text: string) => configProblems(() => parseWebConfig(text, readFile), { orNone: true });

describe('parseWebConfig', () => {
  it.each<[string, string, Partial<WebConfig> & { tlsOptions?: Record<string, unknown> }]>([
    ['an empty file: plain HTTP, open', '', { headers: {}, basicAuthUsers: {}, files: [] }],
    ['basic auth only', `basic_auth_users: { prom: "${HASH}" }`, { basicAuthUsers: { prom: HASH } }],
    [
      'TLS with defaults: TLS 1.2 minimum, no client certificate',
      `${TLS} }`,
      {
        files: ['/c.pem', '/k.pem'],
        tlsOptions: {
          requestCert: false,
          rejectUnauthorized: false,
          minVersion: 'TLSv1.2',
          clientAuthType: 'NoClientCert',
        },
      },
    ],
    [
      'a client CA, verified certificates required, TLS 1.3 only',
      `${TLS}, client_ca_file: /ca.pem, client_auth_type: RequireAndVerifyClientCert, min_version: TLS13, max_version: TLS13 }`,
      {
        files: ['/c.pem', '/k.pem', '/ca.pem'],
        tlsOptions: { requestCert: true, rejectUnauthorized: true, minVersion: 'TLSv1.3', maxVersion: 'TLSv1.3' },
      },
    ],
    [
      'RequireAnyClientCert asks for a certificate and checks its presence itself',
      `${TLS}, client_auth_type: RequireAnyClientCert }`,
      { tlsOptions: { requestCert: true, rejectUnauthorized: false, clientAuthType: 'RequireAnyClientCert' } },
    ],
    [
      'Go cipher names become OpenSSL names; TLS 1.3 suites are kept',
      `${TLS}, cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256] }`,
      {
        tlsOptions: {
          ciphers:
            'TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256:TLS_AES_128_GCM_SHA256:ECDHE-RSA-AES128-GCM-SHA256:ECDHE-RSA-CHACHA20-POLY1305',
        },
      },
    ],
    [
      'curves and server cipher order',
      `${TLS}, curve_preferences: [X25519, CurveP256], prefer_server_cipher_suites: true }`,
      { tlsOptions: { ecdhCurve: 'X25519:P-256', honorCipherOrder: true } },
    ],
    [
      'allowed headers, any case',
      'http_server_config: { http2: false, headers: { x-frame-options: SAMEORIGIN, Strict-Transport-Security: max-age=31536000 } }',
      { headers: { 'x-frame-options': 'SAMEORIGIN', 'Strict-Transport-Security': 'max-age=31536000' } },
    ],
    [
      'a header value with € and é: kept as their UTF-8 bytes, as exporter-toolkit sends them',
      'http_server_config: { headers: { Content-Security-Policy: "report-uri https://x.test/€é" } }',
      { headers: { 'Content-Security-Policy': 'report-uri https://x.test/\u00e2\u0082\u00ac\u00c3\u00a9' } },
    ],
  ])('accepts %s', (_name, text, expected) => {
    const { tlsOptions, ...rest } = expected;
    const config = parseWebConfig(text, readFile);
    expect(config).toMatchObject(rest);
    if (tlsOptions) expect(config.tls).toMatchObject(tlsOptions);
    else expect(config.tls).toBeUndefined();
  });

  it.each([
    ['an unknown top-level key', 'tls_config: {}', ['web.config.file: tls_config: unknown key']],
    ['an unknown TLS key', `${TLS}, certfile: /c.pem }`, ['web.config.file: tls_server_config.certfile: unknown key']],
    [
      'an unknown client auth type',
      `${TLS}, client_auth_type: RequireClientCertPlease }`,
      [
        'web.config.file: tls_server_config.client_auth_type: must be one of NoClientCert, RequestClientCert, RequireAnyClientCert, VerifyClientCertIfGiven, RequireAndVerifyClientCert',
      ],
    ],
    [
      'an unknown TLS version',
      `${TLS}, min_version: TLS14 }`,
      ['web.config.file: tls_server_config.min_version: must be one of TLS10, TLS11, TLS12, TLS13'],
    ],
    [
      'an unknown cipher suite',
      `${TLS}, cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, ECDHE-RSA-AES128-GCM-SHA256] }`,
      ['web.config.file: tls_server_config.cipher_suites: unknown cipher suite ECDHE-RSA-AES128-GCM-SHA256'],
    ],
    [
      'max below min',
      `${TLS}, min_version: TLS13, max_version: TLS12 }`,
      ['web.config.file: tls_server_config.max_version: lower than min_version'],
    ],
    [
      'a client CA without a policy asking for certificates',
      `${TLS}, client_ca_file: /ca.pem }`,
      ['web.config.file: tls_server_config.client_ca_file: set without a client_auth_type that asks for a certificate'],
    ],
    [
      'a missing key file and an unreadable certificate',
      'tls_server_config: { cert_file: /nope.pem }',
      [
        'web.config.file: tls_server_config.key_file: missing (required with tls_server_config)',
        'web.config.file: tls_server_config.cert_file: cannot read /nope.pem (ENOENT)',
      ],
    ],
    [
      'a key that does not match the certificate',
      'tls_server_config: { cert_file: /c.pem, key_file: /other-k.pem }',
      ['web.config.file: tls_server_config: error:05800074:x509 certificate routines::key values mismatch'],
    ],
    [
      'inline certificates (not supported)',
      `${TLS}, cert: "-----BEGIN" }`,
      ['web.config.file: tls_server_config.cert: not supported by baremetal-exporter'],
    ],
    [
      'a forbidden header',
      'http_server_config: { headers: { Authorization: "Basic x", Content-Type: text/html } }',
      [
        'web.config.file: http_server_config.headers.Authorization: cannot be configured',
        'web.config.file: http_server_config.headers.Content-Type: cannot be configured',
      ],
    ],
    [
      'a header value exporter-toolkit does not allow',
      'http_server_config: { headers: { X-Content-Type-Options: sniff } }',
      ['web.config.file: http_server_config.headers.X-Content-Type-Options: must be one of nosniff (got "sniff")'],
    ],
    [
      'a plain password',
      'basic_auth_users: { prom: secret }',
      ['web.config.file: basic_auth_users.prom: must be a bcrypt hash ($2b$…)'],
    ],
    [
      'a header value with a newline',
      'http_server_config: { headers: { Content-Security-Policy: "default-src \'self\'\\nX-Injected: 1" } }',
      [
        'web.config.file: http_server_config.headers.Content-Security-Policy: the value has a control character (newline, NUL, …), which HTTP does not allow',
      ],
    ],
    [
      'a header value with a C1 control character (U+0085)',
      'http_server_config: { headers: { Content-Security-Policy: "default-src \\u0085" } }',
      [
        'web.config.file: http_server_config.headers.Content-Security-Policy: the value has a control character (newline, NUL, …), which HTTP does not allow',
      ],
    ],
    [
      'a $2$ hash (never matches a password)',
      `basic_auth_users: { prom: "${HASH.replace('$2b$', '$2$')}" }`,
      [
        'web.config.file: basic_auth_users.prom: the bcrypt hash of user prom is of variant $2$, which never matches a password; only $2a$, $2b$ and $2y$ are supported: hash the password again (htpasswd -nbB prom PASSWORD)',
      ],
    ],
    [
      'a header name that is not a token',
      'http_server_config: { headers: { "X Frame: Options": DENY } }',
      ['web.config.file: http_server_config.headers."X Frame: Options": not a valid header name'],
    ],
    [
      'a bcrypt cost above 14',
      `basic_auth_users: { prom: "${HASH.replace('$04$', '$31$')}" }`,
      [
        'web.config.file: basic_auth_users.prom: the bcrypt hash of user prom has cost 31, above 14: each login would take minutes to days; hash the password again with cost 14 or less (htpasswd -B -C 10)',
      ],
    ],
    ['a list at the top', '- a', ['web.config.file: (top level): must be a mapping']],
    [
      'a number as a user hash',
      'basic_auth_users: { prom: 3 }',
      ['web.config.file: basic_auth_users.prom: must be string'],
    ],
  ])('refuses %s', (_name, text, expected) => {
    expect(problems(text)).toEqual(expected);
  });
});
