/**
 * Checking and resizing graph images. A PNG reply is accepted only when its chunks' CRCs hold and its pixel
 * data inflates whole to what its header implies (png.ts: one inflate, no decode, issue 32); anything else
 * must decode with sharp, pixel by pixel, and is converted to PNG so `/graphs` always serves `image/png`.
 */
import type { Metadata } from 'sharp';
import { GraphDecodeError } from '../errors.js';
import { checkPng, isPng } from './png.js';

type Sharp = typeof import('sharp').default;

/** Whether this process asked for {@link limitGraphDecoding}'s settings (applied when sharp loads). */
let limited = false;
let sharpModule: Promise<Sharp> | undefined;

/**
 * sharp (libvips), imported the first time an image needs it: an image that is not a PNG, or a resize. A PNG as
 * the API sends it is proven whole by png.ts without it, so a deployment that never sees another format nor
 * serves `?width=` never loads libvips (about 30 MB of RSS, issue 53). `feature` names what needed it, for the
 * error when the package cannot load (a pruned install, a platform without its prebuilt libvips).
 */
function loadSharp(feature: string): Promise<Sharp> {
  sharpModule ??= import('sharp').then(
    (module) => {
      const sharp = module.default;
      if (limited) applyLimits(sharp);
      return sharp;
    },
    (error: unknown) => {
      sharpModule = undefined; // the next use tries again, and says the same if it fails the same way
      throw new Error(`${feature} needs the package sharp, which failed to load: ${(error as Error).message}`, {
        cause: error,
      });
    },
  );
  return sharpModule;
}

function applyLimits(sharp: Sharp): void {
  sharp.cache(false);
  sharp.concurrency(1);
}

/**
 * libvips as a daemon that decodes each graph once needs it: no operation cache (sharp keeps up to 50 MB of
 * recent operations by default, and no graph is decoded twice) and one libvips thread per image (its default
 * is one per core, each with its own buffers; the graphs poll already decodes several images at once on
 * libuv's pool). Process-wide, as libvips is: the daemon calls it once at start, and the settings apply when
 * sharp first loads (or at once, if it has). Measured in `npm run bench`'s small-account row (issue 22).
 */
export function limitGraphDecoding(): void {
  limited = true;
  void sharpModule?.then(applyLimits, () => undefined);
}

/** Whether this process has loaded sharp (for tests and the bench: a PNG-only deployment never does). */
export function sharpLoaded(): boolean {
  return sharpModule !== undefined;
}

/** Largest accepted image side in pixels and size in bytes (a graph is a few hundred pixels wide). */
export const MAX_SIDE = 8192;
export const MAX_BYTES = 8 * 1024 * 1024;
/**
 * Largest accepted PNG in pixels (width × height; 2048 × 2048): it bounds the inflated pixel data a check holds
 * at once to 32 MiB (16-bit RGBA), where a graph is under 100,000 pixels.
 */
export const MAX_PNG_PIXELS = 2048 * 2048;

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
  if (isPng(bytes)) return checkWholePng(bytes);
  let sharp: Sharp;
  try {
    sharp = await loadSharp('a graph image that is not a PNG');
  } catch (error) {
    throw new GraphDecodeError((error as Error).message, { cause: error });
  }
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
    // Decode every pixel: a truncated image has a valid header but fails here.
    const png = await sharp(bytes, { failOn: 'warning' }).png().toBuffer();
    return { png, width, height, sourceFormat: format ?? 'unknown' };
  } catch (error) {
    throw new GraphDecodeError(`corrupt ${format} image (${(error as Error).message})`, { cause: error });
  }
}

/** A PNG as it came, once png.ts proves it whole; sharp is not needed for it. */
function checkWholePng(bytes: Buffer): CheckedImage {
  try {
    const { width, height } = checkPng(bytes, MAX_PNG_PIXELS);
    if (width > MAX_SIDE || height > MAX_SIDE) throw new Error(`image size ${width}x${height} outside 1..${MAX_SIDE}`);
    return { png: bytes, width, height, sourceFormat: 'png' };
  } catch (error) {
    throw new GraphDecodeError(`corrupt png image (${(error as Error).message})`, { cause: error });
  }
}

/** Resizes a PNG to `width` pixels wide, keeping the aspect ratio, never enlarging. */
export function resizePng(png: Buffer, width: number): Promise<Buffer> {
  return oneAtATime(async () => {
    const sharp = await loadSharp('a resized graph (?width=)');
    return sharp(png).resize({ width, withoutEnlargement: true }).png().toBuffer();
  });
}
