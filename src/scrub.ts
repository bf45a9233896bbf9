/**
 * The one place secrets are scrubbed from text. Every text that comes from the upstream (error messages,
 * reply excerpts, decode errors, the console XML, and the raw text of a JSON reply before it is parsed) and every
 * text that may echo a webhook or operator token passes a Scrubber before it is kept anywhere: logs, errors,
 * journal rows, metrics, HTTP replies.
 *
 * A secret is found however it is spelled (issue 28): in any mix of upper and lower case; each character
 * plain, percent-encoded (`%41`, `%2f`: whichever characters the encoder kept), JSON-escaped (`\u0041`, `\/`,
 * `\"`) or, for a space, `+`; and with line breaks (real ones, or JSON's `\n` and `\r`) between its characters.
 *
 * The same one linear pass also finds every raw JSON text whose strings decode to such a spelling (issue 43):
 * each character of each spelling may itself be JSON-escaped (`\u0025` for the `%` of `%41`, `\u005c` or `\\`
 * for the backslash of `\u0041`, `\u000a` for a line break), in any mix. So a reply's raw text scrubbed once
 * can be parsed by a plain `JSON.parse` (no reviver, V8's fast path): no decoded string or key holds a secret.
 */

/** The marker that replaces a secret. */
export const REDACTED = '[REDACTED]';

/** Removes every known secret from a text; scrub before truncating, so no cut-off prefix survives. */
export type Scrubber = (text: string) => string;

/**
 * A few spellings under which a secret can come back, for tests that look for a leak: plain, JSON-escaped
 * (with and without `\/`), and URL- or form-encoded (upper- and lower-case percent escapes, `+` for spaces).
 * The Scrubber matches more than these (see the module comment).
 */
export function secretForms(secret: string): string[] {
  const json = JSON.stringify(secret).slice(1, -1);
  const url = encodeURIComponent(secret);
  const form = new URLSearchParams({ s: secret }).toString().slice(2);
  const forms = [
    secret,
    json,
    json.replaceAll('/', '\\/'),
    url,
    url.replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase()),
    form,
  ];
  return [...new Set(forms)].filter((f) => f.length > 0).sort((a, b) => b.length - a.length);
}

const escapeRegExp = (text: string) => text.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&');
const hex = (n: number, width: number) => n.toString(16).padStart(width, '0');

/** JSON's two-character escapes: the character → the letter after the backslash. */
const JSON_ESCAPES: Readonly<Record<string, string>> = {
  '"': '"',
  '\\': '\\',
  '/': '/',
  '\b': 'b',
  '\f': 'f',
  '\n': 'n',
  '\r': 'r',
  '\t': 't',
};

/** `text` in each case (one, two or three variants), when a case keeps its length. */
const caseVariants = (text: string) =>
  [...new Set([text, text.toLowerCase(), text.toUpperCase()])].filter((v) => v.length === text.length);

/** Regular-expression alternatives: one stays bare, several are grouped. */
const anyOf = (alternatives: string[]) =>
  alternatives.length === 1 ? alternatives[0]! : `(?:${alternatives.join('|')})`;

/**
 * How one UTF-16 code unit of a decoded text can stand in raw JSON text, in each case: itself (`plain`, never
 * a backslash), or after a backslash (`escaped`: `u0041`, `/`, `n`), each a regular expression. Kept apart so
 * that the alternatives starting with a backslash are grouped behind one. A backslash stands for itself
 * (`escaped` empty) only when `alone`: a secret's own backslash, in text that is not JSON. The backslash of
 * an escape spelling (`\u0041`, `\/`, `\n`) written as it is reads as that escape's character, which is
 * matched as such.
 */
function rawUnit(unit: string, alone = false): { plain: string[]; escaped: string[] } {
  const plain = new Set<string>();
  const escaped = new Set<string>();
  for (const variant of caseVariants(unit)) {
    if (variant === '\\') {
      if (alone) escaped.add('');
    } else plain.add(escapeRegExp(variant));
    escaped.add(`u${hex(variant.charCodeAt(0), 4)}`);
    const letter = JSON_ESCAPES[variant];
    if (letter !== undefined) escaped.add(escapeRegExp(letter));
  }
  return { plain: [...plain], escaped: [...escaped] };
}

/** The pattern of every raw text that decodes (as a JSON string's content) to `text`, or is `text`. */
function lifted(text: string): string {
  return text
    .split('')
    .map((unit) => {
      const { plain, escaped } = rawUnit(unit);
      return anyOf([...plain, `\\\\${anyOf(escaped)}`]);
    })
    .join('');
}

