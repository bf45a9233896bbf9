/**
 * The bench's Prometheus, in its own process so that its CPU is not the daemon's: on `{url, count, everyMs, gzip}`
 * (an IPC message) it scrapes `GET url` one at a time (plain text, like the rest of the bench, or with
 * `Accept-Encoding: gzip` as Prometheus asks when `gzip` is true; the body is read, not inflated), `count`
 * times or, without a count, until `stop`, starting one scrape every `everyMs` at most (back to back without
 * it); then it sends back the latencies in milliseconds. `exit` ends it; it also
 * ends by itself after `--max-seconds`.
 *
 *   node bench/scraper.ts [--max-seconds 900]
 */
import { parseArgs } from 'node:util';
import { Agent, request } from 'undici';

const { values } = parseArgs({
  options: { 'max-seconds': { type: 'string', default: '900' } },
});
const agent = new Agent({ connections: 1 });
let times: number[] = [];
let running = false;
let loop: Promise<void> = Promise.resolve();

async function scrape(url: string, count: number, everyMs: number, gzip: boolean): Promise<void> {
  const headers = gzip ? { 'accept-encoding': 'gzip' } : {};
  while (running && times.length < count) {
    const started = performance.now();
    const res = await request(url, { dispatcher: agent, headers });
    await res.body.arrayBuffer();
    if (res.statusCode !== 200) throw new Error(`${url} answered ${res.statusCode}`);
    times.push(performance.now() - started);
    const rest = everyMs - (performance.now() - started);
    if (rest > 0 && running) await new Promise((resolve) => setTimeout(resolve, rest));
  }
}

const bound = setTimeout(() => process.exit(2), Number(values['max-seconds']) * 1000);
process.on(
  'message',
  async (message: { url: string; count?: number; everyMs?: number; gzip?: boolean } | 'stop' | 'exit') => {
    if (typeof message === 'object') {
      times = [];
      running = true;
      loop = scrape(
        message.url,
        message.count ?? Number.POSITIVE_INFINITY,
        message.everyMs ?? 0,
        message.gzip === true,
      );
      if (message.count !== undefined) {
        await loop;
        process.send!(times);
      } else process.send!('started');
    } else if (message === 'stop') {
      running = false;
      await loop;
      process.send!(times);
    } else if (message === 'exit') {
      clearTimeout(bound);
      await agent.close();
      process.disconnect();
    }
  },
);
process.send!('ready');
