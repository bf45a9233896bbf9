/**
 * bcrypt comparisons off the event loop, behind a bounded queue. bcryptjs is plain JavaScript: on the main
 * thread one comparison at cost 10 blocks it for tens of milliseconds, so a client sending wrong
 * `Authorization: Basic …` headers in a loop would stall `/metrics` and the polls. Here at most `workers`
 * comparisons run at once, each in a worker thread, at most `queue` wait; any further request is refused at
 * once without hashing (`'busy'`), which keeps a flood's cost to the parsing of its headers.
 */
import { Worker } from 'node:worker_threads';
import type { CompareReply, CompareRequest } from './bcrypt-worker.js';

/** Worker threads comparing passwords: one, so that on a 2-core machine one core stays with the event loop. */
export const BCRYPT_WORKERS = 1;
/** Comparisons waiting for a worker at most; at cost 10 (≈ 70 ms each) the last one waits about half a second. */
export const BCRYPT_QUEUE = 8;

/**
 * Checks a password against a bcrypt hash; `'busy'` means it was not checked because too many checks wait. Rejects
 * with an Error saying why when no password can be checked at all (bcryptjs failed to load).
 */
export interface PasswordVerifier {
  compare(password: string, hash: string): Promise<boolean | 'busy'>;
}

interface Job extends CompareRequest {
  resolve: (ok: boolean) => void;
  reject: (error: Error) => void;
}

interface Slot {
  worker: Worker;
  job?: Job | undefined;
}

/** Where the worker's code is: beside this module, as `.ts` under vitest and as `.js` once compiled. */
const WORKER_URL = new URL(
  import.meta.url.endsWith('.ts') ? './bcrypt-worker.ts' : './bcrypt-worker.js',
  import.meta.url,
);

export class BcryptPool implements PasswordVerifier {
  /** comparisons handed to a worker since start */
  compared = 0;
  /** requests refused without a comparison because the queue was full */
  refused = 0;
  readonly #workers: number;
  readonly #queueCap: number;
  readonly #queue: Job[] = [];
  readonly #slots: Slot[] = [];
  #nextId = 0;
  #closed = false;
  /** why no password can be checked: the worker could not load bcryptjs (it will not, later, either) */
  #unavailable: string | undefined;

  constructor(options: { workers?: number; queue?: number } = {}) {
    this.#workers = options.workers ?? BCRYPT_WORKERS;
    this.#queueCap = options.queue ?? BCRYPT_QUEUE;
  }

  /** Comparisons running or waiting now. */
  get pending(): number {
    return this.#queue.length + this.#slots.filter((s) => s.job).length;
  }

  compare(password: string, hash: string): Promise<boolean | 'busy'> {
    if (this.#closed) return Promise.resolve(false);
    if (this.#unavailable !== undefined) return Promise.reject(new Error(this.#unavailable));
    if (
      this.#queue.length >= this.#queueCap &&
      this.#slots.length >= this.#workers &&
      this.#slots.every((s) => s.job)
    ) {
      this.refused++;
      return Promise.resolve('busy');
    }
    return new Promise<boolean>((resolve, reject) => {
      this.#queue.push({ id: this.#nextId++, password, hash, resolve, reject });
      this.#dispatch();
    });
  }

  /** Stops the workers; comparisons still waiting or running answer false. */
  async close(): Promise<void> {
    this.#closed = true;
    for (const job of this.#queue.splice(0)) job.resolve(false);
    await Promise.all(
      this.#slots.splice(0).map(async (slot) => {
        slot.job?.resolve(false);
        await slot.worker.terminate();
      }),
    );
  }

  #dispatch(): void {
    while (this.#queue.length > 0) {
      let slot = this.#slots.find((s) => !s.job);
      if (!slot && this.#slots.length < this.#workers) slot = this.#spawn();
      if (!slot) return;
      const job = this.#queue.shift()!;
      slot.job = job;
      this.compared++;
      slot.worker.postMessage({ id: job.id, password: job.password, hash: job.hash } satisfies CompareRequest);
    }
  }

  #spawn(): Slot {
    const worker = new Worker(WORKER_URL);
    // An idle pool must not keep the process alive (tests, a daemon that forgot to close it).
    worker.unref();
    const slot: Slot = { worker };
    worker.on('message', (reply: CompareReply) => {
      if (slot.job?.id !== reply.id) return;
      const job = slot.job;
      slot.job = undefined;
      if (reply.unavailable !== undefined) {
        this.#unavailable = reply.unavailable;
        for (const waiting of [job, ...this.#queue.splice(0)]) waiting.reject(new Error(reply.unavailable));
        return;
      }
      job.resolve(reply.ok);
      this.#dispatch();
    });
    // A worker that dies fails its comparison (false) and is replaced on the next request.
    const retire = () => {
      const index = this.#slots.indexOf(slot);
      if (index < 0) return;
      this.#slots.splice(index, 1);
      slot.job?.resolve(false);
      slot.job = undefined;
      if (!this.#closed) this.#dispatch();
    };
    worker.on('error', retire);
    worker.on('exit', retire);
    this.#slots.push(slot);
    return slot;
  }
}
