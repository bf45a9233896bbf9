/**
 * The schema of `--web.config.file` (http/web-config.ts reads it), declared with TypeBox. Build time only:
 * `npm run schemas` writes it as plain JSON Schema into http/generated/web-config.ts, which web-config.ts
 * validates with; nothing at run time imports this module (issue 53).
 */
import { Type } from 'typebox';
import { oneOf, stringMap, strictObject as strict } from '../json-schema.js';
import { CLIENT_AUTH_TYPES, CURVES, TLS_VERSIONS } from './web-config-names.js';

const unsupported = (what: string) => Type.Unsafe<never>({ not: {}, description: what });

/** The web-config file's schema (an unknown key is an error; `not: {}` refuses what is unsupported). */
export const webConfigSchema = strict({
  tls_server_config: Type.Optional(
    strict({
      cert_file: Type.Optional(Type.String()),
      key_file: Type.Optional(Type.String()),
      client_ca_file: Type.Optional(Type.String()),
      client_auth_type: Type.Optional(oneOf(CLIENT_AUTH_TYPES)),
      min_version: Type.Optional(oneOf(Object.keys(TLS_VERSIONS))),
      max_version: Type.Optional(oneOf(Object.keys(TLS_VERSIONS))),
      cipher_suites: Type.Optional(Type.Array(Type.String())),
      curve_preferences: Type.Optional(Type.Array(oneOf(Object.keys(CURVES)))),
      prefer_server_cipher_suites: Type.Optional(Type.Boolean()),
      client_allowed_sans: Type.Optional(unsupported('not supported')),
      cert: Type.Optional(unsupported('not supported')),
      key: Type.Optional(unsupported('not supported')),
      client_ca: Type.Optional(unsupported('not supported')),
    }),
  ),
  http_server_config: Type.Optional(
    strict({
      http2: Type.Optional(Type.Boolean()),
      headers: Type.Optional(stringMap()),
    }),
  ),
  basic_auth_users: Type.Optional(stringMap()),
  rate_limit: Type.Optional(unsupported('not supported')),
});
