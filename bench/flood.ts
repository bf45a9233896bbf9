/**
 * The bench's hostile client, in its own process so that its CPU is not the daemon's: `loops` concurrent
 * loops sending GET <url> with one `Authorization` header, as fast as the answers come. Prints `started`
 * once the first answer arrived; on SIGTERM (or after `--max-seconds`) prints one JSON line
 * `{requests, statuses}` and exits. With `--local-address`, its connections leave from that address (e.g.
 * 127.0.0.2: the whole 127/8 is loopback on Linux), so the daemon counts it as one client of its own.
 *
 *   node bench/flood.ts <url> <loops> <authorization> [--max-seconds 120] [--local-address 127.0.0.2]
 */
import { parseArgs } from 'node:util';
import { Agent, request } from 'undici';

const { positionals, values } = parseArgs({
  allowPositionals: true,
  options: { 'max-seconds': { type: 'string', default: '120' }, 'local-address': { type: 'string' } },
});
const [url, loops, authorization] = positionals as [string, string, string];
const localAddress = values['local-address'];
const agent = new Agent({ connections: Number(loops), ...(localAddress ? { localAddress } : {}) });
const statuses: Record<string, number> = {};
let requests = 0;
let running = true;
let announced = false;

const finish = () => {
  running = false;
};
process.on('SIGTERM', finish);
// Bounded even if nobody stops it.
const bound = setTimeout(finish, Number(values['max-seconds']) * 1000);

await Promise.all(
  Array.from({ length: Number(loops) }, async () => {
    while (running) {
      try {
        const res = await request(url, { dispatcher: agent, headers: { authorization } });
        await res.body.dump();
        statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1;
      } catch {
        statuses.error = (statuses.error ?? 0) + 1;
      }
      requests++;
      if (!announced) {
        announced = true;
        console.log('started');
      }
    }
  }),
);
clearTimeout(bound);
console.log(JSON.stringify({ requests, statuses }));
await agent.close();
