import { createServer } from 'node:net';

/**
 * A free TCP port on 127.0.0.1 (for programs that cannot listen on port 0 and report it). No relative
 * imports, so the bench can import it too (node runs bench/*.ts directly).
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}
