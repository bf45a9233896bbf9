/**
 * The one rule for an API key's text, wherever it comes from (`api_key_file` at load, on reload and when the
 * file changes; `BAREMETAL_API_KEY`; the YAML `api_key`). The key is sent as the `Authorization` header (per
 * the API contract, §4): a key with a line break, a control character or whitespace inside cannot be sent
 * (undici refuses such a header at dispatch) and is never what the provider issued, so it is refused where
 * it is read, and the key in force stays. Leading and trailing whitespace (a trailing LF or CRLF, a BOM) is
 * not part of the key.
 */

/** The key of `text` (trimmed), or the problem with it: a sentence that never contains the key. */
export function parseApiKey(text: string): { key: string; problem?: undefined } | { key?: undefined; problem: string } {
  const key = text.trim();
  if (key === '') return { problem: 'is empty' };
  // One pass, first offending character wins; the position is 1-based within the trimmed key.
  for (let i = 0; i < key.length; i++) {
    const c = key.charCodeAt(i);
    if (c >= 0x21 && c <= 0x7e) continue;
    const at = `at character ${i + 1} of the key`;
    if (c === 0x0a || c === 0x0d) return { problem: `holds a line break ${at} (a key file holds the key on one line)` };
    if (c < 0x20 || c === 0x7f || (c >= 0x80 && c <= 0x9f)) return { problem: `holds a control character ${at}` };
    if (/\s/.test(key[i]!)) return { problem: `holds whitespace ${at}` };
    return { problem: `holds a character outside printable ASCII ${at}` };
  }
  return { key };
}
