import { describe, expect, it } from 'vitest';
import { createScrubber, REDACTED, scrubbedExcerpt, secretForms } from '../../src/scrub.js';

const KEY = 'sk/live+key=0123"456';

describe('scrubber', () => {
  const scrub = createScrubber([KEY, 'bearer-token-0123456789']);

  it.each([
    ['plain', `key ${KEY} end`],
    ['JSON-escaped', `key ${JSON.stringify(KEY).slice(1, -1)} end`],
    ['JSON-escaped with \\/ (PHP)', `key ${JSON.stringify(KEY).slice(1, -1).replaceAll('/', '\\/')} end`],
    ['URL-encoded (upper-case escapes)', `key ${encodeURIComponent(KEY)} end`],
    [
      'URL-encoded (lower-case escapes)',
      `key ${encodeURIComponent(KEY).replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase())} end`,
    ],
    ['form-encoded', `key ${new URLSearchParams({ k: KEY }).toString().slice(2)} end`],
    ['twice in one text', `${KEY} and ${KEY}`],
    [
      'JSON \\u escapes (every character)',
      `key ${[...KEY].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('')} end`,
    ],
    [
      'JSON \\u escapes with upper-case hex',
      `key ${[...KEY].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0').toUpperCase()}`).join('')} end`,
    ],
    ['percent-encoded, keeping "/"', `key ${encodeURIComponent(KEY).replaceAll('%2F', '/')} end`],
    ['percent-encoded, every character', `key ${[...KEY].map((c) => `%${c.charCodeAt(0).toString(16)}`).join('')} end`],
    ['upper-cased', `key ${KEY.toUpperCase()} end`],
    ['split by a line break', `key ${KEY.slice(0, 7)}\n${KEY.slice(7)} end`],
    ['split by an escaped line break (JSON)', `key ${KEY.slice(0, 7)}\\r\\n${KEY.slice(7)} end`],
    ['a second secret (a token)', 'Bearer bearer-token-0123456789'],
  ])('removes the %s spelling', (_name, text) => {
    const out = scrub(text);
    expect(out).toContain(REDACTED);
    for (const form of secretForms(KEY)) expect(out).not.toContain(form);
    expect(out).not.toContain('bearer-token-0123456789');
    expect(out).toMatch(/^(key \[REDACTED\] end|\[REDACTED\] and \[REDACTED\]|Bearer \[REDACTED\])$/);
  });

  it('leaves text without a secret unchanged', () => {
    expect(scrub('nothing to see: sk/live')).toBe('nothing to see: sk/live');
  });

  it('scrubs before it truncates, so no prefix of the key survives the cut', () => {
    const text = `${'x'.repeat(195)}${KEY}`;
    const cut = scrubbedExcerpt(scrub, text, 200);
    expect(cut).toBe(`${'x'.repeat(195)}${REDACTED.slice(0, 5)}`);
    expect(cut).not.toContain(KEY.slice(0, 5));
  });

  // The scrubber looks for where a secret's first two characters are spelled, then tries each secret there,
  // longest first (issue 43): what one alternation of all of them would replace.
  it.each([
    {
      name: 'a longer secret holding a shorter one',
      secrets: ['abc', 'abcdef'],
      text: 'x abcdef y',
      out: `x ${REDACTED} y`,
    },
    { name: 'a one-character secret', secrets: ['Q'], text: 'aqb', out: `a${REDACTED}b` },
    { name: 'a secret twice, back to back', secrets: ['abc'], text: 'abcABC', out: `${REDACTED}${REDACTED}` },
    { name: 'a start that is no match, then a match', secrets: ['abc'], text: 'ab abx abc', out: `ab abx ${REDACTED}` },
    { name: 'a secret with a backslash, as it is', secrets: ['ab\\cd'], text: 'x ab\\cd y', out: `x ${REDACTED} y` },
    { name: 'a secret with a backslash, in JSON', secrets: ['ab\\cd'], text: '"ab\\\\cd"', out: `"${REDACTED}"` },
    {
      name: 'a secret upper-cased to another length (ß → SS)',
      secrets: ['straße-0'],
      text: 'STRASSE-0',
      out: REDACTED,
    },
    {
      name: 'two secrets starting alike',
      secrets: ['abc1', 'abd2'],
      text: 'abd2 abc1',
      out: `${REDACTED} ${REDACTED}`,
    },
    {
      name: 'a secret whose first characters are escaped, in JSON',
      secrets: ['abc'],
      text: '"\\u0061\\u0062c"',
      out: `"${REDACTED}"`,
    },
  ])('replaces $name', ({ secrets, text, out }) => {
    expect(createScrubber(secrets)(text)).toBe(out);
  });

  // With many first characters the scrubber puts a lookahead before its start pattern: the same matches.
  const MANY = ['alpha-0123', 'Bravo/4567', 'charlie+89', '%delta-key', 'echo"token', '\\foxtrot-1', 'golf hotel'];
  const unicode = (text: string) =>
    [...text].map((c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`).join('');
  const spellingsOf = (secret: string) => [
    { spelling: 'plain', text: secret },
    { spelling: 'upper-cased', text: secret.toUpperCase() },
    { spelling: 'JSON-escaped', text: JSON.stringify(secret).slice(1, -1) },
    { spelling: '\\u escapes', text: unicode(secret) },
    { spelling: 'URL-encoded', text: encodeURIComponent(secret) },
    { spelling: 'JSON-escaped URL-encoding', text: encodeURIComponent(secret).replaceAll('%', '\\u0025') },
  ];
  const manyCases = [MANY, MANY.filter((s) => !s.startsWith('\\'))].flatMap((secrets) =>
    secrets.flatMap((secret) => spellingsOf(secret).map((c) => ({ ...c, secret, secrets }))),
  );
  it.each(manyCases)('with $secrets.length secrets, removes $secret ($spelling)', ({ secrets, text }) => {
    expect(createScrubber(secrets)(`"x ${text} y"`)).toBe(`"x ${REDACTED} y"`);
  });

  it('ignores empty secrets', () => {
    expect(createScrubber(['', ''])('text')).toBe('text');
  });
});
