import sharp from 'sharp';

/** A real PNG of the given size, drawn by sharp. */
export function pngOf(width = 120, height = 40, color = '#3366cc'): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background: color } })
    .png()
    .toBuffer();
}
