/**
 * Alertmanager's API v2 replies, checked where they enter: the alert list (`gettableAlerts`) and a created
 * silence's id. Only the fields the daemon reads are kept; anything else of the shape is ignored, a missing
 * or mistyped field the daemon reads is an AlertmanagerError naming it.
 */
import { AlertmanagerError } from '../errors.js';

/** One alert as Alertmanager holds it. */
export interface AlertmanagerAlert {
  fingerprint: string;
  labels: Readonly<Record<string, string>>;
  /** RFC 3339, as Alertmanager wrote it */
  startsAt: string;
  /** `active`, `suppressed` (silenced or inhibited) or `unprocessed` */
  state: string;
  /** the silences that mute it */
  silencedBy: readonly string[];
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function fail(what: string, detail: string): never {
  throw new AlertmanagerError(`Alertmanager ${what}: reply not of API v2's shape: ${detail}`);
}

function labelsOf(v: unknown, what: string, at: string): Record<string, string> {
  if (!isObject(v)) fail(what, `${at}.labels is not an object`);
  for (const [k, value] of Object.entries(v))
    if (typeof value !== 'string') fail(what, `${at}.labels.${k} is not a string`);
  return v as Record<string, string>;
}

function stringOf(v: unknown, what: string, at: string): string {
  if (typeof v !== 'string') fail(what, `${at} is not a string`);
  return v;
}

/** `GET /api/v2/alerts`: an array of alerts. */
export function decodeAlerts(json: unknown, what: string): AlertmanagerAlert[] {
  if (!Array.isArray(json)) fail(what, 'not an array');
  return json.map((a: unknown, i) => {
    const at = `[${i}]`;
    if (!isObject(a)) fail(what, `${at} is not an object`);
    const status = isObject(a.status) ? a.status : fail(what, `${at}.status is not an object`);
    const silencedBy = Array.isArray(status.silencedBy) ? status.silencedBy : [];
    return {
      fingerprint: stringOf(a.fingerprint, what, `${at}.fingerprint`),
      labels: labelsOf(a.labels, what, at),
      startsAt: stringOf(a.startsAt, what, `${at}.startsAt`),
      state: stringOf(status.state, what, `${at}.status.state`),
      silencedBy: silencedBy.map((s, j) => stringOf(s, what, `${at}.status.silencedBy[${j}]`)),
    };
  });
}

/** One silence as Alertmanager holds it. */
export interface AlertmanagerSilence {
  id: string;
  /** `active`, `pending` or `expired` */
  state: string;
  createdBy: string;
  comment: string;
  /**
   * who last changed it, when Alertmanager says so (`updatedBy`: Alertmanager's v2 API has no such field today;
   * read when present); undefined otherwise
   */
  updatedBy?: string;
}

/** `GET /api/v2/silences`: an array of silences. */
export function decodeSilences(json: unknown, what: string): AlertmanagerSilence[] {
  if (!Array.isArray(json)) fail(what, 'not an array');
  return json.map((s: unknown, i) => {
    const at = `[${i}]`;
    if (!isObject(s)) fail(what, `${at} is not an object`);
    const status = isObject(s.status) ? s.status : fail(what, `${at}.status is not an object`);
    return {
      id: stringOf(s.id, what, `${at}.id`),
      state: stringOf(status.state, what, `${at}.status.state`),
      createdBy: stringOf(s.createdBy, what, `${at}.createdBy`),
      comment: stringOf(s.comment, what, `${at}.comment`),
      ...(typeof s.updatedBy === 'string' && s.updatedBy !== '' ? { updatedBy: s.updatedBy } : {}),
    };
  });
}

/** `POST /api/v2/silences`: `{silenceID}`. */
export function decodeSilenceId(json: unknown, what: string): string {
  if (!isObject(json)) fail(what, 'not an object');
  return stringOf(json.silenceID, what, 'silenceID');
}

/** What `GET /api/v2/status` says that the daemon reads: when this Alertmanager process started. */
export interface AlertmanagerStatus {
  /** ms since epoch: Alertmanager's `uptime` (the time it started; it holds no alert from before then) */
  startedAt: number;
}

/** `GET /api/v2/status`: `{uptime, …}`, `uptime` an RFC 3339 time. */
export function decodeStatus(json: unknown, what: string): AlertmanagerStatus {
  if (!isObject(json)) fail(what, 'not an object');
  const uptime = stringOf(json.uptime, what, 'uptime');
  const startedAt = Date.parse(uptime);
  if (Number.isNaN(startedAt)) fail(what, `uptime is not a time: ${JSON.stringify(uptime.slice(0, 40))}`);
  return { startedAt };
}
