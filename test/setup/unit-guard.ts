/**
 * Vitest setupFile of the unit tier: what makes a test a unit test is enforced, not hoped for. In a unit test
 * file, starting a process (any `node:child_process` call) or opening a socket to anything but a server this very
 * process listens on throws, naming the tier to move the test to. In-process servers on loopback (fastify's
 * `inject`, a `createServer` on port 0) and undici's `MockAgent` stay allowed.
 */
import childProcess from 'node:child_process';
import { syncBuiltinESMExports } from 'node:module';
import net from 'node:net';

const MOVE = 'move the test to test/integration/ (or test/e2e/ for Prometheus, Alertmanager or Chromium)';
/** The unit tier shares a worker among files (isolate: false): the guard is put in place once per worker. */
const GUARDED = Symbol.for('baremetal-exporter.unit-guard');

if (!(GUARDED in globalThis)) {
  Object.defineProperty(globalThis, GUARDED, { value: true });
  guardProcesses();
  guardSockets();
}

function guardProcesses(): void {
  for (const name of ['spawn', 'spawnSync', 'exec', 'execSync', 'execFile', 'execFileSync', 'fork'] as const) {
    (childProcess as unknown as Record<string, unknown>)[name] = () => {
      throw new Error(`the unit tier starts no process, and this test called child_process.${name}(): ${MOVE}`);
    };
  }
  syncBuiltinESMExports();
}

/** Ports and socket paths that servers of this process listen on. */
const ours = new Set<number | string>();

function guardSockets(): void {
  const listen = net.Server.prototype.listen;
  net.Server.prototype.listen = function (this: net.Server, ...args: unknown[]) {
    this.once('listening', () => {
      const address = this.address();
      if (address !== null) ours.add(typeof address === 'string' ? address : address.port);
    });
    return (listen as (...a: unknown[]) => net.Server).apply(this, args);
  } as typeof net.Server.prototype.listen;

  const connect = net.Socket.prototype.connect;
  net.Socket.prototype.connect = function (this: net.Socket, ...args: unknown[]) {
    const to = target(args);
    if (to === undefined || !ours.has(to))
      throw new Error(
        `the unit tier opens no socket to another process, and this test connected to ${String(to)}: ${MOVE}`,
      );
    return (connect as (...a: unknown[]) => net.Socket).apply(this, args);
  } as typeof net.Socket.prototype.connect;
}

/** The port or path a `Socket#connect` call aims at, whichever of Node's argument shapes it was given. */
function target(args: unknown[]): number | string | undefined {
  let first = args[0];
  if (Array.isArray(first)) first = first[0]; // net.connect() hands over its normalized [options, callback]
  if (typeof first === 'number') return first;
  if (typeof first === 'string') return /^\d+$/.test(first) ? Number(first) : first;
  if (first !== null && typeof first === 'object') {
    const options = first as { port?: unknown; path?: unknown };
    if (typeof options.path === 'string') return options.path;
    if (options.port !== undefined) return Number(options.port);
  }
  return undefined;
}
