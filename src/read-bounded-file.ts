/**
 * The one way the daemon and the CLI read a file they are given (config, web config, TLS PEM files, key,
 * token and URL files, `--post-install` scripts, graph images): a regular file, or a named pipe / process
 * substitution (`<(…)`) read by streaming and stopping at the same cap, never a device, directory or socket,
 * and at most FILE_LIMITS[kind] bytes. `/dev/zero` is an error, not 12 GB read into memory.
 *
 * Nothing here blocks the event loop or holds a thread-pool thread for long (issue 28): the file is opened
 * with `O_NONBLOCK` (opening a FIFO nobody writes returns at once), its type is checked on the open
 * descriptor, a regular file is read by the thread pool, and a pipe is read by the event loop's poller (a
 * libuv pipe handle, no pool thread). The whole read has a deadline: a pipe nobody writes fails after
 * READ_TIMEOUT_MS with the path's sentence, and the descriptor is closed.
 */
import { close, constants, fstat, open, read, type Stats } from 'node:fs';
import { stat } from 'node:fs/promises';
import { Socket } from 'node:net';
import { promisify } from 'node:util';

// The descriptor-level calls: a pipe's descriptor is handed to a socket that owns (and closes) it, which a
// FileHandle would close a second time.
const openFd = promisify(open);
const fstatFd = promisify(fstat);
const readFd = promisify(read);
const closeFd = promisify(close);

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
  /** a held graph image (the API's images are far smaller; see graphs/image.ts) */
  graph: 16 * 1024 * 1024,
} as const;

/** What a file is read as: picks its cap in FILE_LIMITS. */
export type FileKind = keyof typeof FILE_LIMITS;

/** The deadline of one read, in milliseconds: a pipe whose writer has not finished by then is refused. */
export const READ_TIMEOUT_MS = 5_000;

/** How a read is bounded; every field has a default. */
export interface ReadOptions {
  /** the largest accepted size, in bytes (default FILE_LIMITS[kind]) */
  limit?: number;
  /** the deadline of the whole read, in milliseconds (default READ_TIMEOUT_MS) */
  timeoutMs?: number;
  /** refuse a pipe too: only a regular file is read (graph images) */
  regularOnly?: boolean;
}

/**
 * A file that is not a regular file or a pipe (`ENOTREGULAR`), is larger than its cap (`EFBIG`), or was not
 * read whole within the deadline (`ETIMEDOUT`: a pipe nobody writes). `message` is the sentence to show after
 * the path: "a character device, not a regular file or a pipe".
 */
