/**
 * The graph-check row of `npm run bench` (issue 32): CPU per `checkImage` of the simulator's graph (497 × 169,
 * the demo's) against the floor of inflating the same image's pixel data (zlib.inflateSync of its IDAT chunks'
 * data, concatenated) in the same process and run. CPU is the process's (every thread), so work sharp or zlib
 * hand to libuv's pool counts too. Run alone, it prints the row and exits 1 when the goal is missed:
 *
 *   npm run build && node bench/graph-check.ts [--images 500]
 */
import { parseArgs } from 'node:util';
import { inflateSync } from 'node:zlib';
import { checkImage, limitGraphDecoding } from '../dist/graphs/image.js';
import { renderGraph } from '../dist/simulator/graphs.js';
import type { Row } from './options.ts';

/** What the row measures: CPU per image, ms. */
export interface GraphCheckResult {
  images: number;
  bytes: number;
  checkMs: number;
  inflateMs: number;
}

/** The IDAT chunks' data of a PNG, concatenated: what a PNG decoder inflates. */
function idatData(png: Buffer): Buffer {
  const parts: Buffer[] = [];
  for (let offset = 8; offset + 12 <= png.length; ) {
    const length = png.readUInt32BE(offset);
    if (png.toString('latin1', offset + 4, offset + 8) === 'IDAT')
      parts.push(png.subarray(offset + 8, offset + 8 + length));
    offset += 12 + length;
  }
  return Buffer.concat(parts);
}

/** Process CPU (all threads) per call of `work` over `times` calls, ms, after a warm-up of 50. */
async function cpuPerCall(times: number, work: () => unknown): Promise<number> {
  for (let i = 0; i < 50; i++) await work();
  const start = process.cpuUsage();
  for (let i = 0; i < times; i++) await work();
  const { user, system } = process.cpuUsage(start);
  return (user + system) / 1000 / times;
}

/** Measures both sides, alternating them twice so that a busy machine moves both. */
export async function measureGraphCheck(images: number): Promise<GraphCheckResult> {
  limitGraphDecoding();
  const png = await renderGraph(1, 'S100000', 'port_bits', 'day', Date.UTC(2026, 0, 1));
  const check = () => checkImage(png);
  const inflate = () => inflateSync(idatData(png));
  let checkMs = 0;
  let inflateMs = 0;
  for (let round = 0; round < 2; round++) {
    inflateMs += (await cpuPerCall(images / 2, inflate)) / 2;
    checkMs += (await cpuPerCall(images / 2, check)) / 2;
  }
  return { images, bytes: png.length, checkMs, inflateMs };
}

/** The bench row: check CPU ÷ inflate floor, goal ≤ 2. */
export function graphCheckRow(r: GraphCheckResult): Row {
  return {
    what: 'graph check CPU per image ÷ inflate floor',
    measured: r.checkMs / r.inflateMs,
    unit: '× floor',
    reference: `${(r.checkMs * 1000).toFixed(0)} µs vs ${(r.inflateMs * 1000).toFixed(0)} µs inflating the same PNG's IDAT data (497 × 169, ${r.bytes} bytes, ${r.images} images each)`,
    target: 2,
    rule: '≤ 2 × floor',
  };
}

if (import.meta.main) {
  const { values } = parseArgs({ options: { images: { type: 'string', default: '500' } } });
  const row = graphCheckRow(await measureGraphCheck(Number(values.images)));
  const ok = row.measured <= row.target;
  console.log(
    `| ${row.what} | ${row.measured.toFixed(2)} ${row.unit} | ${row.reference} | ${row.rule} | ${ok ? 'PASS' : 'MISS'} |`,
  );
  process.exitCode = ok ? 0 : 1;
}
