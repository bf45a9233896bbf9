/**
 * The daemon's own TLS: PEM files read at start, and read again when they change (polled every 10 s, which
 * also sees a Kubernetes secret's symlink swap) or on SIGHUP; a reload that fails keeps the old pair.
 */
import { unwatchFile, watchFile } from 'node:fs';
import type { Server } from 'node:https';
import type { Logger } from 'pino';
import { readBoundedFile } from '../read-bounded-file.js';

export interface TlsFiles {
  certFile: string;
  keyFile: string;
}

/** The PEM pair, read without blocking the event loop (readBoundedFile); rejects with BoundedFileError or the system's error. */
export async function readTls(files: TlsFiles): Promise<{ cert: Buffer; key: Buffer }> {
  const [cert, key] = await Promise.all([
    readBoundedFile(files.certFile, 'pem'),
    readBoundedFile(files.keyFile, 'pem'),
  ]);
  return { cert, key };
}

/** Watches the files; returns `reload()` (for SIGHUP) and `stop()`. */
export function watchTls(
  servers: Server[],
  files: TlsFiles,
  logger: Logger,
): { reload: () => Promise<boolean>; stop: () => void } {
  const reload = async () => {
    try {
      const pair = await readTls(files);
      for (const server of servers) server.setSecureContext(pair);
      logger.info({ cert_file: files.certFile }, 'TLS certificate reloaded');
      return true;
    } catch (error) {
      logger.error({ err: error, cert_file: files.certFile }, 'TLS reload failed; keeping the previous certificate');
      return false;
    }
  };
  const onChange = (current: { mtimeMs: number }, previous: { mtimeMs: number }) => {
    if (current.mtimeMs !== previous.mtimeMs) void reload();
  };
  for (const file of [files.certFile, files.keyFile])
    watchFile(file, { interval: 10_000, persistent: false }, onChange);
  return {
    reload,
    stop: () => {
      for (const file of [files.certFile, files.keyFile]) unwatchFile(file, onChange);
    },
  };
}