export class BoundedFileError extends Error {
  constructor(
    readonly code: 'ENOTREGULAR' | 'EFBIG' | 'ETIMEDOUT',
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

function typeOf(stats: Stats, regularOnly: boolean): string | undefined {
  if (stats.isFile()) return undefined;
  if (stats.isFIFO()) return regularOnly ? 'a named pipe' : undefined;
  if (stats.isDirectory()) return 'a directory';
  if (stats.isCharacterDevice()) return 'a character device';
  if (stats.isBlockDevice()) return 'a block device';
  if (stats.isSocket()) return 'a socket';
  return 'not a file';
}

const refuseType = (stats: Stats, limit: number, regularOnly: boolean) => {
  const type = typeOf(stats, regularOnly);
  if (type !== undefined)
    throw new BoundedFileError('ENOTREGULAR', `${type}, not a regular file${regularOnly ? '' : ' or a pipe'}`, limit);
};

/**
 * The bytes of the file at `path`, a regular file or a pipe of at most FILE_LIMITS[kind] bytes, read within
 * READ_TIMEOUT_MS (see ReadOptions). Rejects with BoundedFileError (wrong type, too large, too slow) or the
 * system's error (`ENOENT`, `EACCES`). A pipe is read until its writer closes it or the cap is passed; a
 * regular file's size is checked first. Never blocks the event loop, whatever the file is.
 */
export async function readBoundedFile(path: string, kind: FileKind, options: ReadOptions = {}): Promise<Buffer> {
  const limit = options.limit ?? FILE_LIMITS[kind];
  const regularOnly = options.regularOnly ?? false;
  // Checked before opening: opening a device can have effects of its own (a tape rewinds, a tty blocks).
  refuseType(await stat(path), limit, regularOnly);
  // O_NONBLOCK: a FIFO opens at once, writer or not; the type is checked again on what was opened.
  const fd = await openFd(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOCTTY);
  let handedOver = false;
  try {
    const stats = await fstatFd(fd);
    refuseType(stats, limit, regularOnly);
    if (stats.isFile()) {
      if (stats.size > limit) throw tooLarge(stats.size, limit);
      return await readRegular(fd, limit);
    }
    handedOver = true;
    return await readPipe(fd, limit, options.timeoutMs ?? READ_TIMEOUT_MS);
  } finally {
    if (!handedOver) await closeFd(fd);
  }
}

/** A regular file's bytes (one byte more than the cap tells "exactly at the cap" from "grew past it"). */
async function readRegular(fd: number, limit: number): Promise<Buffer> {
  const buffer = Buffer.alloc(limit + 1);
  let length = 0;
  for (;;) {
    const { bytesRead } = await readFd(fd, buffer, length, buffer.length - length, null);
    if (bytesRead === 0) return buffer.subarray(0, length);
    length += bytesRead;
    if (length > limit) throw tooLarge(undefined, limit);
  }
}

/**
 * A pipe's bytes, read by a libuv pipe handle (epoll, no pool thread) that owns the descriptor from here on
 * and closes it when done. Linux does not report end-of-file on a FIFO that never had a writer, so a pipe
 * nobody opens for writing waits for the deadline and is refused.
 */
function readPipe(fd: number, limit: number, timeoutMs: number): Promise<Buffer> {
  const socket = new Socket({ fd, readable: true, writable: false });
  const chunks: Buffer[] = [];
  let length = 0;
  return new Promise<Buffer>((resolve, reject) => {
    const finish = (error: Error | undefined) => {
      clearTimeout(timer);
      socket.removeAllListeners('data');
      // Closes the descriptor.
      socket.destroy();
      if (error) reject(error);
      else resolve(Buffer.concat(chunks, length));
    };
    const timer = setTimeout(
      () =>
        finish(new BoundedFileError('ETIMEDOUT', `a pipe not written and closed within ${timeoutMs / 1000} s`, limit)),
      timeoutMs,
    );
    socket.on('data', (chunk: Buffer) => {
      length += chunk.length;
      if (length > limit) return finish(tooLarge(undefined, limit));
      chunks.push(chunk);
    });
    socket.on('end', () => finish(undefined));
    socket.on('error', (error) => finish(error));
  });
}

const tooLarge = (size: number | undefined, limit: number) =>
  new BoundedFileError(
    'EFBIG',
    size === undefined ? `larger than ${limit} bytes` : `${size} bytes, larger than ${limit} bytes`,
    limit,
    size,
  );

/** The file at `path` as UTF-8 text; see readBoundedFile. */
export const readBoundedText = async (path: string, kind: FileKind, options?: ReadOptions): Promise<string> =>
  (await readBoundedFile(path, kind, options)).toString('utf8');

/** A synchronous view of files read beforehand: the bytes of `path`, or the error its read ended with. */
export type ReadFiles = (path: string, kind: FileKind) => Buffer;

/**
 * Runs a synchronous `build` that reads files through its argument, with every file read asynchronously
 * first (readBoundedFile, all at once): a first run only notes the paths `build` asks for, then they are
 * read, then `build` runs again on the bytes (or the error of each read). So a checker can stay a plain
 * function, tested without I/O, and the files it names never block the event loop. `build` must ask for
 * the same paths whatever the bytes are (the paths come from the document, not from the files).
 */
export async function buildWithFiles<T>(build: (read: ReadFiles) => T, options: ReadOptions = {}): Promise<T> {
  const wanted = new Map<string, FileKind>();
  try {
    build((path, kind) => {
      wanted.set(path, kind);
      throw new Error('not read yet');
    });
  } catch {
    // The first run only lists the files.
  }
  const read = new Map<string, { bytes: Buffer } | { error: unknown }>();
  await Promise.all(
    [...wanted].map(async ([path, kind]) => {
      read.set(
        path,
        await readBoundedFile(path, kind, options).then(
          (bytes) => ({ bytes }),
          (error: unknown) => ({ error }),
        ),
      );
    }),
  );
  return build((path) => {
    const result = read.get(path);
    if (result === undefined) throw new Error(`${path} was not read beforehand`);
    if ('error' in result) throw result.error;
    return result.bytes;
  });
}

/**
 * Why a read failed, for "cannot read PATH (…)": the sentence of a BoundedFileError, else the system's code
 * (`ENOENT`), else `error`.
 */
export function readProblem(error: unknown): string {
  if (error instanceof BoundedFileError) return error.message;
  return (error as NodeJS.ErrnoException).code ?? 'error';
}
