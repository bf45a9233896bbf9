/**
 * Proving a PNG whole at the cost of inflating its pixel data once (issue 32): every chunk's CRC, the header's
 * fields, the zlib stream of the IDAT chunks inflated whole (zlib checks its Adler-32), and exactly the bytes the
 * header implies, each scanline led by a valid filter type. The structure is the PNG specification's
 * (W3C PNG, third edition: §5 datastream, §11.2.2 IHDR, §8.2 Adam7 passes, §9.2 filter types); sharp's
 * `stats()` did the same proof with per-band statistics on top, at about ten times the CPU.
 */
import { crc32, inflateSync } from 'node:zlib';

/** The eight bytes every PNG begins with. */
const SIGNATURE = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);

/** Samples per pixel of each colour type, and the bit depths the specification allows for it. */
const COLOUR_TYPES: Record<number, { samples: number; depths: number[] }> = {
  0: { samples: 1, depths: [1, 2, 4, 8, 16] },
  2: { samples: 3, depths: [8, 16] },
  3: { samples: 1, depths: [1, 2, 4, 8] },
  4: { samples: 2, depths: [8, 16] },
  6: { samples: 4, depths: [8, 16] },
};

/** Adam7's seven passes: first column, first row, column step, row step. */
const ADAM7 = [
  [0, 0, 8, 8],
  [4, 0, 8, 8],
  [0, 4, 4, 8],
  [2, 0, 4, 4],
  [0, 2, 2, 4],
  [1, 0, 2, 2],
  [0, 1, 1, 2],
] as const;

/** Largest filter type (Paeth). */
const MAX_FILTER = 4;

/** True when `bytes` begins with the PNG signature. */
export function isPng(bytes: Buffer): boolean {
  return bytes.length >= SIGNATURE.length && bytes.subarray(0, SIGNATURE.length).equals(SIGNATURE);
}

/**
 * A PNG's size in pixels from its IHDR chunk alone (the first chunk, §5.6), its CRC checked: what the graph
 * store needs of a file it wrote itself, without inflating anything. Throws an Error naming the problem.
 */
export function pngSize(bytes: Buffer): { width: number; height: number } {
  if (!isPng(bytes)) throw new Error('no PNG signature');
  const at = SIGNATURE.length;
  if (bytes.length < at + 25) throw new Error('truncated before the end of IHDR');
  if (bytes.readUInt32BE(at) !== 13 || bytes.toString('latin1', at + 4, at + 8) !== 'IHDR')
    throw new Error('first chunk is not a 13-byte IHDR');
  if (crc32(bytes.subarray(at + 4, at + 21)) !== bytes.readUInt32BE(at + 21)) throw new Error('bad CRC in IHDR');
  return { width: bytes.readUInt32BE(at + 8), height: bytes.readUInt32BE(at + 12) };
}

/** The header's fields this check needs. */
interface Header {
  width: number;
  height: number;
  depth: number;
  colourType: number;
  interlace: number;
}

/**
 * Checks a PNG's structure and pixel data without decoding pixels; returns its size in pixels. Throws an
 * Error whose message names the first problem (bad CRC, truncated chunk, missing IHDR/IDAT/IEND, pixel data
 * shorter or longer than the header implies, bad filter type). `maxPixels` bounds width × height before
 * anything is inflated, so the inflated data stays below `maxPixels` × 8 bytes plus a byte per scanline.
 */
export function checkPng(bytes: Buffer, maxPixels: number): { width: number; height: number } {
  if (!isPng(bytes)) throw new Error('no PNG signature');
  let header: Header | undefined;
  let hasPalette = false;
  let ended = false;
  const idat: Buffer[] = [];
  let offset = SIGNATURE.length;
  while (!ended) {
    if (offset + 12 > bytes.length) throw new Error(`truncated at byte ${offset}: no IEND chunk`);
    const length = bytes.readUInt32BE(offset);
    const type = bytes.toString('latin1', offset + 4, offset + 8);
    const end = offset + 12 + length;
    if (length > 0x7fffffff || end > bytes.length) throw new Error(`truncated ${type} chunk at byte ${offset}`);
    const data = bytes.subarray(offset + 8, offset + 8 + length);
    if (crc32(bytes.subarray(offset + 4, offset + 8 + length)) !== bytes.readUInt32BE(offset + 8 + length))
      throw new Error(`bad CRC in ${type} chunk at byte ${offset}`);
    if (!header && type !== 'IHDR') throw new Error(`first chunk is ${type}, not IHDR`);
    if (type === 'IHDR') header = readHeader(data, header, maxPixels);
    else if (type === 'PLTE') hasPalette = true;
    else if (type === 'IDAT') idat.push(data);
    else if (type === 'IEND') ended = true;
    offset = end;
  }
  if (offset !== bytes.length) throw new Error(`${bytes.length - offset} bytes after IEND`);
  if (!header) throw new Error('no IHDR chunk');
  if (header.colourType === 3 && !hasPalette) throw new Error('palette image without PLTE');
  if (idat.length === 0) throw new Error('no IDAT chunk');
  if (idat.length === 1) checkPixelData(idat[0]!, header);
  else {
    const joined = Buffer.concat(idat);
    try {
      checkPixelData(joined, header);
    } finally {
      release(joined);
    }
  }
  return { width: header.width, height: header.height };
}

