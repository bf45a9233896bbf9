/**
 * Tolerant decoding of API replies other than server records (decode-servers.ts): firewall history, graphs,
 * the OS and location lists, action results. The contract leaves the `firewall` value unspecified (§2: "not
 * shown"); the public client reads it as an array of events with at least `id`, `ip`, `raw`. So: known fields
 * are looked up under their likely spellings, a missing one is an empty string, the raw record is kept, and
 * only a reply that cannot be read at all is an InvalidReplyError — for that one call only.
 */
import { createHash } from 'node:crypto';
import { ApiError, InvalidReplyError, type UpstreamContext } from '../errors.js';
import type { Scrubber } from '../scrub.js';
import { excerpt, isObject, type Json, pick, text } from './decode-json.js';
import { isBase64 } from './validators.js';

/** One firewall (DDoS) event of a history reply. */
export interface FirewallEvent {
  /** the API's id, or a digest of the record when it has none; deduplication key */
  id: string;
  ip: string;
  raw: string;
  /** every other scalar field the event carried (times, sizes, type), as sent */
  fields: Record<string, string | number | boolean>;
}

function decodeEvent(value: unknown): FirewallEvent | undefined {
  if (!isObject(value)) return undefined;
  const fields: FirewallEvent['fields'] = {};
  for (const [key, field] of Object.entries(value)) {
    if (key === 'id' || key === 'ip' || key === 'raw') continue;
    if (typeof field === 'string' || typeof field === 'number' || typeof field === 'boolean') fields[key] = field;
  }
  const raw = typeof value.raw === 'string' ? value.raw : value.raw === undefined ? '' : JSON.stringify(value.raw);
  const id = text(value.id) || createHash('sha1').update(JSON.stringify(value)).digest('hex').slice(0, 16);
  return { id, ip: text(value.ip), raw, fields };
}

/**
 * Decodes a firewall-history reply `{success, firewall}` (contract §4). `firewall` may be an array of
 * events, a string holding JSON of one, or `""`/`null`/`[]` (no events). Throws InvalidReplyError for
 * anything else, including `success: false` and non-object events.
 *
 * A string is JSON inside JSON: the reply's raw text was scrubbed once (client.ts), which covers one level of
 * JSON escaping, so the inner text passes `scrub` again before it is parsed — a secret written through two
 * levels of escapes (`\\u0041` in the raw text) never reaches an event.
 */
export function decodeFirewallHistory(reply: unknown, ctx: UpstreamContext, scrub: Scrubber): FirewallEvent[] {
  if (!isObject(reply) || reply.success === false) {
    throw new InvalidReplyError(ctx, 'expected {success: true, firewall}', excerpt(reply));
  }
  let value = reply.firewall;
  if (typeof value === 'string') {
    if (value.trim() === '') return [];
    try {
      value = JSON.parse(scrub(value));
    } catch {
      throw new InvalidReplyError(ctx, '"firewall" is a string but not JSON', excerpt(value));
    }
  }
  if (value === null || value === undefined) return [];
  if (!Array.isArray(value)) throw new InvalidReplyError(ctx, '"firewall" is not a list of events', excerpt(value));
  const events: FirewallEvent[] = [];
  for (const item of value) {
    const event = decodeEvent(item);
    if (!event) throw new InvalidReplyError(ctx, 'a firewall event is not an object', excerpt(item));
    events.push(event);
  }
  return events;
}

/** Decodes a graph reply `{success, base64}` (contract §4) to the image bytes. Throws InvalidReplyError. */
export function decodeGraph(reply: unknown, ctx: UpstreamContext): Buffer {
  if (!isObject(reply) || reply.success === false || typeof reply.base64 !== 'string') {
    throw new InvalidReplyError(ctx, 'expected {success: true, base64}', excerpt(reply));
  }
  // Some encoders send a data: URL; accept it.
  const data = reply.base64.replace(/^data:[^,]*,/, '').replace(/\s+/g, '');
  if (data === '' || !isBase64(data)) throw new InvalidReplyError(ctx, '"base64" is not base64', excerpt(data));
  return Buffer.from(data, 'base64');
}

