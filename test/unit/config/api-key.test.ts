/** The one rule for an API key's text (config/api-key.ts): what is refused, what is kept, and that no message holds the key. */
import { describe, expect, it } from 'vitest';
import { parseApiKey } from '../../../src/config/api-key.js';
import { buildConfig } from '../../../src/config/load.js';
import { ConfigError } from '../../../src/errors.js';

const KEY = 'sim-key-000000000001';

describe('parseApiKey', () => {
  it.each([
    { name: 'a bare key', text: KEY },
    { name: 'a trailing newline', text: `${KEY}\n` },
    { name: 'a trailing CRLF', text: `${KEY}\r\n` },
    { name: 'surrounding spaces and a BOM', text: `\uFEFF  ${KEY}  \n` },
  ])('keeps $name', ({ text }) => {
    expect(parseApiKey(text)).toEqual({ key: KEY });
  });

  it.each([
    { name: 'an empty file', text: '\n', problem: 'is empty' },
    { name: 'a second line', text: `${KEY}\nsecond-line\n`, problem: 'holds a line break at character 21 of the key' },
    { name: 'a CR inside', text: `${KEY}\rx`, problem: 'holds a line break at character 21' },
    { name: 'a NUL', text: `${KEY}\u0000x`, problem: 'holds a control character at character 21' },
    { name: 'a tab inside', text: `sim\tkey`, problem: 'holds a control character at character 4' },
    { name: 'a space inside', text: 'sim key', problem: 'holds whitespace at character 4' },
    { name: 'a no-break space inside', text: 'sim\u00a0key', problem: 'holds whitespace at character 4' },
    { name: 'a DEL', text: 'sim\u007fkey', problem: 'holds a control character at character 4' },
    {
      name: 'a non-ASCII letter',
      text: 'sïm-key',
      problem: 'holds a character outside printable ASCII at character 2',
    },
  ])('refuses $name, without the key in the problem', ({ text, problem }) => {
    const result = parseApiKey(text);
    expect(result.key).toBeUndefined();
    expect(result.problem).toContain(problem);
    expect(result.problem).not.toContain('sim');
    expect(result.problem).not.toContain('second-line');
  });
});

describe('a key that cannot be one, at load', () => {
  const base = { upstream: { base_url: 'http://127.0.0.1:9' } };
  const problems = (run: () => unknown) => {
    try {
      run();
    } catch (error) {
      if (error instanceof ConfigError) return error.message;
      throw error;
    }
    return '';
  };

  it.each([
    {
      name: 'the key file',
      raw: { upstream: { ...base.upstream, api_key_file: '/run/secrets/key' } },
      env: {},
      line: 'upstream.api_key_file: file /run/secrets/key holds a line break at character 21 of the key',
    },
    {
      name: 'BAREMETAL_API_KEY',
      raw: base,
      env: { BAREMETAL_API_KEY: `${KEY}\nsecond-line` },
      line: 'upstream.api_key: the environment variable BAREMETAL_API_KEY holds a line break at character 21',
    },
    {
      name: 'the YAML key',
      raw: { upstream: { ...base.upstream, api_key: `${KEY}\nsecond-line` } },
      env: {},
      line: 'upstream.api_key: the key holds a line break at character 21',
    },
  ])('$name: one line naming the key and the problem, never the key', ({ raw, env, line }) => {
    const message = problems(() => buildConfig(raw, env, () => `${KEY}\nsecond-line\n`));
    expect(message).toContain(line);
    expect(message).not.toContain(KEY);
    expect(message).not.toContain('second-line');
  });
});
