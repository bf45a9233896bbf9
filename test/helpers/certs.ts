import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

/**
 * A throwaway CA and a server certificate for 127.0.0.1 signed by it, made with openssl; with `client`, also
 * a client certificate (CN=prometheus) signed by the same CA.
 */
export function makeTestPki(): { ca: string; key: string; cert: string };
export function makeTestPki(options: { client: true }): {
  ca: string;
  key: string;
  cert: string;
  clientKey: string;
  clientCert: string;
};
export function makeTestPki(options: { client?: boolean } = {}) {
  const dir = mkdtempSync(join(tmpdir(), 'bmx-pki-'));
  const run = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const read = (name: string) => readFileSync(join(dir, name), 'utf8');
  /** A key and a certificate `${name}.key`/`${name}.pem` for `cn`, signed by the CA, with extensions `ext`. */
  const signed = (name: string, cn: string, ext?: string) => {
    run('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${cn}`);
    if (ext !== undefined) writeFileSync(join(dir, `${name}.cnf`), `${ext}\n`);
    run(
      ...['x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial'],
      ...['-out', `${name}.pem`, '-days', '2', ...(ext !== undefined ? ['-extfile', `${name}.cnf`] : [])],
    );
    return { key: read(`${name}.key`), cert: read(`${name}.pem`) };
  };
  try {
    run(
      ...['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem'],
      ...['-days', '2', '-subj', '/CN=bmx test CA'],
    );
    const server = signed('server', '127.0.0.1', 'subjectAltName=IP:127.0.0.1,DNS:localhost');
    const client = options.client ? signed('client', 'prometheus') : undefined;
    return {
      ca: read('ca.pem'),
      ...server,
      ...(client ? { clientKey: client.key, clientCert: client.cert } : {}),
    };
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