/** An operating system entry (contract §2); all values strings. */
export interface OperatingSystem {
  id: string;
  name: string;
  arch: string;
  type: string;
  pricePerCore: string;
}

/** Decodes the OS list (a JSON array, contract §4). Entries without an id are dropped. */
export function decodeOperatingSystems(reply: unknown, ctx: UpstreamContext): OperatingSystem[] {
  const list = Array.isArray(reply)
    ? reply
    : isObject(reply)
      ? ['os', 'data', 'result'].map((k) => reply[k]).find(Array.isArray)
      : undefined;
  if (!list) throw new InvalidReplyError(ctx, 'expected an array of operating systems', excerpt(reply));
  return list.filter(isObject).flatMap((os) => {
    const id = pick(os, ['id', 'osid']);
    return id
      ? [
          {
            id,
            name: pick(os, ['name']),
            arch: pick(os, ['arch']),
            type: pick(os, ['type']),
            pricePerCore: pick(os, ['price_per_core']),
          },
        ]
      : [];
  });
}

/** A location (reseller); its fields are undocumented (contract §2), so id and name are guessed. */
export interface Location {
  id: string;
  name: string;
  raw: Json;
}

/** Decodes the locations list: an array, a wrapped array, or a map keyed by id. */
export function decodeLocations(reply: unknown, ctx: UpstreamContext): Location[] {
  let entries: Array<[string, unknown]> | undefined;
  if (Array.isArray(reply)) entries = reply.map((r) => ['', r]);
  else if (isObject(reply)) {
    const wrapped = ['locations', 'data', 'result'].map((k) => reply[k]).find(Array.isArray);
    entries = wrapped ? wrapped.map((r) => ['', r]) : Object.entries(reply).filter(([k]) => k !== 'success');
  }
  if (!entries) throw new InvalidReplyError(ctx, 'expected a list of locations', excerpt(reply));
  return entries.flatMap(([key, value]) => {
    if (typeof value === 'string') return [{ id: key || value, name: value, raw: {} }];
    if (!isObject(value)) return [];
    const id = pick(value, ['id', 'location_id', 'code']) || key;
    return id ? [{ id, name: pick(value, ['name', 'location', 'city']) || id, raw: value }] : [];
  });
}

/** The result of an action (power, DNS, cancellation, firewall settings) the API confirmed: its message. */
export interface ActionResult {
  message: string;
  raw: unknown;
}

/**
 * Decodes an action reply by the API's own vocabulary (contract §7), the one rule for the daemon, the
 * journal, the operator endpoints and the CLI. The contract shows two success forms — `success` = true
 * (graphs, history, sensitivity, state) and `error` = false (provisioning) — and leaves the replies of power,
 * reverse DNS and cancellation "not shown", so either form confirms an action:
 * - executed: `success: true`, or `error: false` without `success: false`;
 * - failed (ApiError with the API's message): `success: false` or `error: true`;
 * - not confirmed (InvalidReplyError with `outcomeUnknown`: the API may have acted): a reply that says neither — no boolean
 *   `success`/`error`, a string, an array. Only booleans count: `"true"` or `1` is not a confirmation.
 * (`{error: true}` is normally raised by the client already; it is handled here too so the rule is whole.)
 */
export function decodeActionResult(reply: unknown, ctx: UpstreamContext): ActionResult {
  if (isObject(reply) && (reply.success === false || reply.error === true)) {
    // `error` may carry the reason as a string; as the boolean flag it is no message.
    const reason = pick(reply, ['message', 'msg', ...(typeof reply.error === 'string' ? ['error'] : []), 'result']);
    throw new ApiError(
      ctx,
      reason || (reply.success === false ? '"success": false without a message' : '"error": true without a message'),
    );
  }
  if (isObject(reply) && (reply.success === true || reply.error === false))
    return { message: pick(reply, ['message', 'msg', 'result', 'status']), raw: reply };
  throw new InvalidReplyError(
    ctx,
    'expected {success: true} or {error: false}: the outcome of the action is not confirmed',
    excerpt(reply),
    { outcomeUnknown: true },
  );
}