function readHeader(data: Buffer, seen: Header | undefined, maxPixels: number): Header {
  if (seen) throw new Error('second IHDR chunk');
  if (data.length !== 13) throw new Error(`IHDR of ${data.length} bytes, not 13`);
  const header = {
    width: data.readUInt32BE(0),
    height: data.readUInt32BE(4),
    depth: data[8]!,
    colourType: data[9]!,
    interlace: data[12]!,
  };
  const { width, height, depth, colourType, interlace } = header;
  if (width === 0 || height === 0 || width * height > maxPixels)
    throw new Error(`image size ${width}x${height} outside 1..${maxPixels} pixels`);
  if (!COLOUR_TYPES[colourType]?.depths.includes(depth))
    throw new Error(`colour type ${colourType} with bit depth ${depth}`);
  if (data[10] !== 0 || data[11] !== 0 || interlace > 1)
    throw new Error(`compression ${data[10]}, filter ${data[11]}, interlace ${interlace}: not in the PNG standard`);
  return header;
}

/** Scanlines of each (sub-)image: count and bytes per scanline without its filter byte. */
function scanlines({ width, height, depth, colourType, interlace }: Header): Array<[rows: number, bytes: number]> {
  const bits = COLOUR_TYPES[colourType]!.samples * depth;
  const rowBytes = (pixels: number) => Math.ceil((pixels * bits) / 8);
  if (interlace === 0) return [[height, rowBytes(width)]];
  return ADAM7.map(([x0, y0, dx, dy]): [number, number] => {
    const columns = width > x0 ? Math.ceil((width - x0) / dx) : 0;
    const rows = height > y0 ? Math.ceil((height - y0) / dy) : 0;
    return columns === 0 ? [0, 0] : [rows, rowBytes(columns)];
  });
}

function checkPixelData(compressed: Buffer, header: Header): void {
  const passes = scanlines(header);
  const expected = passes.reduce((sum, [rows, bytes]) => sum + rows * (bytes + 1), 0);
  let pixels: Buffer;
  try {
    // One output buffer of the size expected: with zlib's default 16 KiB chunks, a 497 × 169 RGBA graph made 21
    // chunks and their concatenation, twice its 336 KB in garbage outside the heap, per image (issue 43).
    pixels = inflateSync(compressed, { maxOutputLength: expected, chunkSize: Math.max(expected, 64) });
  } catch (error) {
    throw new Error(`pixel data does not inflate to ${expected} bytes (${(error as Error).message})`, {
      cause: error,
    });
  }
  try {
    if (pixels.length !== expected) throw new Error(`pixel data of ${pixels.length} bytes, not ${expected}`);
    let at = 0;
    for (const [rows, bytes] of passes)
      for (let row = 0; row < rows; row++, at += bytes + 1)
        if (pixels[at]! > MAX_FILTER) throw new Error(`filter type ${pixels[at]} at byte ${at} of the pixel data`);
  } finally {
    release(pixels);
  }
}

/**
 * Frees the memory of a buffer this module made and no one else holds, now rather than at the next garbage
 * collection: detaching its ArrayBuffer (`transfer(0)`) drops the backing store at once. A graph's inflated
 * pixels are ~20 times its PNG (336 KB for a 497 × 169 RGBA graph); a busy account's graphs poll left tens of
 * MiB of them dead between two collections (issue 43). A buffer that shares its ArrayBuffer (Node's pool
 * of small buffers, a view into another's memory) is left to the collector.
 */
export function release(buffer: Buffer): void {
  const memory = buffer.buffer as ArrayBuffer & { transfer?: (length: number) => ArrayBuffer };
  const whole = buffer.byteOffset === 0 && buffer.byteLength === memory.byteLength;
  if (memory instanceof ArrayBuffer && whole && memory.byteLength > Buffer.poolSize) memory.transfer?.(0);
}
