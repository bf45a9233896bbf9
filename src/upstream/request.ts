/**
 * What a caller hands the hosting API's client (client.ts): a request, and what the client reports after each
 * HTTP attempt of it.
 */

/** One finished HTTP attempt, reported to the observer (for `baremetal_api_*` metrics). */
export interface RequestEvent {
  operation: string;
  /** `success` or the UpstreamError's `outcome` */
  outcome: string;
  durationSeconds: number;
}

/** A request: which operation, which path, which body parameters; `read` enables retries. */
export interface UpstreamRequest {
  operation: string;
  path: string;
  body: Record<string, string | undefined>;
  read: boolean;
  /** cancels the request (and its retries): a poll run's deadline, or shutdown */
  signal?: AbortSignal;
  /**
   * a read that waits behind every other read, for a slot and for a budget token: `true` for pictures and
   * reference data (graphs, catalog), which must never delay attack detection; default false
   */
  background?: boolean;
  /**
   * called each time an attempt of the request leaves for the API (it holds its slot and its budget token);
   * until the first call it was only queued. A poll cut at its deadline tells a slow reply from a queued
   * request so.
   */
  onSent?: () => void;
}

/** What a caller of a read may add to it: its cancellation and whether it has been sent (UpstreamRequest). */
export type ReadOptions = Pick<UpstreamRequest, 'signal' | 'onSent'>;

/** Characters application/x-www-form-urlencoded leaves as they are (WHATWG URL, the urlencoded serializer). */
const FORM_SAFE = /^[A-Za-z0-9*._-]*$/;

/**
 * A request's form body, as URLSearchParams writes it (undefined values left out): ids, scales and IPs are
 * written as they are, anything else through URLSearchParams, without one object per request for the common case.
 */
export function formBody(body: Record<string, string | undefined>): string {
  let text = '';
  for (const key of Object.keys(body)) {
    const value = body[key];
    if (value === undefined) continue;
    if (!FORM_SAFE.test(key) || !FORM_SAFE.test(value)) return new URLSearchParams(definedEntries(body)).toString();
    text += text === '' ? `${key}=${value}` : `&${key}=${value}`;
  }
  return text;
}

function definedEntries(body: Record<string, string | undefined>): [string, string][] {
  return Object.entries(body).filter((entry): entry is [string, string] => entry[1] !== undefined);
}
