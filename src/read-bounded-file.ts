/**
 * The one way the daemon and the CLI read a file they are given (config, web config, TLS PEM files, key,
 * token and URL files, `--post-install` scripts): a regular file, or a named pipe / process substitution
 * (`<(…)`) read by streaming and stopping at the same cap, never a device, directory or socket, and at most
 * FILE_LIMITS[kind] bytes. `/dev/zero` is an error, not 12 GB read into memory.
 */
import { closeSync, fstatSync, openSync, readSync, statSync, type Stats } from 'node:fs';

/** The largest file of each kind, in bytes. */
export const FILE_LIMITS = {
  /** the YAML configuration file */
  config: 1024 * 1024,
  /** `--web.config.file` */
  webConfig: 256 * 1024,
  /** a PEM certificate, key or CA bundle */
  pem: 1024 * 1024,
  /** an API key, bearer token, password or database URL file */
  secret: 64 * 1024,
  /** a `--post-install` script (the API's limit on the form field, see the CLI) */
  script: 256 * 1024,
} as const;

/** What a file is read as: picks its cap in FILE_LIMITS. */
export type FileKind = keyof typeof FILE_LIMITS;

/**
 * A file that is not a regular file or a pipe (`ENOTREGULAR`), or is larger than its cap (`EFBIG`). `message`
 * is the sentence to show after the path: "a character device, not a regular file or a pipe".
 */
export class BoundedFileError extends Error {
  constructor(
    readonly code: 'ENOTREGULAR' | 'EFBIG',
    message: string,
    /** the cap, in bytes */
    readonly limit: number,
    /** a regular file's size, in bytes (unknown for a pipe) */
    readonly size?: number,
  ) {
    super(message);
    this.name = 'BoundedFileError';
  }
}

function typeOf(stats: Stats): string | undefined {
  if (stats.isFile() || stats.isFIFO()) return undefined;
  if (stats.isDirectory()) return 'a directory';
  if (stats.isCharacterDevice()) return 'a character device';
  if (stats.isBlockDevice()) return 'a block device';
  if (stats.isSocket()) return 'a socket';
  return 'not a file';
}

const refuseType = (stats: Stats, limit: number) => {
  const type = typeOf(stats);
  if (type !== undefined) throw new BoundedFileError('ENOTREGULAR', `${type}, not a regular file or a pipe`, limit);
};

/**
 * The bytes of the file at `path`, a regular file or a pipe of at most FILE_LIMITS[kind] bytes (`limit`
 * overrides it). Throws BoundedFileError (wrong type, too large) or the system's error (`ENOENT`, `EACCES`).
 * A pipe is read until its writer closes it or the cap is passed; a regular file's size is checked first.
 */
export function readBoundedFile(path: string, kind: FileKind, limit: number = FILE_LIMITS[kind]): Buffer {
  // Checked before opening: opening a device can have effects of its own (a tape rewinds, a tty blocks).
  refuseType(statSync(path), limit);
  const fd = openSync(path, 'r');
  try {
    const stats = fstatSync(fd);
    refuseType(stats, limit);
    if (stats.isFile() && stats.size > limit) throw tooLarge(stats.size, limit);
    // One byte more than the cap tells "exactly at the cap" from "larger", also for a pipe.
    const buffer = Buffer.alloc(limit + 1);
    let length = 0;
    for (;;) {
      const read = readSync(fd, buffer, length, buffer.length - length, null);
      if (read === 0) break;
      length += read;
      if (length > limit) throw tooLarge(undefined, limit);
    }
    return buffer.subarray(0, length);
  } finally {
    closeSync(fd);
  }
}

const tooLarge = (size: number | undefined, limit: number) =>
  new BoundedFileError(
    'EFBIG',
    size === undefined ? `larger than ${limit} bytes` : `${size} bytes, larger than ${limit} bytes`,
    limit,
    size,
  );

/** The file at `path` as UTF-8 text; see readBoundedFile. */
export const readBoundedText = (path: string, kind: FileKind): string => readBoundedFile(path, kind).toString('utf8');

/**
 * Why a read failed, for "cannot read PATH (…)": the sentence of a BoundedFileError, else the system's code
 * (`ENOENT`), else `error`.
 */
export function readProblem(error: unknown): string {
  if (error instanceof BoundedFileError) return error.message;
  return (error as NodeJS.ErrnoException).code ?? 'error';
}
