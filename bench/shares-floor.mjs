/**
 * The floor of the shared-accounts CPU row (bench/shares.ts): a bare poller that sends the API requests one
 * replica sent during the measured window, at the same offsets, and reads and parses each reply, with nothing of
 * the daemon around them (no schedule, decoding, state, metrics, database). shares.ts starts one for the one
 * replica and one for each of the three, all four at once, with the daemon's Node flags and allocator, so that
 * splitting the same requests over three processes is measured on this machine as it splits the daemon's.
 *
 *   node [flags] bench/shares-floor.mjs PLAN.json
 *
 * PLAN.json: `{ periodMs, passes, requests: [{ atMs, url, key, path, params }] }`. Once loaded it prints `ready`
 * and reads the start (Unix ms) from its stdin, so that no process's start-up falls in a pass. Pass k (0-based)
 * sends every request at `start + k × periodMs + atMs`; the parent reads the process's CPU seconds between two
 * pass boundaries. Plain JavaScript, as the daemon (dist/) is. Once the last pass is done it prints `{ ok, failed }`
 * (replies 2xx with a JSON body, and every other outcome) and stays alive until its stdin closes, so that the
 * parent reads its CPU seconds before it exits.
 */
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createInterface } from 'node:readline';
import { Agent, request } from 'undici';

const plan = JSON.parse(readFileSync(process.argv[2], 'utf8'));
// As the daemon's client: one Agent, keep-alive connections per origin, a form-encoded POST with the key.
const dispatcher = new Agent({ connections: 18 });
const replies = { ok: 0, failed: 0 };
const send = async ({ url, key, path, params }) => {
  const { statusCode, body } = await request(new URL(path, url), {
    method: 'POST',
    dispatcher,
    headers: { authorization: key, 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams(params).toString(),
  });
  const parsed = JSON.parse(await body.text());
  if (statusCode >= 200 && statusCode < 300 && typeof parsed === 'object' && parsed !== null) replies.ok++;
  else replies.failed++;
};

// Ready: the start comes on stdin, as a line (its end, later, lets the process exit).
const lines = createInterface({ input: process.stdin });
const [first] = await Promise.all([once(lines, 'line'), process.stdout.write('ready\n')]);
const startMs = Number(first[0]);

// The requests of one pass grouped by the millisecond they are due at: one timer per group.
const due = new Map();
for (const r of plan.requests) due.set(r.atMs, [...(due.get(r.atMs) ?? []), r]);
const inFlight = [];
for (let pass = 0; pass < plan.passes; pass++)
  for (const [atMs, group] of due) {
    const delay = startMs + pass * plan.periodMs + atMs - Date.now();
    inFlight.push(
      new Promise((resolve) => setTimeout(resolve, Math.max(0, delay))).then(() =>
        Promise.all(group.map((r) => send(r).catch(() => void replies.failed++))),
      ),
    );
  }
await Promise.all(inFlight);
const end = startMs + plan.passes * plan.periodMs - Date.now();
if (end > 0) await new Promise((resolve) => setTimeout(resolve, end));
await dispatcher.close();
console.log(JSON.stringify(replies));
await once(lines, 'close');
