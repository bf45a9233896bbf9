/**
 * The scale curve of `npm run bench -- --servers 1000,10000,50000 --chart docs/bench-scale.png`: an SVG drawn
 * here (two panels over the server count on a log axis: cycle ÷ floor with the 1.10 goal, and live heap per
 * server in KiB), rendered to PNG with sharp.
 */
import sharp from 'sharp';

export interface ChartPoint {
  servers: number;
  coldRatio: number;
  warmRatio: number;
  heapPerServerKb: number;
  rssMb: number;
}

const W = 720;
const H = 300;
const PANEL = { top: 40, bottom: 250, width: 300 };
const LEFT = [60, 400];
const xmlText = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;');

function panel(
  x0: number,
  title: string,
  points: ChartPoint[],
  lines: Array<{ label: string; color: string; value: (p: ChartPoint) => number }>,
  goal?: { value: number; label: string },
): string {
  const xs = points.map((p) => Math.log10(p.servers));
  const [xMin, xMax] = [Math.min(...xs) - 0.15, Math.max(...xs) + 0.15];
  const all = points.flatMap((p) => lines.map((l) => l.value(p)));
  if (goal) all.push(goal.value);
  const yMax = Math.max(...all) * 1.15;
  const x = (servers: number) => x0 + ((Math.log10(servers) - xMin) / (xMax - xMin)) * PANEL.width;
  const y = (v: number) => PANEL.bottom - (v / yMax) * (PANEL.bottom - PANEL.top);
  const parts = [
    `<text x="${x0}" y="24" font-size="14" font-weight="bold">${xmlText(title)}</text>`,
    `<line x1="${x0}" y1="${PANEL.bottom}" x2="${x0 + PANEL.width}" y2="${PANEL.bottom}" stroke="#444"/>`,
    `<line x1="${x0}" y1="${PANEL.top}" x2="${x0}" y2="${PANEL.bottom}" stroke="#444"/>`,
  ];
  for (let i = 0; i <= 4; i++) {
    const v = (yMax * i) / 4;
    parts.push(
      `<text x="${x0 - 6}" y="${y(v) + 4}" font-size="11" text-anchor="end">${v < 10 ? v.toFixed(2) : v.toFixed(0)}</text>`,
      `<line x1="${x0}" y1="${y(v)}" x2="${x0 + PANEL.width}" y2="${y(v)}" stroke="#ddd"/>`,
    );
  }
  for (const p of points)
    parts.push(
      `<text x="${x(p.servers)}" y="${PANEL.bottom + 16}" font-size="11" text-anchor="middle">${p.servers.toLocaleString('en')}</text>`,
    );
  parts.push(
    `<text x="${x0 + PANEL.width / 2}" y="${PANEL.bottom + 34}" font-size="11" text-anchor="middle">servers (log scale)</text>`,
  );
  if (goal)
    parts.push(
      `<line x1="${x0}" y1="${y(goal.value)}" x2="${x0 + PANEL.width}" y2="${y(goal.value)}" stroke="#c00" stroke-dasharray="6 4"/>`,
      `<text x="${x0 + PANEL.width - 4}" y="${y(goal.value) - 5}" font-size="11" fill="#c00" text-anchor="end">${xmlText(goal.label)}</text>`,
    );
  lines.forEach((line, i) => {
    const path = points.map((p) => `${x(p.servers).toFixed(1)},${y(line.value(p)).toFixed(1)}`).join(' ');
    parts.push(`<polyline points="${path}" fill="none" stroke="${line.color}" stroke-width="2"/>`);
    for (const p of points)
      parts.push(`<circle cx="${x(p.servers)}" cy="${y(line.value(p))}" r="3.5" fill="${line.color}"/>`);
    parts.push(
      `<rect x="${x0 + 10}" y="${PANEL.top + 4 + i * 16}" width="10" height="10" fill="${line.color}"/>`,
      `<text x="${x0 + 26}" y="${PANEL.top + 13 + i * 16}" font-size="11">${xmlText(line.label)}</text>`,
    );
  });
  return parts.join('\n');
}

/** The SVG of the scale curve. */
export function scaleSvg(unsorted: ChartPoint[], subtitle: string): string {
  const points = [...unsorted].sort((a, b) => a.servers - b.servers);
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H + 20}" font-family="sans-serif">`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    panel(
      LEFT[0]!,
      'poll cycle ÷ bare-undici floor',
      points,
      [
        { label: 'first cycle', color: '#1f77b4', value: (p) => p.coldRatio },
        { label: 'steady cycle', color: '#ff7f0e', value: (p) => p.warmRatio },
      ],
      { value: 1.1, label: 'goal 1.10' },
    ),
    panel(LEFT[1]!, 'memory: heap per server, RSS', points, [
      { label: 'heap per server, KiB', color: '#2ca02c', value: (p) => p.heapPerServerKb },
      { label: 'RSS after a cycle, in 100 MB', color: '#9467bd', value: (p) => p.rssMb / 100 },
    ]),
    `<text x="${W / 2}" y="${H + 12}" font-size="11" text-anchor="middle" fill="#555">${xmlText(subtitle)}</text>`,
    '</svg>',
  ].join('\n');
}

/** Renders the scale curve to a PNG file. */
export async function writeScaleChart(file: string, points: ChartPoint[], subtitle: string): Promise<void> {
  await sharp(Buffer.from(scaleSvg(points, subtitle)))
    .png({ compressionLevel: 9, palette: true })
    .toFile(file);
}