/** `prefix` followed by any of `rests` ('' for nothing). */
const followedBy = (prefix: string, rests: Set<string>) => {
  const list = [...rests];
  return list.length === 1 ? prefix + list[0] : `${prefix}(?:${list.join('|')})`;
};

/** Adds `rest` to what follows `key` in `map`. */
const addTo = (map: Map<string, Set<string>>, key: string, rest: string) => {
  const rests = map.get(key) ?? new Set<string>();
  rests.add(rest);
  map.set(key, rests);
};

/**
 * The pattern of every raw text that decodes to one of `texts`, or is one, each followed by its own pattern
 * (`[text, after]`). The alternatives are grouped by their first raw code unit — and those starting with a
 * backslash behind one, their `\u00XX` escapes behind one `u00` — so that V8 rejects a position after a
 * character or two instead of trying every alternative (a flat list made the scrub of a 2 MiB reply 3–6 ×
 * slower; one dense with JSON escapes, more).
 */
function liftedAll(texts: Array<[text: string, after: string]>): string {
  const plain = new Map<string, Set<string>>();
  const escaped = new Map<string, Set<string>>();
  const unicode = new Map<string, Set<string>>();
  for (const [text, after] of texts) {
    const first = rawUnit(text[0]!, text === '\\');
    const rest = lifted(text.slice(1)) + after;
    for (const p of first.plain) addTo(plain, p, rest);
    for (const e of first.escaped)
      if (e.startsWith('u00')) addTo(unicode, e.slice(3), rest);
      else addTo(escaped, e, rest);
  }
  const afterBackslash = [...escaped].map(([e, rests]) => followedBy(e, rests));
  if (unicode.size > 0) afterBackslash.push(`u00${anyOf([...unicode].map(([e, rests]) => followedBy(e, rests)))}`);
  return anyOf([...[...plain].map(([p, rests]) => followedBy(p, rests)), `\\\\${anyOf(afterBackslash)}`]);
}

/**
 * Every spelling of one character (one code point) in a decoded text, as literal texts: each case variant
 * plain, percent-encoded (its UTF-8 bytes) and JSON-escaped (`\u0041`, a surrogate pair outside the BMP), and
 * JSON's or a form's own escapes of it (`\/`, `\"`, `\\`, `+` for a space).
 */
function characterSpellings(char: string): string[] {
  const spellings = new Set<string>();
  // Every case variant, even one of another length ('ß' → 'SS'), unlike a code unit's (rawUnit).
  for (const variant of new Set([char, char.toLowerCase(), char.toUpperCase()])) {
    spellings.add(variant);
    spellings.add([...Buffer.from(variant, 'utf8')].map((byte) => `%${hex(byte, 2)}`).join(''));
    spellings.add(Array.from({ length: variant.length }, (_, i) => `\\u${hex(variant.charCodeAt(i), 4)}`).join(''));
  }
  if (char === '/' || char === '"' || char === '\\') spellings.add(`\\${char}`);
  if (char === ' ') spellings.add('+');
  return [...spellings];
}

/** Line breaks allowed between two characters of a secret in a decoded text: real ones and JSON's escapes. */
const BREAKS = ['\r', '\n', '\\r', '\\n'];

/**
 * The pattern of every spelling of `secret` (see the module comment): in a decoded text, and in raw JSON text
 * whose strings decode to one — each decoded spelling lifted, character by character, to its raw spellings.
 */
function secretPattern(secret: string): string {
  return [...secret].map((char) => characterPattern(char)).join(BREAK_PATTERN);
}

/** Every spelling of one character, followed by `after`, as a pattern. */
const characterPattern = (char: string, after = '') =>
  liftedAll(characterSpellings(char).map((spelling): [string, string] => [spelling, after]));

/** Line breaks between two characters, as a pattern. */
const BREAK_PATTERN = `${liftedAll(BREAKS.map((b): [string, string] => [b, '']))}*`;

/** What the raw spelling of `char` may begin with: its case variants, `%`, or a backslash (regular expressions). */
function firstRawUnits(char: string): string[] {
  const units = new Set<string>();
  for (const spelling of characterSpellings(char)) {
    const { plain, escaped } = rawUnit(spelling[0]!);
    for (const p of plain) units.add(p);
    if (escaped.length > 0) units.add('\\\\');
  }
  return [...units];
}

