/**
 * The floor of the shared-accounts CPU row (bench/shares.ts): a bare poller that sends the API requests one
 * replica sent during the measured window, at the same offsets, and reads and parses each reply, with nothing of
 * the daemon around them (no schedule, decoding, state, metrics, database). shares.ts starts one for the one
 * replica and one for each of the three, all four at once, with the daemon's Node flags and allocator, so that
 * splitting the same requests over three processes is measured on this machine as it splits the daemon's.
 *
 *   node [flags] bench/shares-floor.mjs PLAN.json
 *
 * PLAN.json: `{ startMs, periodMs, passes, requests: [{ atMs, url, key, path, params }] }`. Pass k (0-based)
 * sends every request at `startMs + k × periodMs + atMs` (Unix ms); the parent reads the process's CPU seconds
 * between two pass boundaries. Plain JavaScript, as the daemon (dist/) is. Exits when the last pass is done.
 */
import { readFileSync } from 'node:fs';
import { Agent, request } from 'undici';

const plan = JSON.parse(readFileSync(process.argv[2], 'utf8'));
// As the daemon's client: one Agent, keep-alive connections per origin, a form-encoded POST with the key.
const dispatcher = new Agent({ connections: 18 });
let sink = 0;
const send = async ({ url, key, path, params }) => {
  const { body } = await request(new URL(path, url), {
    method: 'POST',
    dispatcher,
    headers: { authorization: key, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(params).toString(),
  });
  const parsed = JSON.parse(await body.text());
  sink += typeof parsed === 'object' && parsed !== null ? 1 : 0;
};

// The requests of one pass grouped by the millisecond they are due at: one timer per group.
const due = new Map();
for (const r of plan.requests) due.set(r.atMs, [...(due.get(r.atMs) ?? []), r]);
const inFlight = [];
for (let pass = 0; pass < plan.passes; pass++)
  for (const [atMs, group] of due) {
    const delay = plan.startMs + pass * plan.periodMs + atMs - Date.now();
    inFlight.push(
      new Promise((resolve) => setTimeout(resolve, Math.max(0, delay))).then(() =>
        Promise.all(group.map((r) => send(r).catch(() => undefined))),
      ),
    );
  }
await Promise.all(inFlight);
const end = plan.startMs + plan.passes * plan.periodMs - Date.now();
if (end > 0) await new Promise((resolve) => setTimeout(resolve, end));
await dispatcher.close();
console.log(JSON.stringify({ parsed: sink }));
