/**
 * The soak's window on the daemon's heap without changing the product: the daemon runs with
 * `--inspect=127.0.0.1:0` (the soak only), and this client speaks the inspector protocol over its WebSocket —
 * `HeapProfiler.collectGarbage` (a full GC), then `Runtime.getHeapUsage` (the live heap, bytes).
 */
import type { ChildProcess } from 'node:child_process';

export class Inspector {
  readonly #socket: WebSocket;
  readonly #waiting = new Map<number, (result: Record<string, unknown>) => void>();
  #id = 0;

  private constructor(socket: WebSocket) {
    this.#socket = socket;
    socket.addEventListener('message', (event) => {
      const message = JSON.parse(String(event.data)) as { id?: number; result?: Record<string, unknown> };
      if (message.id !== undefined) this.#waiting.get(message.id)?.(message.result ?? {});
      this.#waiting.delete(message.id ?? -1);
    });
  }

  /** Connects to the URL a child started with `--inspect` prints on stderr (within 30 s). */
  static async fromStderr(child: ChildProcess): Promise<Inspector> {
    const url = await new Promise<string>((resolve, reject) => {
      let seen = '';
      const timer = setTimeout(() => reject(new Error(`no inspector URL on stderr: ${seen}`)), 30_000);
      child.stderr!.on('data', (chunk) => {
        seen += String(chunk);
        const match = /Debugger listening on (ws:\/\/\S+)/.exec(seen);
        if (match) {
          clearTimeout(timer);
          resolve(match[1]!);
        }
      });
    });
    const socket = new WebSocket(url);
    await new Promise((resolve, reject) => {
      socket.addEventListener('open', resolve, { once: true });
      socket.addEventListener('error', reject, { once: true });
    });
    return new Inspector(socket);
  }

  #call(method: string): Promise<Record<string, unknown>> {
    const id = ++this.#id;
    return new Promise((resolve) => {
      this.#waiting.set(id, resolve);
      this.#socket.send(JSON.stringify({ id, method }));
    });
  }

  /** The live heap after a full GC, bytes. */
  async heapAfterGc(): Promise<number> {
    await this.#call('HeapProfiler.collectGarbage');
    const { usedSize } = (await this.#call('Runtime.getHeapUsage')) as { usedSize: number };
    return usedSize;
  }

  close(): void {
    this.#socket.close();
  }
}
