/**
 * The soak's chart (`npm run soak`): four panels over the run's minutes — memory (RSS, live heap), open file
 * descriptors and state_dir files, series (all, and the inventory's measured against expected), the state
 * database's size —
 * with the warm-up shaded. An SVG drawn here, rendered to PNG with sharp as bench/chart.ts does.
 */
import sharp from 'sharp';
import type { SoakSample } from './soak-goals.ts';

const W = 880;
const PANEL_W = 360;
const PANEL_H = 170;
const xmlText = (text: string) => text.replace(/&/g, '&amp;').replace(/</g, '&lt;');
const sum = (r: Record<string, number>) => Object.values(r).reduce((a, b) => a + b, 0);

interface Line {
  label: string;
  color: string;
  value: (s: SoakSample) => number;
  dashed?: boolean;
}

function panel(x0: number, y0: number, title: string, samples: SoakSample[], warmupS: number, lines: Line[]): string {
  const endMin = Math.max(...samples.map((s) => s.at / 60), 1);
  const yMax = Math.max(...samples.flatMap((s) => lines.map((l) => l.value(s))), 1) * 1.15;
  const x = (min: number) => x0 + (min / endMin) * PANEL_W;
  const y = (v: number) => y0 + PANEL_H - (v / yMax) * PANEL_H;
  const parts = [
    `<text x="${x0}" y="${y0 - 10}" font-size="13" font-weight="bold">${xmlText(title)}</text>`,
    `<rect x="${x0}" y="${y0}" width="${x(warmupS / 60) - x0}" height="${PANEL_H}" fill="#f2f2f2"/>`,
    `<line x1="${x0}" y1="${y0 + PANEL_H}" x2="${x0 + PANEL_W}" y2="${y0 + PANEL_H}" stroke="#444"/>`,
    `<line x1="${x0}" y1="${y0}" x2="${x0}" y2="${y0 + PANEL_H}" stroke="#444"/>`,
    `<text x="${x0 + PANEL_W}" y="${y0 + PANEL_H + 28}" font-size="11" text-anchor="end">minutes (warm-up shaded)</text>`,
  ];
  for (let i = 0; i <= 4; i++) {
    const v = (yMax * i) / 4;
    parts.push(
      `<text x="${x0 - 6}" y="${y(v) + 4}" font-size="11" text-anchor="end">${v < 10 ? v.toFixed(1) : v.toFixed(0)}</text>`,
      `<line x1="${x0}" y1="${y(v)}" x2="${x0 + PANEL_W}" y2="${y(v)}" stroke="#ddd"/>`,
      `<text x="${x((endMin * i) / 4)}" y="${y0 + PANEL_H + 14}" font-size="11" text-anchor="middle">${((endMin * i) / 4).toFixed(endMin < 10 ? 1 : 0)}</text>`,
    );
  }
  lines.forEach((line, i) => {
    const path = samples.map((s) => `${x(s.at / 60).toFixed(1)},${y(line.value(s)).toFixed(1)}`).join(' ');
    const dash = line.dashed ? ' stroke-dasharray="5 3"' : '';
    parts.push(
      `<polyline points="${path}" fill="none" stroke="${line.color}" stroke-width="2"${dash}/>`,
      `<rect x="${x0 + 10}" y="${y0 + 6 + i * 15}" width="10" height="10" fill="${line.color}"/>`,
      `<text x="${x0 + 26}" y="${y0 + 15 + i * 15}" font-size="11">${xmlText(line.label)}</text>`,
    );
  });
  return parts.join('\n');
}

function splitInTwo(text: string): string[] {
  const commas = [...text.matchAll(/, /g)].map((m) => m.index);
  if (commas.length === 0) return [text];
  const at = commas.reduce((best, i) => (Math.abs(i - text.length / 2) < Math.abs(best - text.length / 2) ? i : best));
  return [text.slice(0, at + 1), text.slice(at + 2)];
}

/** The SVG of a soak's samples. */
export function soakSvg(samples: SoakSample[], warmupS: number, subtitle: string): string {
  const height = 2 * (PANEL_H + 80) + 40;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${height}" font-family="sans-serif">`,
    `<rect width="100%" height="100%" fill="#fff"/>`,
    panel(60, 40, 'memory, MB', samples, warmupS, [
      { label: 'RSS', color: '#1f77b4', value: (s) => s.rssMb },
      { label: 'live heap after a full GC', color: '#2ca02c', value: (s) => s.heapMb },
    ]),
    panel(500, 40, 'open file descriptors, files under state_dir', samples, warmupS, [
      { label: 'open file descriptors', color: '#9467bd', value: (s) => s.fds },
      { label: 'files under state_dir (graphs, event ids)', color: '#17becf', value: (s) => s.stateFiles },
    ]),
    panel(60, 40 + PANEL_H + 80, 'series', samples, warmupS, [
      { label: 'all of /metrics', color: '#ff7f0e', value: (s) => s.series },
      { label: 'inventory families, measured', color: '#1f77b4', value: (s) => sum(s.families) },
      { label: 'inventory families, expected', color: '#c00', value: (s) => sum(s.expected), dashed: true },
    ]),
    panel(500, 40 + PANEL_H + 80, 'state database, KiB', samples, warmupS, [
      { label: 'database size', color: '#8c564b', value: (s) => s.dbBytes / 1024 },
    ]),
    // The subtitle on two lines, split at the comma nearest its middle.
    ...splitInTwo(subtitle).map(
      (line, i) =>
        `<text x="${W / 2}" y="${height - 22 + i * 14}" font-size="11" text-anchor="middle" fill="#555">${xmlText(line)}</text>`,
    ),
    '</svg>',
  ].join('\n');
}

/** Renders a soak's chart to a PNG file. */
export async function writeSoakChart(
  file: string,
  samples: SoakSample[],
  warmupS: number,
  subtitle: string,
): Promise<void> {
  if (samples.length === 0) return;
  await sharp(Buffer.from(soakSvg(samples, warmupS, subtitle)))
    .png({ compressionLevel: 9, palette: true })
    .toFile(file);
}
