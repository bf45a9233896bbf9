/**
 * The helpers of tolerant reply decoding (decode.ts, decode-servers.ts): a JSON object test, a scalar as
 * trimmed text, the first non-empty of several field spellings, and an excerpt of a reply for an error.
 */

export type Json = Record<string, unknown>;

export const isObject = (value: unknown): value is Json =>
  typeof value === 'object' && value !== null && !Array.isArray(value);

export function text(value: unknown): string {
  if (typeof value === 'string') return value.trim();
  if (typeof value === 'number' || typeof value === 'boolean') return String(value);
  return '';
}

export function pick(record: Json, names: readonly string[]): string {
  for (const name of names) {
    const value = text(record[name]);
    if (value) return value;
  }
  return '';
}

export function excerpt(value: unknown): string {
  const json = JSON.stringify(value) ?? String(value);
  return json.slice(0, 200);
}
