/**
 * A graph reply `{success, base64}` (contract §4) read from its bytes (issue 43): each is ~16 KB of base64
 * inside a few bytes of JSON, and a busy account reads hundreds every poll. The text path (the body made a
 * string, scrubbed, parsed, its `base64` string copied again, then decoded) made most of a small account's
 * garbage. Here the base64 is decoded straight from its byte range, and only the JSON around it becomes text:
 * that text is scrubbed and parsed like any reply, with a marker in place of the base64, and the reply is read
 * from the bytes only when the marker parses as its top-level `base64` string (so the range found was that
 * string, and nothing else in the reply is skipped). Anything else (another shape, an escape or a space inside
 * the base64, base64 that is not well formed, an API error) returns undefined and the reply takes the text
 * path (decodeGraph), whose checks and errors are the same as ever.
 *
 * The base64 itself is not scrubbed: it only becomes bytes, never text that is kept, logged or shown. A secret
 * spelled inside it decodes to other bytes (its base64 spelling is not the secret); the text path, whose scrub
 * broke such base64, refused the reply instead. Every other string of the reply is scrubbed as before.
 */
import { randomUUID } from 'node:crypto';
import type { Scrubber } from '../scrub.js';
import { isObject } from './decode-json.js';

const KEY = Buffer.from('"base64"', 'latin1');
const DATA_URL = Buffer.from('data:', 'latin1');
/** Stands for the base64 in the JSON that is parsed; unknown to the upstream, so no reply can spell it. */
const MARKER = randomUUID();
const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const COMMA = 0x2c;
const COLON = 0x3a;
const PAD = 0x3d;

/** The characters of (padded) base64, RFC 4648 §4, and JSON's whitespace. */
const BASE64 = new Uint8Array(256);
for (const c of 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/') BASE64[c.charCodeAt(0)] = 1;
const SPACE = new Uint8Array(256);
for (const c of ' \t\r\n') SPACE[c.charCodeAt(0)] = 1;

/** The image bytes of a 2xx graph reply read from `body`, or undefined when the text path must read it. */
export function graphFromBytes(body: Buffer, scrub: Scrubber): Buffer | undefined {
  const value = base64Range(body);
  if (!value) return undefined;
  const around = `${body.toString('utf8', 0, value.quote)}${MARKER}${body.toString('utf8', value.end)}`;
  let reply: unknown;
  try {
    reply = JSON.parse(scrub(around));
  } catch {
    return undefined;
  }
  if (!isObject(reply) || reply.success === false || reply.error === true || reply.base64 !== MARKER) return undefined;
  return Buffer.from(body.toString('latin1', value.start, value.end), 'base64');
}

/**
 * Where the value of the first `"base64"` key lies: `quote` just after its opening quote, `start` after a
 * `data:…,` prefix if any, `end` at its closing quote. Undefined unless that value is a string of well-formed
 * padded base64 (what the text path's check accepts) with no escape or space in it.
 */
function base64Range(body: Buffer): { quote: number; start: number; end: number } | undefined {
  const key = body.indexOf(KEY);
  if (key === -1) return undefined;
  let at = skipSpace(body, key + KEY.length);
  if (body[at] !== COLON) return undefined;
  at = skipSpace(body, at + 1);
  if (body[at] !== QUOTE) return undefined;
  const quote = at + 1;
  let start = quote;
  if (body.subarray(quote, quote + DATA_URL.length).equals(DATA_URL)) {
    const comma = body.indexOf(COMMA, quote);
    if (comma === -1) return undefined;
    for (let i = quote; i < comma; i++) if (body[i] === QUOTE || body[i] === BACKSLASH) return undefined;
    start = comma + 1;
  }
  let end = start;
  while (end < body.length && BASE64[body[end]!]) end++;
  if (body[end] === PAD) end++;
  if (body[end] === PAD) end++;
  const length = end - start;
  if (body[end] !== QUOTE || length === 0 || length % 4 !== 0) return undefined;
  return { quote, start, end };
}

function skipSpace(body: Buffer, at: number): number {
  while (at < body.length && SPACE[body[at]!]) at++;
  return at;
}
