/**
 * Issue 43: a reply's raw text is scrubbed once and parsed by a plain JSON.parse (no reviver). These tests
 * prove that a secret inside a JSON string — in every spelling of issue 28 (case, percent-encoding, `\u`
 * escapes, line breaks), written into the JSON by every escaping a server may choose (as it is, every code
 * unit `\uXXXX` in lower- or upper-case hex, mixed, PHP's `\/`) — never reaches a decoded value or key.
 */
import { MockAgent } from 'undici';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createScrubber, REDACTED } from '../../../src/scrub.js';
import { UpstreamClient } from '../../../src/upstream/client.js';
import { getDedicatedFirewallHistory } from '../../../src/upstream/firewall.js';
import { parseJsonReply } from '../../../src/upstream/reply.js';

/** A key with the characters that change under escaping: "/", "+", "=", '"', a space, a non-ASCII letter, "\\". */
const KEY = 'sk/Live+key=01"23 é9\\x';
const OTHER = 'webhook-token-0123456789';
const scrub = createScrubber([KEY, OTHER]);

const hex4 = (unit: number) => unit.toString(16).padStart(4, '0');
const percent = (text: string, upper: boolean) =>
  [...Buffer.from(text, 'utf8')]
    .map((b) => `%${b.toString(16).padStart(2, '0')}`)
    .map((p) => (upper ? p.toUpperCase() : p))
    .join('');

/** How the secret may stand in a decoded string (what the scrubber recognizes in decoded text). */
const DECODED: Record<string, (key: string) => string> = {
  plain: (k) => k,
  'upper-cased': (k) => k.toUpperCase(),
  'mixed case': (k) => [...k].map((c, i) => (i % 2 ? c.toUpperCase() : c.toLowerCase())).join(''),
  'URL-encoded': (k) => encodeURIComponent(k),
  'URL-encoded, keeping "/"': (k) => encodeURIComponent(k).replaceAll('%2F', '/'),
  'form-encoded': (k) => new URLSearchParams({ k }).toString().slice(2),
  'percent-encoded, every character, lower-case hex': (k) => percent(k, false),
  'percent-encoded, every character, upper-case hex': (k) => percent(k, true),
  'JSON-escaped text (\\u0041 as characters)': (k) => [...k].map((c) => `\\u${hex4(c.charCodeAt(0))}`).join(''),
  'JSON-escaped text, upper-case hex': (k) => [...k].map((c) => `\\u${hex4(c.charCodeAt(0)).toUpperCase()}`).join(''),
  'JSON-escaped text with \\/ and \\"': (k) => k.replaceAll('/', '\\/').replaceAll('"', '\\"'),
  'split by a line break': (k) => `${k.slice(0, 5)}\n${k.slice(5)}`,
  'split by CR LF': (k) => `${k.slice(0, 3)}\r\n${k.slice(3, 9)}\r\n${k.slice(9)}`,
  'split by an escaped line break as characters': (k) => `${k.slice(0, 5)}\\r\\n${k.slice(5)}`,
  'mixed: percent, \\u text, case and a break': (k) =>
    [...k]
      .map((c, i) =>
        i % 3 === 0 ? percent(c, i % 2 === 0) : i % 3 === 1 ? `\\u${hex4(c.charCodeAt(0))}` : c.toUpperCase(),
      )
      .join('\n'),
};

/** How a server may write a decoded string into its JSON (the inside of the quotes). */
const ENCODED: Record<string, (text: string) => string> = {
  'as JSON.stringify writes it': (t) => JSON.stringify(t).slice(1, -1),
  'PHP (\\/)': (t) => JSON.stringify(t).slice(1, -1).replaceAll('/', '\\/'),
  'every code unit \\uXXXX': (t) => [...t].map((_, i) => `\\u${hex4(t.charCodeAt(i))}`).join(''),
  'every code unit \\uXXXX, upper-case hex': (t) =>
    [...t].map((_, i) => `\\u${hex4(t.charCodeAt(i)).toUpperCase()}`).join(''),
  'mixed: every other code unit \\uXXXX': (t) =>
    t
      .split('')
      .map((c, i) => (i % 2 ? `\\u${hex4(c.charCodeAt(0))}` : JSON.stringify(c).slice(1, -1)))
      .join(''),
};

const CASES = Object.entries(DECODED).flatMap(([decoded, spell]) =>
  Object.entries(ENCODED).map(([encoded, write]) => ({ name: `${decoded}, ${encoded}`, inside: write(spell(KEY)) })),
);

/** Every string of a decoded value, keys included. */
function strings(value: unknown): string[] {
  if (typeof value === 'string') return [value];
  if (Array.isArray(value)) return value.flatMap(strings);
  if (value && typeof value === 'object')
    return Object.entries(value).flatMap(([key, inner]) => [key, ...strings(inner)]);
  return [];
}

