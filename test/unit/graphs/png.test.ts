/**
 * The PNG check's own buffers (issue 43): the inflated pixels (and the joined pixel data of a PNG with several
 * IDAT chunks) are freed as soon as they are checked; the image itself, and any buffer shared with others,
 * are left alone.
 */
import { crc32, deflateSync } from 'node:zlib';
import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { checkPng, pngSize, release } from '../../../src/graphs/png.js';

describe('release', () => {
  it('frees a buffer that owns all its memory', () => {
    const buffer = Buffer.alloc(Buffer.poolSize * 4, 1);
    release(buffer);
    expect(buffer.buffer.byteLength).toBe(0);
    expect(buffer.length).toBe(0);
  });

  it.each([
    { name: "a slice of Node's pool of small buffers", make: () => Buffer.from('a small buffer') },
    { name: 'a view into a larger buffer', make: () => Buffer.alloc(Buffer.poolSize * 4, 1).subarray(8) },
    { name: 'a buffer no larger than the pool', make: () => Buffer.alloc(Buffer.poolSize, 1) },
  ])('leaves $name as it is', ({ make }) => {
    const buffer = make();
    const copy = Buffer.from(buffer);
    release(buffer);
    expect(buffer.equals(copy)).toBe(true);
  });
});

describe('checkPng and its buffers', () => {
  it('leaves the image it checked whole, however large', async () => {
    const noise = Buffer.alloc(300 * 200 * 3);
    // Noise that does not compress (a linear congruential generator), so the PNG outgrows Node's buffer pool.
    let x = 1;
    for (let i = 0; i < noise.length; i++) {
      x = (Math.imul(x, 1103515245) + 12345) >>> 0;
      noise[i] = x >>> 24;
    }
    const png = await sharp(noise, { raw: { width: 300, height: 200, channels: 3 } })
      .png()
      .toBuffer();
    expect(png.buffer.byteLength).toBeGreaterThan(Buffer.poolSize);
    const copy = Buffer.from(png);
    expect(checkPng(png, 1_000_000)).toEqual({ width: 300, height: 200 });
    expect(png.equals(copy)).toBe(true);
  });

  it('checks pixel data split over several IDAT chunks, and a short one still fails', () => {
    const row = Buffer.alloc(1 + 300 * 3, 0x20);
    row[0] = 0;
    const pixels = Buffer.concat(Array.from({ length: 200 }, () => row));
    const whole = splitIdat(300, 200, pixels);
    expect(checkPng(whole, 1_000_000)).toEqual({ width: 300, height: 200 });
    expect(() => checkPng(splitIdat(300, 200, pixels.subarray(0, -10)), 1_000_000)).toThrow(
      /pixel data of 180190 bytes, not 180200/,
    );
  });
});

function chunk(type: string, data: Buffer): Buffer {
  const head = Buffer.alloc(8);
  head.writeUInt32BE(data.length);
  head.write(type, 4, 'latin1');
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32(Buffer.concat([head.subarray(4), data])));
  return Buffer.concat([head, data, crc]);
}

/** An 8-bit RGB PNG whose deflated `pixels` are split over three IDAT chunks. */
function splitIdat(width: number, height: number, pixels: Buffer): Buffer {
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8;
  header[9] = 2;
  const data = deflateSync(pixels);
  const third = Math.ceil(data.length / 3);
  return Buffer.concat([
    Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]),
    chunk('IHDR', header),
    ...[0, 1, 2].map((i) => chunk('IDAT', data.subarray(i * third, (i + 1) * third))),
    chunk('IEND', Buffer.alloc(0)),
  ]);
}

describe('pngSize: the size from IHDR alone, for files the store wrote itself', () => {
  it('reads the width and height sharp wrote', async () => {
    const png = await sharp({ create: { width: 31, height: 7, channels: 3, background: '#000' } })
      .png()
      .toBuffer();
    expect(pngSize(png)).toEqual({ width: 31, height: 7 });
  });

  it.each([
    { name: 'not a PNG', bytes: () => Buffer.from('GIF89a0000000000000000000000000000'), error: /no PNG signature/ },
    { name: 'cut inside IHDR', bytes: (png: Buffer) => png.subarray(0, 20), error: /truncated before the end of IHDR/ },
    {
      name: 'a flipped bit in the width',
      bytes: (png: Buffer) => {
        const copy = Buffer.from(png);
        copy[19]! ^= 1;
        return copy;
      },
      error: /bad CRC in IHDR/,
    },
  ])('refuses $name', async ({ bytes, error }) => {
    const png = await sharp({ create: { width: 4, height: 4, channels: 3, background: '#000' } })
      .png()
      .toBuffer();
    expect(() => pngSize(bytes(png))).toThrow(error);
  });
});
