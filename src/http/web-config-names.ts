/**
 * The names `--web.config.file` takes (exporter-toolkit's, i.e. Go's) and what node calls them: shared by the
 * file's schema (http/web-config.schema.ts, build time) and its reader (http/web-config.ts).
 */
import type { SecureVersion } from 'node:tls';

/** Go's `tls.ClientAuthType` names, as exporter-toolkit spells them. */
export const CLIENT_AUTH_TYPES = [
  'NoClientCert',
  'RequestClientCert',
  'RequireAnyClientCert',
  'VerifyClientCertIfGiven',
  'RequireAndVerifyClientCert',
] as const;
export type ClientAuthType = (typeof CLIENT_AUTH_TYPES)[number];

/** exporter-toolkit's TLS version names → node's. */
export const TLS_VERSIONS: Record<string, SecureVersion> = {
  TLS10: 'TLSv1',
  TLS11: 'TLSv1.1',
  TLS12: 'TLSv1.2',
  TLS13: 'TLSv1.3',
};

/** Go's curve names → OpenSSL's. */
export const CURVES: Record<string, string> = {
  CurveP256: 'P-256',
  CurveP384: 'P-384',
  CurveP521: 'P-521',
  X25519: 'X25519',
};
