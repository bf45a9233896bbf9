/**
 * Tolerant decoding of API replies. The contract leaves server records and the `firewall` value
 * unspecified (§2: "not shown"); the public client reads server records with `OS`, `processor`, `IP`,
 * `memory`, and firewall history as an array of events with at least `id`, `ip`, `raw`. So: known fields
 * are looked up under their likely spellings, a missing one is an empty string, the raw record is kept,
 * and only a reply that cannot be read at all is an InvalidReplyError — for that one call only. One field is
 * strict because a guess would be wrong: a server record's `cancellation` (issue 32) may be absent, null,
 * `immediate` or `end`; anything else makes the record unusable (skipped and counted, as one without an id).
 */
import { createHash } from 'node:crypto';
import validator from 'validator';
import { SCHEDULED_CANCELLATIONS, type ScheduledCancellation } from '../config/api-terms.js';
import { ApiError, InvalidReplyError, type UpstreamContext } from '../errors.js';
import { CLOCK_EVERY, Slices } from '../slices.js';

/** A dedicated server as far as the exporter needs it; every string may be empty. */
export interface ServerRecord {
  serverId: string;
  hostname: string;
  /** the main IP */
  ip: string;
  /** every IP assigned to the server (main IP first), deduplicated */
  ips: string[];
  os: string;
  processor: string;
  memory: string;
  location: string;
  status: string;
  /**
   * the cancellation scheduled for the server (`immediate`, `end`), '' when the record's `cancellation` is
   * null or the record has none (the contract does not show the record; the simulator sends the field)
   */
  cancellation: ScheduledCancellation;
  /** the record as the API sent it */
  raw: Record<string, unknown>;
}

/** One firewall (DDoS) event of a history reply. */
export interface FirewallEvent {
  /** the API's id, or a digest of the record when it has none; deduplication key */
  id: string;
  ip: string;
  raw: string;
  /** every other scalar field the event carried (times, sizes, type), as sent */
  fields: Record<string, string | number | boolean>;
}

type Json = Record<string, unknown>;

const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

function text(value: unknown): string {
  if (typeof value === 'string') return value.trim();
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return '';
}

function pick(record: Json, names: readonly string[]): string {
  for (const name of names) {
    const value = text(record[name]);
    if (value) return value;
  }
  return '';
}

function excerpt(value: unknown): string {
  const json = JSON.stringify(value) ?? String(value);
  return json.slice(0, 200);
}

/** Field spellings seen or likely for each known server field. */
const SERVER_FIELDS = {
  serverId: ['server_id', 'id', 'serverid', 'serverId'],
  hostname: ['hostname', 'name', 'host', 'label'],
  ip: ['ip', 'IP', 'main_ip', 'primary_ip', 'ipaddress', 'ip_address'],
  os: ['os', 'OS', 'operating_system'],
  processor: ['processor', 'cpu', 'CPU'],
  memory: ['memory', 'ram', 'RAM'],
  location: ['location', 'datacenter', 'dc'],
  status: ['status', 'state', 'power_status'],
} as const;
const IP_LIST_FIELDS = ['ips', 'IPs', 'ip_addresses', 'ip_list', 'additional_ips', 'assigned_ips'];

function ipList(record: Json, main: string): string[] {
  const found = new Set<string>();
  if (validator.isIP(main)) found.add(main);
  for (const name of IP_LIST_FIELDS) {
    const value = record[name];
    const items = Array.isArray(value) ? value : typeof value === 'string' ? value.split(/[\s,;]+/) : [];
    for (const item of items) {
      const ip = isObject(item) ? pick(item, ['ip', 'IP', 'address']) : text(item);
      if (validator.isIP(ip)) found.add(ip);
    }
  }
  return [...found];
}

/**
 * The record's `cancellation`: absent or null is none (''); when present it must be `immediate` or `end`
 * exactly, else undefined (the record is unusable: a value we cannot read is not taken for "none").
 */
function cancellationOf(record: Json): ScheduledCancellation | undefined {
  const value = record.cancellation;
  if (value === undefined || value === null) return '';
  return (SCHEDULED_CANCELLATIONS as readonly unknown[]).includes(value) ? (value as ScheduledCancellation) : undefined;
}

/**
 * Decodes one server record; returns a sentence saying why it is unusable (no id, or a `cancellation` that is
 * neither null, `immediate` nor `end`). `fallbackId` is a map key.
 */
