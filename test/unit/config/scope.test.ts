import { describe, expect, it } from 'vitest';
import { configProblems } from '../../helpers/config-problems.js';
import { parseConfigText } from '../../../src/config/load.js';
import { describeScope, inScope } from '../../../src/config/scope.js';

const env = { BAREMETAL_API_KEY: 'env-key' };
const minimal = 'upstream:\n  base_url: https://api.provider.test\n';
const accounts = (extra: string) =>
  `accounts:\n  - name: a\n    base_url: https://a.provider.test\n    api_key_file: /k\n${extra}  - name: b\n    base_url: https://b.provider.test\n    api_key_file: /k\n`;
const readFile = () => 'file-key-0123456789';

const problems = (text: string) => configProblems(() => parseConfigText(text, env, readFile));

const server = (serverId: string, location: string, hostname: string) => ({ serverId, location, hostname });

describe('servers.include / servers.exclude', () => {
  it('keeps a server matching an include (or any when none) and no exclude; hostname is anchored', () => {
    const { scope } = parseConfigText(
      `${minimal}servers:\n  include: [{location: FRA1}, {hostname: "web-[0-9]+"}]\n  exclude: [{id: "7"}]\n`,
      env,
    ).accounts[0]!;
    const verdicts = [
      server('1', 'FRA1', 'db-1'),
      server('2', 'AMS1', 'web-12'),
      server('3', 'AMS1', 'web-12.example.net'),
      server('4', 'AMS1', 'xweb-1'),
      server('7', 'FRA1', 'web-7'),
    ].map((s) => inScope(scope, s));
    expect(verdicts).toEqual([true, true, false, false, false]);
    expect(describeScope(scope)).toBe('servers matching location FRA1 or hostname web-[0-9]+ except id 7');
    const every = parseConfigText(minimal, env).accounts[0]!.scope;
    expect([inScope(every, server('1', 'X', 'y')), describeScope(every)]).toEqual([true, undefined]);
  });

  it.each([
    // [name, the pattern as YAML single-quoted text gives it, hostnames, the expected verdicts]
    [
      '(?i) makes the match case-insensitive',
      '(?i)WEB-[0-9]+\\.EXAMPLE\\.NET',
      ['web-1.example.net', 'Web-2.Example.Net', 'db-1.example.net'],
      [true, true, false],
    ],
    [
      'a class holding a backslash and a digit is no backreference',
      'web[\\\\1]',
      ['web1', 'web\\', 'web2'],
      [true, true, false],
    ],
    // Exponential under backtracking: 2^31 ways to split the name before failing on the domain.
    [
      'a pattern exponential under backtracking is matched correctly, in linear time',
      '([a-z0-9]+-?)+\\.example\\.net',
      [
        `${'a'.repeat(31)}.other.org`,
        `${'a1-'.repeat(80)}x.other.org`,
        'web-1.example.net',
        `${'a'.repeat(200)}.example.net`,
      ],
      [false, false, true, true],
    ],
  ])('hostname selector: %s', (_name, pattern, hostnames, expected) => {
    const { scope } = parseConfigText(`${minimal}servers:\n  include: [{hostname: '${pattern}'}]\n`, env).accounts[0]!;
    expect(hostnames.map((hostname) => inScope(scope, server('1', 'FRA1', hostname)))).toEqual(expected);
    expect(describeScope(scope)).toBe(`servers matching hostname ${pattern}`);
  });

  it("adds an account's selectors to the top level's", () => {
    const config = parseConfigText(
      `${accounts('    servers: {exclude: [{location: AMS1}]}\n')}servers:\n  exclude: [{id: "9"}]\n`,
      {},
      readFile,
    );
    const [a, b] = config.accounts.map((account) => account.scope);
    const ams = server('5', 'AMS1', 'h');
    const nine = server('9', 'FRA1', 'h');
    expect([inScope(a!, ams), inScope(a!, nine), inScope(b!, ams), inScope(b!, nine)]).toEqual([
      false,
      false,
      true,
      false,
    ]);
  });

  it.each([
    [
      'a bad regular expression names its key',
      `${minimal}servers:\n  exclude: [{id: "1"}, {hostname: "web-[0-9"}]\n`,
      /^servers\.exclude\[1\]\.hostname: not a valid RE2 regular expression: error parsing regexp: missing closing \]/,
    ],
    [
      'lookaround is not RE2',
      `${minimal}servers:\n  include: [{hostname: "(?!db).*"}]\n`,
      /^servers\.include\[0\]\.hostname: not a valid RE2 regular expression: error parsing regexp: invalid or unsupported Perl syntax: `\(\?!`$/,
    ],
    [
      'a backreference is not RE2',
      `${minimal}servers:\n  include: [{hostname: '(web)\\1'}]\n`,
      /^servers\.include\[0\]\.hostname: not a valid RE2 regular expression: error parsing regexp: invalid escape sequence: `\\1`$/,
    ],
    [
      'a group closed early cannot escape the whole-hostname match',
      `${minimal}servers:\n  exclude: [{hostname: "web)|(?:.*"}]\n`,
      /^servers\.exclude\[0\]\.hostname: not a valid RE2 regular expression: error parsing regexp: unexpected \)/,
    ],
    [
      'a nested repetition RE2 refuses',
      `${minimal}servers:\n  include: [{hostname: "(?:a{100}){100}"}]\n`,
      /^servers\.include\[0\]\.hostname: not a valid RE2 regular expression: error parsing regexp: invalid repeat count/,
    ],
    [
      "an account's bad regular expression names the account entry",
      accounts('    servers: {include: [{hostname: "("}]}\n'),
      /^accounts\[0\]\.servers\.include\[0\]\.hostname: not a valid RE2 regular expression: /,
    ],
    [
      'a selector with two keys',
      `${minimal}servers:\n  include: [{id: "1", location: FRA1}]\n`,
      /^servers\.include\[0\]/,
    ],
    ['a selector with an unknown key', `${minimal}servers:\n  exclude: [{name: x}]\n`, /^servers\.exclude\[0\]/],
    ['a collector switch that is not a boolean', `${minimal}collectors:\n  graphs: "no"\n`, /^collectors\.graphs/],
  ])('%s', (_name, text, expected) => {
    const found = problems(text);
    expect(
      found.some((line) => expected.test(line)),
      found.join('\n'),
    ).toBe(true);
  });
});
