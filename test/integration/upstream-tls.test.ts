/**
 * The upstream client against a real TLS server on loopback, with a certificate made by openssl (a process,
 * hence not in the unit tier): an unknown CA is refused, the CA file makes it trusted.
 */
import { createServer as createTlsServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterEach, expect, it } from 'vitest';
import { UpstreamTlsError } from '../../src/errors.js';
import { UpstreamClient } from '../../src/upstream/client.js';
import { listServers } from '../../src/upstream/dedicated.js';
import { makeTestPki } from '../helpers/certs.js';

const KEY = 'sk-test-0123456789abcdef';
let server: Server | undefined;
afterEach(() => new Promise<void>((resolve) => (server ? server.close(() => resolve()) : resolve())));

it('rejects a certificate from an unknown CA, and accepts it with the CA file', async () => {
  const pki = makeTestPki();
  server = createTlsServer({ key: pki.key, cert: pki.cert }, (_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify([{ server_id: '7' }]));
  });
  server.listen(0, '127.0.0.1');
  await new Promise((r) => server!.once('listening', r));
  const { port } = server.address() as AddressInfo;
  const options = { baseUrl: `https://127.0.0.1:${port}`, apiKey: KEY, timeoutMs: 2000, concurrency: 1, retries: 0 };
  const untrusting = new UpstreamClient(options);
  const error = await listServers(untrusting).catch((e: unknown) => e);
  await untrusting.close();
  expect(error).toBeInstanceOf(UpstreamTlsError);
  expect((error as Error).message).toContain('TLS failure');
  const trusting = new UpstreamClient({ ...options, ca: pki.ca });
  expect((await listServers(trusting)).servers[0]?.serverId).toBe('7');
  await trusting.close();
});
