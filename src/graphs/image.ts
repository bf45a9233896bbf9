/**
 * Checking and resizing graph images with sharp. A graph reply's bytes are accepted only when sharp
 * decodes every pixel; anything not PNG is converted to PNG so `/graphs` always serves `image/png`.
 */
import sharp, { type Metadata } from 'sharp';
import { GraphDecodeError } from '../errors.js';

/**
 * libvips as a daemon that decodes each graph once needs it: no operation cache (sharp keeps up to 50 MB of
 * recent operations by default, and no graph is decoded twice) and one libvips thread per image (its default
 * is one per core, each with its own buffers; the graphs poll already decodes several images at once on
 * libuv's pool). Process-wide, as libvips is: the daemon calls it once at start. Measured in `npm run bench`'s
 * small-account row (issue 22).
 */
export function limitGraphDecoding(): void {
  sharp.cache(false);
  sharp.concurrency(1);
}

/** Largest accepted image side in pixels and size in bytes (a graph is a few hundred pixels wide). */
export const MAX_SIDE = 8192;
export const MAX_BYTES = 8 * 1024 * 1024;

/** A checked image: PNG bytes and their pixel size. */
export interface CheckedImage {
  png: Buffer;
  width: number;
  height: number;
  /** format the API sent (png, gif, jpeg, …) */
  sourceFormat: string;
}

/**
 * Every decode and resize of this process, one at a time: libvips then touches one thread's buffers and
 * glibc's arenas stay few, where the graphs poll (16 replies at once) spread them over libuv's whole pool. A
 * graph decodes in milliseconds, so the queue costs the poll little; its length is bounded by the poll's
 * concurrency and the HTTP routes'. Process-wide on purpose, as libvips is.
 */
let decoding: Promise<unknown> = Promise.resolve();
function oneAtATime<T>(work: () => Promise<T>): Promise<T> {
  const result = decoding.then(work, work);
  decoding = result.catch(() => undefined);
  return result;
}

/** Decodes and checks `bytes`; returns PNG bytes. Throws GraphDecodeError naming the problem. */
export function checkImage(bytes: Buffer): Promise<CheckedImage> {
  return oneAtATime(() => decodeAndCheck(bytes));
}

async function decodeAndCheck(bytes: Buffer): Promise<CheckedImage> {
  if (bytes.length === 0) throw new GraphDecodeError('empty image');
  if (bytes.length > MAX_BYTES) throw new GraphDecodeError(`image of ${bytes.length} bytes exceeds ${MAX_BYTES}`);
  let meta: Metadata;
  try {
    meta = await sharp(bytes, { failOn: 'warning' }).metadata();
  } catch (error) {
    throw new GraphDecodeError(`not an image (${(error as Error).message})`, { cause: error });
  }
  const { format, width, height } = meta;
  if (!width || !height || width > MAX_SIDE || height > MAX_SIDE) {
    throw new GraphDecodeError(`image size ${width}x${height} outside 1..${MAX_SIDE}`);
  }
  try {
    // Decode every pixel: a truncated PNG has a valid header but fails here.
    if (format === 'png') {
      await sharp(bytes, { failOn: 'warning' }).stats();
      return { png: bytes, width, height, sourceFormat: format };
    }
    const png = await sharp(bytes, { failOn: 'warning' }).png().toBuffer();
    return { png, width, height, sourceFormat: format ?? 'unknown' };
  } catch (error) {
    throw new GraphDecodeError(`corrupt ${format} image (${(error as Error).message})`, { cause: error });
  }
}

/** Resizes a PNG to `width` pixels wide, keeping the aspect ratio, never enlarging. */
export function resizePng(png: Buffer, width: number): Promise<Buffer> {
  return oneAtATime(() => sharp(png).resize({ width, withoutEnlargement: true }).png().toBuffer());
}
