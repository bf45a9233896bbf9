/**
 * The worker thread of `BcryptPool`: compares one password with one bcrypt hash per message, so that
 * bcrypt's deliberate CPU cost is paid off the event loop. Erasable TypeScript only (no enums, no
 * parameter properties): Node runs this file as it is under vitest and as compiled JS from dist/.
 */
import { parentPort } from 'node:worker_threads';
import bcrypt from 'bcryptjs';

/** One comparison asked of the worker. */
export interface CompareRequest {
  id: number;
  password: string;
  hash: string;
}

/** The worker's answer; `ok` is false for a wrong password and for a hash bcryptjs cannot read. */
export interface CompareReply {
  id: number;
  ok: boolean;
}

parentPort?.on('message', ({ id, password, hash }: CompareRequest) => {
  let ok = false;
  try {
    ok = bcrypt.compareSync(password, hash);
  } catch {
    // A hash the config loader let through but bcryptjs rejects matches nothing.
  }
  parentPort!.postMessage({ id, ok } satisfies CompareReply);
});
