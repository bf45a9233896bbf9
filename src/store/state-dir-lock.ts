/**
 * The exclusive lock on `state_dir`: one daemon per directory, so that two never act on one journal.
 * Node has no flock(2); the lock is a file created with O_EXCL (atomic on local filesystems) holding the
 * owner's PID. A lock whose PID is not alive (SIGKILL, power loss) is stale and taken over; a lock with
 * our own PID is from an earlier life of this process (PID 1 in a container restarted on the same
 * volume) unless this process holds it already.
 */
import { mkdirSync, readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { StateDirLockedError } from '../errors.js';

/** The lock file's name inside `state_dir`. */
export const LOCK_FILE = 'baremetal-exporter.lock';

/** Directories this process holds, so that two daemons inside one process are refused too. */
const held = new Set<string>();

/** True when a process with `pid` exists (EPERM: it exists but belongs to another user). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function holderOf(path: string): number | undefined {
  try {
    const pid = Number(readFileSync(path, 'utf8').trim());
    return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined;
  } catch {
    return undefined;
  }
}

/** A held lock; `release()` removes the file (idempotent). */
export interface StateLock {
  path: string;
  /** set when the lock file could not be written (read-only state_dir): no lock is held, remediation must stay off */
  problem?: string;
  release(): void;
}

/** Errors that mean the directory cannot be written, rather than that someone else holds the lock. */
const UNWRITABLE = new Set(['EACCES', 'EPERM', 'EROFS', 'ENOSPC', 'EDQUOT']);

/** Takes the lock on `stateDir` (created if missing). Throws StateDirLockedError naming the holder's PID. */
export function lockStateDir(stateDir: string): StateLock {
  const dir = resolve(stateDir);
  const path = join(dir, LOCK_FILE);
  if (held.has(dir)) throw new StateDirLockedError(stateDir, process.pid);
  mkdirSync(dir, { recursive: true });
  // Two attempts: the second after removing a stale lock. If another starter took it over in between,
  // its O_EXCL create wins and this one reports it as the holder.
  for (let attempt = 0; ; attempt++) {
    try {
      writeFileSync(path, `${process.pid}\n`, { flag: 'wx', mode: 0o644 });
      break;
    } catch (error) {
      const code = (error as NodeJS.ErrnoException).code ?? '';
      // Monitoring must go on with a read-only state_dir; the journal cannot be written there either.
      if (UNWRITABLE.has(code))
        return { path, problem: `cannot write the lock file ${path} (${code})`, release: () => undefined };
      if (code !== 'EEXIST') throw error;
      const pid = holderOf(path);
      if (pid !== undefined && pid !== process.pid && alive(pid)) throw new StateDirLockedError(stateDir, pid);
      if (attempt > 0) throw new StateDirLockedError(stateDir, pid ?? 0);
      try {
        unlinkSync(path);
      } catch (unlinkError) {
        if ((unlinkError as NodeJS.ErrnoException).code !== 'ENOENT') throw unlinkError;
      }
    }
  }
  held.add(dir);
  let released = false;
  return {
    path,
    release: () => {
      if (released) return;
      released = true;
      held.delete(dir);
      // Only our own lock: never remove one a successor wrote after a takeover.
      if (holderOf(path) === process.pid) unlinkSync(path);
    },
  };
}
