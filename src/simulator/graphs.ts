/**
 * Port-traffic graphs as the simulator draws them: an SVG line chart rendered to PNG by sharp. The curve
 * is a deterministic function of (seed, server, type, scale, 5-minute bucket); renderings are cached.
 */
import sharp from 'sharp';
import { unit } from './prng.js';

const WIDTH = 497;
const HEIGHT = 169;
const POINTS = 96;
const COLORS: Record<string, string> = {
  port_bits: '#1f77b4',
  port_percent: '#2ca02c',
  port_errors: '#d62728',
  port_upkts: '#9467bd',
};

const cache = new Map<string, Promise<Buffer>>();
const CACHE_LIMIT = 4096;

function svg(seed: number, serverId: string, type: string, scale: string, bucket: number): string {
  const values = Array.from({ length: POINTS }, (_, i) => {
    const wave = 0.5 + 0.3 * Math.sin((i / POINTS) * Math.PI * 2 + unit(seed, serverId, 'phase') * 6);
    return Math.min(1, Math.max(0, wave + (unit(seed, serverId, type, scale, bucket, i) - 0.5) * 0.3));
  });
  const points = values.map(
    (v, i) => `${(30 + (i * (WIDTH - 40)) / (POINTS - 1)).toFixed(1)},${(HEIGHT - 20 - v * (HEIGHT - 40)).toFixed(1)}`,
  );
  const color = COLORS[type] ?? '#333333';
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${WIDTH}" height="${HEIGHT}">
<rect width="100%" height="100%" fill="#ffffff"/>
<rect x="30" y="20" width="${WIDTH - 40}" height="${HEIGHT - 40}" fill="#f7f7f7" stroke="#cccccc"/>
<polyline fill="none" stroke="${color}" stroke-width="1.5" points="${points.join(' ')}"/>
<polygon fill="${color}" fill-opacity="0.15" points="30,${HEIGHT - 20} ${points.join(' ')} ${WIDTH - 10},${HEIGHT - 20}"/>
</svg>`;
}

/** PNG bytes of a graph; the same inputs in the same 5-minute bucket give the same bytes. */
export function renderGraph(
  seed: number,
  serverId: string,
  type: string,
  scale: string,
  nowMs: number,
): Promise<Buffer> {
  const bucket = Math.floor(nowMs / 300_000);
  const key = `${seed}/${serverId}/${type}/${scale}/${bucket}`;
  let png = cache.get(key);
  if (!png) {
    if (cache.size >= CACHE_LIMIT) cache.delete(cache.keys().next().value!);
    png = sharp(Buffer.from(svg(seed, serverId, type, scale, bucket)))
      .png({ compressionLevel: 6 })
      .toBuffer();
    cache.set(key, png);
    png.catch(() => cache.delete(key));
  }
  return png;
}
