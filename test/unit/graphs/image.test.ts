import sharp from 'sharp';
import { describe, expect, it } from 'vitest';
import { GraphDecodeError } from '../../../src/errors.js';
import { checkImage, limitGraphDecoding, resizePng } from '../../../src/graphs/image.js';
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
    expect(sharp.cache()).toMatchObject({ memory: { max: 0 }, files: { max: 0 }, items: { max: 0 } });
    expect(sharp.concurrency()).toBe(1);
    const png = await pngOf(32, 16);
    expect(await checkImage(png)).toMatchObject({ width: 32, height: 16, sourceFormat: 'png' });
    await expect(checkImage(png.subarray(0, png.length - 20))).rejects.toThrow(GraphDecodeError);
  });
});
