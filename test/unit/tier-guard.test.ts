/**
 * The unit tier's guard (test/setup/unit-guard.ts) at work: in this tier a process cannot be started and a socket
 * can be opened only to a server of this very process, so a test that needs more fails here, naming its tier.
 */
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { createServer as createHttpServer } from 'node:http';
import { type AddressInfo, connect, createServer } from 'node:net';
import { describe, expect, it } from 'vitest';

describe('the unit tier', () => {
  it.each([
    { name: 'spawn', call: () => spawn(process.execPath, ['-e', '0']) },
    { name: 'spawnSync', call: () => spawnSync(process.execPath, ['-e', '0']) },
    { name: 'execFileSync', call: () => execFileSync('true') },
  ])('refuses child_process.$name, naming the tier to move the test to', ({ name, call }) => {
    expect(call).toThrow(`the unit tier starts no process, and this test called child_process.${name}()`);
    expect(call).toThrow(/move the test to test\/integration\//);
  });

  it('refuses a socket to a port no server of this process listens on', async () => {
    // A port that was free a moment ago: whatever may listen there now, it is not this process.
    const probe = createServer();
    await new Promise<void>((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address() as AddressInfo;
    await new Promise<void>((resolve) => probe.close(() => resolve()));
    expect(() => connect(port + 1, '127.0.0.1')).toThrow(/opens no socket to another process/);
  });

  it('allows an HTTP request to a server of this process on loopback', async () => {
    const server = createHttpServer((_req, res) => res.end('ok'));
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    try {
      const reply = await fetch(`http://127.0.0.1:${port}/`);
      expect(await reply.text()).toBe('ok');
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
