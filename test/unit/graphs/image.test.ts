import { crc32, deflateSync } from 'node:zlib';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { GraphDecodeError } from '../../../src/errors.js';
import { checkImage, limitGraphDecoding, MAX_PNG_PIXELS, resizePng } from '../../../src/graphs/image.js';
import { pngOf } from '../../helpers/images.js';

describe('graph image check', () => {
  it('accepts a valid PNG as it is', async () => {
    const png = await pngOf(497, 169);
    const checked = await checkImage(png);
    expect(checked).toEqual({ png, width: 497, height: 169, sourceFormat: 'png' });
  });

  it('converts a GIF to PNG', async () => {
    const gif = await sharp({ create: { width: 20, height: 10, channels: 3, background: '#ff0000' } })
      .gif()
      .toBuffer();
    const checked = await checkImage(gif);
    expect(checked.sourceFormat).toBe('gif');
    expect((await sharp(checked.png).metadata()).format).toBe('png');
  });

  it.each([
    { name: 'empty bytes', bytes: async () => Buffer.alloc(0), message: /empty image/ },
    { name: 'text', bytes: async () => Buffer.from('<html>502 Bad Gateway</html>'), message: /not an image/ },
    {
      name: 'a truncated PNG (valid header, missing pixels)',
      bytes: async () => (await pngOf(400, 300, '#123456')).subarray(0, 120),
      message: /corrupt png image|not an image/,
    },
  ])('rejects $name', async ({ bytes, message }) => {
    const error = await checkImage(await bytes()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GraphDecodeError);
    expect((error as Error).message).toMatch(message);
  });

  it.each([
    { name: 'interlaced (Adam7)', png: () => sharp(solid(33, 17)).png({ progressive: true }).toBuffer() },
    { name: 'palette', png: () => sharp(solid(40, 9)).png({ palette: true }).toBuffer() },
    { name: '16-bit RGB', png: () => sharp(solid(13, 5)).toColourspace('rgb16').png().toBuffer() },
    { name: 'grey with alpha', png: () => sharp(solid(7, 3)).greyscale().ensureAlpha().png().toBuffer() },
    { name: 'one pixel', png: () => sharp(solid(1, 1)).png().toBuffer() },
  ])('accepts a whole $name PNG as it is', async ({ png }) => {
    const bytes = await png();
    const { width, height } = await sharp(bytes).metadata();
    expect(await checkImage(bytes)).toEqual({ png: bytes, width, height, sourceFormat: 'png' });
  });

  // Issue 32: the PNG is proven whole by its chunks' CRCs and one inflate of its pixel data, not by sharp's stats().
  it.each([
    {
      name: 'a flipped byte in the pixel data',
      bytes: async () => flip(await pngOf(60, 20, '#abcdef'), 'IDAT', 4),
      message: /bad CRC in IDAT/,
    },
    {
      name: 'a flipped byte in the header',
      bytes: async () => flip(await pngOf(60, 20), 'IHDR', 2),
      message: /bad CRC in IHDR/,
    },
    {
      name: 'bytes after IEND',
      bytes: async () => Buffer.concat([await pngOf(), Buffer.from('junk')]),
      message: /4 bytes after IEND/,
    },
    { name: 'no IEND', bytes: async () => (await pngOf()).subarray(0, -12), message: /no IEND/ },
    {
      name: 'pixel data one scanline short',
      bytes: async () => built(4, 3, rows(4, 3).subarray(0, -13)),
      message: /pixel data of 26 bytes, not 39/,
    },
    {
      name: 'pixel data longer than the header says',
      bytes: async () => built(4, 3, Buffer.concat([rows(4, 3), rows(4, 1)])),
      message: /does not inflate to 39 bytes/,
    },
    { name: 'a filter type 5', bytes: async () => built(4, 3, rows(4, 3, 5)), message: /filter type 5/ },
    { name: 'no IDAT', bytes: async () => built(4, 3, undefined), message: /no IDAT/ },
    {
      name: 'a bit depth RGB does not allow',
      bytes: async () => built(4, 3, rows(4, 3), { depth: 4, colourType: 2 }),
      message: /colour type 2 with bit depth 4/,
    },
    {
      name: 'a palette image without PLTE',
      bytes: async () => built(4, 3, rows(4, 3), { colourType: 3, depth: 8 }),
      message: /palette image without PLTE/,
    },
    {
      name: 'more pixels than allowed',
      bytes: async () => built(MAX_PNG_PIXELS, 2, undefined),
      message: /outside 1\.\.4194304 pixels/,
    },
  ])('rejects a PNG with $name', async ({ bytes, message }) => {
    const error = await checkImage(await bytes()).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(GraphDecodeError);
    expect((error as Error).message).toMatch(/^graph image rejected: corrupt png image/);
    expect((error as Error).message).toMatch(message);
  });

  it('resizes to a width, keeping the aspect ratio, never enlarging', async () => {
    const png = await pngOf(400, 100);
    expect(await sharp(await resizePng(png, 100)).metadata()).toMatchObject({ width: 100, height: 25 });
    expect(await sharp(await resizePng(png, 800)).metadata()).toMatchObject({ width: 400, height: 100 });
  });
});

// Issue 22: libvips' operation cache and one thread per core were most of a small account's memory above the floor.
describe('graph decoding limits', () => {
  it('turns off the libvips operation cache and runs one libvips thread per image, and still checks images', async () => {
    limitGraphDecoding();
    // The limits apply when the graph code loads sharp (an image that is not a PNG), or at once if it has.
    const jpeg = await sharp(solid(8, 8)).jpeg().toBuffer();
    expect(await checkImage(jpeg)).toMatchObject({ width: 8, height: 8, sourceFormat: 'jpeg' });
    expect(sharp.cache()).toMatchObject({ memory: { max: 0 }, files: { max: 0 }, items: { max: 0 } });
    expect(sharp.concurrency()).toBe(1);
    const png = await pngOf(32, 16);
    expect(await checkImage(png)).toMatchObject({ width: 32, height: 16, sourceFormat: 'png' });
    await expect(checkImage(png.subarray(0, png.length - 20))).rejects.toThrow(GraphDecodeError);
  });
});

/** A width × height RGB image of one colour, for sharp to encode. */
function solid(width: number, height: number) {
  return { create: { width, height, channels: 3 as const, background: '#3366cc' } };
}

/** `height` RGB scanlines of `width` pixels, each led by `filter`. */
function rows(width: number, height: number, filter = 0): Buffer {
  const row = Buffer.alloc(1 + width * 3, 0x40);
  row[0] = filter;
  return Buffer.concat(Array.from({ length: height }, () => row));
}

function chunk(type: string, data: Buffer): Buffer {
  const body = Buffer.concat([Buffer.from(type, 'latin1'), data]);
  const length = Buffer.alloc(4);
  length.writeUInt32BE(data.length);
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(body));
  return Buffer.concat([length, body, crc]);
}

/** A PNG with valid CRCs whose IDAT holds `pixels` deflated (none when undefined). */
function built(width: number, height: number, pixels: Buffer | undefined, ihdr = { depth: 8, colourType: 2 }): Buffer {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = ihdr.depth;
  header[9] = ihdr.colourType;
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    ...(pixels ? [chunk('IDAT', deflateSync(pixels))] : []),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

/** `png` with one byte flipped `at` bytes into the data of its first `type` chunk. */
function flip(png: Buffer, type: string, at: number): Buffer {
  const copy = Buffer.from(png);
  const start = copy.indexOf(type, 8, 'latin1') + 4;
  copy[start + at]! ^= 0xff;
  return copy;
}