/**
 * Where a match of one of `secrets` may start: a spelling of a secret's first character, line breaks, then
 * what a spelling of its second character begins with; the secrets grouped by their first character, behind a
 * lookahead for the first raw code unit of any of them when there are many. Most positions, and most
 * backslashes of a reply dense with JSON escapes, fail that lookahead after a character or two. Under 1 KB a
 * first character: the 20 KB V8 optimizes hold the keys, tokens and passwords of many accounts.
 */
/** How many first characters make startsPattern put its lookahead first. */
const GATED_FROM = 4;

function startsPattern(secrets: string[]): string {
  const seconds = new Map<string, Set<string>>();
  for (const secret of secrets) {
    const [first, second] = [...secret];
    const group = seconds.get(characterPattern(first!)) ?? new Set<string>();
    for (const unit of second === undefined ? [''] : firstRawUnits(second)) group.add(unit);
    seconds.set(characterPattern(first!), group);
  }
  const starts = [...seconds].map(([first, next]) =>
    next.has('') ? first : `${first}${BREAK_PATTERN}${anyOf([...next])}`,
  );
  // The lookahead pays for itself with many first characters (18: a third of the time without it), not with a
  // few (3: a fifth more), where V8 tells the alternatives apart by their first character as fast.
  return starts.length > GATED_FROM ? `(?=${firstUnitGate(secrets)})${anyOf(starts)}` : anyOf(starts);
}

/**
 * The first raw code unit of a spelling of any secret's first character, and after a backslash the escape it
 * begins (`u0061`, `u0025`, `/`), as a pattern for the lookahead of startsPattern.
 */
function firstUnitGate(secrets: string[]): string {
  const plain = new Set<string>();
  const escaped = new Set<string>();
  const unicode = new Set<string>();
  for (const secret of secrets)
    for (const spelling of characterSpellings([...secret][0]!)) {
      const first = rawUnit(spelling[0]!, spelling === '\\');
      for (const p of first.plain) plain.add(p);
      for (const e of first.escaped)
        if (e.startsWith('u00')) unicode.add(e.slice(3));
        else escaped.add(e);
    }
  // A secret starting with a backslash: a backslash alone may begin it.
  if (escaped.has('')) return anyOf([...plain, '\\\\']);
  const afterBackslash = [...escaped, ...(unicode.size > 0 ? [`u00${anyOf([...unicode])}`] : [])];
  return anyOf([...plain, `\\\\${anyOf(afterBackslash)}`]);
}

/**
 * Builds a Scrubber for `secrets` (empty strings are ignored). Each match, in whatever spelling, becomes
 * REDACTED. One pass over the text: a small pattern finds where a secret may start (startsPattern), and only
 * there each secret's whole pattern is tried, longest secret first —
 * the leftmost match wins, as with one alternation of all of them. V8 stops optimizing a regular expression of
 * more than 20 KB, which the lifted spellings of two secrets exceed: one pattern of them all made the scrub of
 * a 2 MiB reply dense with JSON escapes four times slower. No pattern has nested repetition: linear.
 */
export function createScrubber(secrets: readonly string[]): Scrubber {
  const unique = [...new Set(secrets.filter((s) => s.length > 0))].sort((a, b) => b.length - a.length);
  if (unique.length === 0) return (text) => text;
  const starts = new RegExp(startsPattern(unique), 'gi');
  // Longest first: a longer secret is not half-replaced by a shorter one it contains.
  const wholes = unique.map((secret) => new RegExp(secretPattern(secret), 'iy'));
  const matchAt = (text: string, at: number): number => {
    for (const whole of wholes) {
      whole.lastIndex = at;
      if (whole.test(text)) return whole.lastIndex;
    }
    return -1;
  };
  return (text) => {
    let out = '';
    let kept = 0;
    starts.lastIndex = 0;
    for (let found = starts.exec(text); found !== null; found = starts.exec(text)) {
      const end = matchAt(text, found.index);
      if (end < 0) {
        starts.lastIndex = found.index + 1;
        continue;
      }
      out += text.slice(kept, found.index) + REDACTED;
      kept = end;
      starts.lastIndex = end;
    }
    return kept === 0 ? text : out + text.slice(kept);
  };
}

/** Scrubs, then cuts to `max` characters (an excerpt for an error message). */
export function scrubbedExcerpt(scrub: Scrubber, text: string, max: number): string {
  return scrub(text).slice(0, max);
}
