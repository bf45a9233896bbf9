/**
 * The decode rows of `npm run bench` (issue 43): main-thread CPU to decode one reply as the client does —
 * the daemon's own scrubber (`createScrubber`, three secrets) over the raw text, then `parseJsonReply` —
 * against a plain `JSON.parse` of the same text, alternated in this process and run, on the compiled daemon
 * (dist/). The replies are the simulator's: the server list at `servers` servers, and a firewall history of
 * about 20 events; each also with a JSON escape in every hostname, IP and log line (every `.` written
 * `\u002e`, the same values decoded), since a reply with a backslash is where a reviver used to run (until
 * issue 43) and where the scrubber's pattern tries its escaped spellings. Goal ≤ 1.5 × the plain parse. Runs
 * alone too:
 *
 *   npm run build && node bench/decode.ts [--servers 10000]
 */
import { parseArgs } from 'node:util';
import { request } from 'undici';
import { createScrubber } from '../dist/scrub.js';
import { startSimulator } from '../dist/simulator/server.js';
import { parseJsonReply } from '../dist/upstream/reply.js';
import type { Row } from './options.ts';

const KEY = 'Kq7d0b1e4d2f9c81a7e3bench';
/**
 * The daemon's scrubber as an account with a webhook token and a database password has it: three secrets,
 * each starting with other characters (the scrubber groups secrets that start alike).
 */
const SECRETS = [KEY, 'whk-4d2f9c81a7e3-token', 'p4ss/w0rd+db=77'];

/** One reply kind: its name, its text, and CPU per decode (ms) of the daemon's path and of JSON.parse. */
export interface DecodeResult {
  what: string;
  bytes: number;
  decodeMs: number;
  parseMs: number;
}

/** This thread's CPU, ms. */
function threadCpuMs(): number {
  const { user, system } = process.threadCpuUsage();
  return (user + system) / 1000;
}

/** CPU per call of `work`, ms, over `times` calls. */
function cpuPerCall(times: number, work: () => unknown): number {
  const start = threadCpuMs();
  for (let i = 0; i < times; i++) work();
  return (threadCpuMs() - start) / times;
}

const median = (values: number[]) => [...values].sort((a, b) => a - b)[values.length >> 1]!;

/** Rounds of each side, alternated: the median round of each is compared (a GC or a busy neighbour moves one). */
const ROUNDS = 9;

/** Decodes `text` both ways, `times` calls a round, after a warm-up round of each. */
function measure(what: string, text: string, times: number): DecodeResult {
  const scrub = createScrubber(SECRETS);
  const ctx = { operation: 'bench', path: '/bench', status: 200 };
  const decode = () => parseJsonReply(ctx, scrub(text), true);
  if (JSON.stringify(decode()) !== JSON.stringify(JSON.parse(text)))
    throw new Error(`bench: decoding ${what} changed a reply without a secret`);
  const parse = () => JSON.parse(text);
  cpuPerCall(times, parse);
  cpuPerCall(times, decode);
  const decodeMs: number[] = [];
  const parseMs: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    parseMs.push(cpuPerCall(times, parse));
    decodeMs.push(cpuPerCall(times, decode));
  }
  return { what, bytes: Buffer.byteLength(text), decodeMs: median(decodeMs), parseMs: median(parseMs) };
}

/** The simulator's replies, read over HTTP as the daemon reads them; `rounds` scales the repetitions. */
export async function measureDecode(servers: number, rounds = 1): Promise<DecodeResult[]> {
  const sim = await startSimulator({ apiKey: KEY, servers, seed: 43 });
  const read = async (path: string, body = '') => {
    const res = await request(`${sim.url}${path}`, {
      method: 'POST',
      headers: { authorization: KEY, 'content-type': 'application/x-www-form-urlencoded' },
      body,
    });
    return res.body.text();
  };
  try {
    const list = await read('/api/v1/dedicated');
    // The server whose day of history is closest to 20 events (the issue's example), of the first 100.
    const ids = [...sim.state.servers.keys()].slice(0, 100);
    const histories = await Promise.all(
      ids.map((id) => read('/api/v1/dedicated/firewall', `server_id=${id}&scale=day`)),
    );
    const events = (h: string) => (JSON.parse(h) as { firewall?: unknown[] }).firewall?.length ?? 0;
    const history = histories.reduce((a, b) => (Math.abs(events(b) - 20) < Math.abs(events(a) - 20) ? b : a));
    /** The same reply with a JSON escape in every hostname, IP and log line; throws if a value changed. */
    const escaped = (text: string) => {
      const out = text.replaceAll('.', '\\u002e');
      if (JSON.stringify(JSON.parse(out)) !== JSON.stringify(JSON.parse(text)))
        throw new Error('bench: escaping every "." changed the reply');
      return out;
    };
    const listTimes = Math.max(2, Math.round((8 * rounds * 10_000) / servers));
    const historyTimes = Math.max(50, Math.round(5000 * rounds));
    return [
      measure(`server list, ${servers.toLocaleString('en')} servers`, list, listTimes),
      measure(`server list, ${servers.toLocaleString('en')} servers, every "." escaped`, escaped(list), listTimes),
      measure(`firewall history, ${events(history)} events`, history, historyTimes),
      measure(`firewall history, ${events(history)} events, every "." escaped`, escaped(history), historyTimes),
    ];
  } finally {
    await sim.close();
  }
}

/** The goal rows: decode CPU ÷ JSON.parse of the same text, ≤ 1.5. */
export function decodeRows(results: DecodeResult[]): Row[] {
  return results.map((r) => ({
    what: `decode CPU per reply ÷ JSON.parse: ${r.what}`,
    measured: r.decodeMs / r.parseMs,
    unit: '×',
    reference: `${r.decodeMs >= 1 ? `${r.decodeMs.toFixed(2)} ms` : `${(r.decodeMs * 1000).toFixed(1)} µs`} vs ${r.parseMs >= 1 ? `${r.parseMs.toFixed(2)} ms` : `${(r.parseMs * 1000).toFixed(1)} µs`} for a plain JSON.parse of the same ${(r.bytes / 1024).toFixed(1)} KiB (scrub of the raw text with 3 secrets, then parseJsonReply)`,
    target: 1.5,
    rule: '≤ 1.5 × JSON.parse',
  }));
}

if (import.meta.main) {
  const { values } = parseArgs({ options: { servers: { type: 'string', default: '10000' } } });
  const rows = decodeRows(await measureDecode(Number(values.servers)));
  let missed = 0;
  for (const row of rows) {
    const ok = row.measured <= row.target;
    if (!ok) missed++;
    console.log(
      `| ${row.what} | ${row.measured.toFixed(2)} ${row.unit} | ${row.reference} | ${row.rule} | ${ok ? 'PASS' : 'MISS'} |`,
    );
  }
  process.exitCode = missed ? 1 : 0;
}