function readServerRecord(value: unknown, fallbackId: string): ServerRecord | string {
  if (!isObject(value)) return 'no server record with an id';
  const record = isObject(value.server) ? value.server : value;
  const serverId = pick(record, SERVER_FIELDS.serverId) || fallbackId;
  if (!serverId) return 'no server record with an id';
  const cancellation = cancellationOf(record);
  if (cancellation === undefined)
    return `server ${serverId}: cancellation ${excerpt(record.cancellation)} is not null, "immediate" or "end"`;
  const ip = pick(record, SERVER_FIELDS.ip);
  return {
    serverId,
    hostname: pick(record, SERVER_FIELDS.hostname),
    ip,
    ips: ipList(record, ip),
    os: pick(record, SERVER_FIELDS.os),
    processor: pick(record, SERVER_FIELDS.processor),
    memory: pick(record, SERVER_FIELDS.memory),
    location: pick(record, SERVER_FIELDS.location),
    status: pick(record, SERVER_FIELDS.status),
    cancellation,
    raw: record,
  };
}

/**
 * Decodes one server record; undefined when it is unusable (no usable id, or a `cancellation` other than
 * absent, null, `immediate` or `end`). `fallbackId` is a map key.
 */
export function decodeServerRecord(value: unknown, fallbackId = ''): ServerRecord | undefined {
  const server = readServerRecord(value, fallbackId);
  return typeof server === 'string' ? undefined : server;
}

/**
 * Result of decoding a server list: the servers, and how many records were unusable (no id, a duplicate id, or a
 * `cancellation` that is not null, `immediate` or `end`).
 */
export interface ServerList {
  servers: ServerRecord[];
  skipped: number;
}

/**
 * The records of a list-all reply, not yet decoded: an array of records, an object wrapping one (`servers`,
 * `data`, `result`), or an object keyed by server id (the key is the fallback id). Throws InvalidReplyError
 * for anything else: this is the part of decoding that can fail the call.
 */
export function serverListEntries(reply: unknown, ctx: UpstreamContext): Array<[string, unknown]> {
  let entries: Array<[string, unknown]>;
  if (Array.isArray(reply)) entries = reply.map((r) => ['', r]);
  else if (isObject(reply)) {
    const wrapped = ['servers', 'data', 'result', 'results', 'list'].map((k) => reply[k]).find(Array.isArray);
    if (wrapped) entries = wrapped.map((r) => ['', r]);
    else entries = Object.entries(reply).filter(([k]) => k !== 'success' && k !== 'error');
    if (!wrapped && entries.some(([, v]) => !isObject(v))) {
      throw new InvalidReplyError(ctx, 'server list is neither an array nor a map of records', excerpt(reply));
    }
  } else throw new InvalidReplyError(ctx, 'server list is neither an array nor a map of records', excerpt(reply));
  return entries;
}

/** Collects decoded records: the first of each id is kept, records without an id or repeated are skipped. */
class ServerListBuilder {
  readonly servers: ServerRecord[] = [];
  readonly #seen = new Set<string>();
  skipped = 0;

  add([key, value]: [string, unknown]): void {
    const server = decodeServerRecord(value, key);
    if (!server || this.#seen.has(server.serverId)) this.skipped++;
    else {
      this.#seen.add(server.serverId);
      this.servers.push(server);
    }
  }
}

/** Decodes the list-all reply (see `serverListEntries`) at once. Throws InvalidReplyError. */
export function decodeServerList(reply: unknown, ctx: UpstreamContext): ServerList {
  const list = new ServerListBuilder();
  for (const entry of serverListEntries(reply, ctx)) list.add(entry);
  return { servers: list.servers, skipped: list.skipped };
}

/**
 * Decodes the records of a list-all reply in slices with yields to the event loop (50,000 records take
 * hundreds of milliseconds). Never throws: an unusable record is skipped and counted.
 */
export async function decodeServerEntries(entries: ReadonlyArray<[string, unknown]>): Promise<ServerList> {
  const list = new ServerListBuilder();
  const slices = new Slices();
  for (let i = 0; i < entries.length; i++) {
    list.add(entries[i]!);
    if (i % CLOCK_EVERY === CLOCK_EVERY - 1) await slices.next();
  }
  return { servers: list.servers, skipped: list.skipped };
}

/** Decodes a get-one reply. Throws InvalidReplyError when no usable record is found (see `decodeServerRecord`). */
export function decodeServer(reply: unknown, ctx: UpstreamContext): ServerRecord {
  const server = readServerRecord(Array.isArray(reply) ? reply[0] : reply, '');
  if (typeof server === 'string') throw new InvalidReplyError(ctx, server, excerpt(reply));
  return server;
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
 */
export function decodeFirewallHistory(reply: unknown, ctx: UpstreamContext): FirewallEvent[] {
  if (!isObject(reply) || reply.success === false) {
    throw new InvalidReplyError(ctx, 'expected {success: true, firewall}', excerpt(reply));
  }
  let value = reply.firewall;
  if (typeof value === 'string') {
    if (value.trim() === '') return [];
    try {
      value = JSON.parse(value);
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
  if (data === '' || !validator.isBase64(data))
    throw new InvalidReplyError(ctx, '"base64" is not base64', excerpt(data));
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
