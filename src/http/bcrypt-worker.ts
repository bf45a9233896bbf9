/**
 * The worker thread of `BcryptPool`: compares one password with one bcrypt hash per message, so that
 * bcrypt's deliberate CPU cost is paid off the event loop. Erasable TypeScript only (no enums, no
 * parameter properties): Node runs this file as it is under vitest and as compiled JS from dist/.
 *
 * bcryptjs is imported here only, when the first password is checked: a daemon without basic-auth users never
 * starts this worker and never loads it (issue 53). When it cannot load, the worker answers every request with
 * `unavailable`, the sentence naming the feature and the package, and the pool refuses every later check with it.
 */
import { setPriority } from 'node:os';
import { parentPort } from 'node:worker_threads';

/** The worker's nice value: the lowest priority, so the event loop always gets the CPU first. */
export const WORKER_NICE = 19;

// On Linux a priority set for "the calling process" (0) applies to the calling thread only: this worker.
// Elsewhere it would lower the whole process, so it is done on Linux only.
if (process.platform === 'linux') {
  try {
    setPriority(0, WORKER_NICE);
  } catch {
    // Not permitted (a seccomp profile): the queue bound still holds.
  }
}

/** One comparison asked of the worker. */
export interface CompareRequest {
  id: number;
  password: string;
  hash: string;
}

/**
 * The worker's answer; `ok` is false for a wrong password and for a hash bcryptjs cannot read. `unavailable` says
 * why nothing was compared: bcryptjs failed to load.
 */
export interface CompareReply {
  id: number;
  ok: boolean;
  unavailable?: string;
}

const loaded: { bcrypt: typeof import('bcryptjs').default } | { unavailable: string } = await import('bcryptjs').then(
  (module) => ({ bcrypt: module.default }),
  (error: unknown) => ({
    unavailable: `basic-auth users (basic_auth_users) need the package bcryptjs, which failed to load: ${(error as Error).message}`,
  }),
);

parentPort?.on('message', ({ id, password, hash }: CompareRequest) => {
  if ('unavailable' in loaded) {
    parentPort!.postMessage({ id, ok: false, unavailable: loaded.unavailable } satisfies CompareReply);
    return;
  }
  const { bcrypt } = loaded;
  let ok = false;
  try {
    ok = bcrypt.compareSync(password, hash);
  } catch {
    // A hash the config loader let through but bcryptjs rejects matches nothing.
  }
  parentPort!.postMessage({ id, ok } satisfies CompareReply);
});