/** Whether a decoded text holds KEY once escapes, percent-encoding, line breaks and case are undone. */
function holdsKey(text: string): boolean {
  const undone = text
    .replace(/\\u([0-9a-f]{4})/gi, (_m, code: string) => String.fromCharCode(Number.parseInt(code, 16)))
    .replace(/(?:%[0-9a-f]{2})+/gi, (m) => {
      try {
        return decodeURIComponent(m);
      } catch {
        return m;
      }
    })
    .replace(/\\[nr]|[\r\n]/g, '')
    .replace(/\\([/"\\])/g, '$1')
    .replaceAll('+', ' ')
    .toLowerCase();
  return undone.includes(KEY.toLowerCase().replaceAll('+', ' ')) || undone.includes(KEY.toLowerCase());
}

describe('a reply parsed without a reviver (issue 43)', () => {
  it('the leak check finds the key in every spelling, decoded without scrubbing', () => {
    for (const { name, inside } of CASES) {
      const decoded = JSON.parse(`{"m":"${inside}"}`) as { m: string };
      expect(holdsKey(decoded.m), name).toBe(true);
      expect(scrub(decoded.m), name).toContain(REDACTED);
    }
  });

  it.each(CASES)('no decoded value or key holds the secret: $name', ({ inside }) => {
    const raw = `{"error":false,"message":"before ${inside} after","${inside}":[{"note":"${inside}"},"${inside}${inside}"]}`;
    const parsed = parseJsonReply({ operation: 'servers', path: '/api/v1/dedicated', status: 200 }, scrub(raw), true);
    const decoded = strings(parsed);
    expect(decoded).toContain(`before ${REDACTED} after`);
    for (const text of decoded) {
      expect(holdsKey(text)).toBe(false);
      // What the reviver of before issue 43 did to every string would change nothing now.
      expect(scrub(text)).toBe(text);
    }
  });

  it('leaves a reply without a secret exactly as JSON.parse reads it', () => {
    const raw = JSON.stringify({ servers: [{ id: 'S1', name: 'w\u00e9b-1 \\ "x"', path: 'a/b', n: 1.5, on: true }] });
    const parsed = parseJsonReply({ operation: 'servers', path: '/api/v1/dedicated', status: 200 }, scrub(raw), true);
    expect(parsed).toEqual(JSON.parse(raw));
  });
});

const clientOf = (agent: MockAgent) =>
  new UpstreamClient({
    baseUrl: 'https://api.provider.test',
    apiKey: KEY,
    secrets: [OTHER],
    timeoutMs: 2000,
    concurrency: 1,
    retries: 0,
    dispatcher: agent,
  });

describe('the client: one scrub of the raw text, then JSON.parse (issue 43)', () => {
  const BASE = 'https://api.provider.test';
  let agent: MockAgent;
  beforeEach(() => {
    agent = new MockAgent();
    agent.disableNetConnect();
  });
  afterEach(async () => {
    await agent.close();
  });

  it.each(CASES.filter((_, i) => i % 7 === 0))('keeps no secret in a decoded reply: $name', async ({ inside }) => {
    agent
      .get(BASE)
      .intercept({ path: '/api/v1/dedicated', method: 'POST' })
      .reply(200, `{"servers":[{"name":"${inside}","${inside}":"${inside}"}]}`, {
        headers: { 'content-type': 'application/json' },
      });
    const client = clientOf(agent);
    const reply = await client.json({ operation: 'servers', path: '/api/v1/dedicated', body: {}, read: true });
    for (const text of strings(reply)) expect(holdsKey(text)).toBe(false);
    expect(strings(reply)).toContain(REDACTED);
  });

  it.each(CASES.filter((_, i) => i % 5 === 0))(
    'a firewall history whose events are a JSON string: no secret two escapes deep reaches an event: $name',
    async ({ inside }) => {
      // The inner JSON holds the spelling; the outer reply carries that JSON as a string (escaped once more).
      const inner = `[{"id":"1","ip":"192.0.2.1","raw":"udp ${inside}","note":"${inside}"}]`;
      agent
        .get(BASE)
        .intercept({ path: '/api/v1/dedicated/firewall', method: 'POST' })
        .reply(200, JSON.stringify({ success: true, firewall: inner }), {
          headers: { 'content-type': 'application/json' },
        });
      const client = clientOf(agent);
      const events = await getDedicatedFirewallHistory(client, 'S1', 'hour');
      expect(events).toHaveLength(1);
      expect(events[0]!.raw).toBe(`udp ${REDACTED}`);
      for (const text of strings(events)) expect(holdsKey(text)).toBe(false);
    },
  );
});
