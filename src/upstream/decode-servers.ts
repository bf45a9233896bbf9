/**
 * Tolerant decoding of server records (list-all and get-one replies). The contract leaves server records
 * unspecified (§2: "not shown"); the public client reads them with `OS`, `processor`, `IP`, `memory`. So:
 * known fields are looked up under their likely spellings, a missing one is an empty string, the raw record
 * is kept, and only a reply that cannot be read at all is an InvalidReplyError — for that one call only. One
 * field is strict because a guess would be wrong: a server record's `cancellation` (issue 32) may be absent,
 * null, `immediate` or `end`; anything else makes the record unusable (skipped and counted, as one without an
 * id).
 */
import { SCHEDULED_CANCELLATIONS, type ScheduledCancellation } from '../config/api-terms.js';
import { InvalidReplyError, type UpstreamContext } from '../errors.js';
import { CLOCK_EVERY, Slices } from '../slices.js';
import { type Json, excerpt, isObject, pick, text } from './decode-json.js';
import { isIP } from './validators.js';

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
  if (isIP(main)) found.add(main);
  for (const name of IP_LIST_FIELDS) {
    const value = record[name];
    const items = Array.isArray(value) ? value : typeof value === 'string' ? value.split(/[\s,;]+/) : [];
    for (const item of items) {
      const ip = isObject(item) ? pick(item, ['ip', 'IP', 'address']) : text(item);
      if (isIP(ip)) found.add(ip);
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
