import { describe, expect, it } from 'vitest';
import { configProblems } from '../../helpers/config-problems.js';
import { buildConfig } from '../../../src/config/load.js';
import { closestKey, editDistance } from '../../../src/config/closest-key.js';
import { parseConfigSource } from '../../../src/config/positions.js';

const env = { BAREMETAL_API_KEY: 'env-key' };
const upstream = 'upstream:\n  base_url: https://api.provider.test\n';
const noFile = () => {
  throw Object.assign(new Error('x'), { code: 'ENOENT' });
};

/** The problems of `text` read from config.yml, as check-config prints them. */
const problemsOf = (text: string, environment: Record<string, string> = env) =>
  configProblems(() => {
    const { value, source } = parseConfigSource('config.yml', text);
    return buildConfig(value, environment, noFile, source);
  });

describe('config problems name the file, line and column', () => {
  it.each([
    {
      name: 'a bad value: the key in front of it',
      text: `${upstream}  timeout: soon\n`,
      lines: ['config.yml:3:3: upstream.timeout: must be a duration such as "10s" (got "soon")'],
    },
    {
      name: 'an enum in a list item',
      text: `${upstream}remediation:\n  rules:\n    - alertname: A\n      action: reboot\n`,
      lines: [
        'config.yml:6:7: remediation.rules[0].action: must be one of powercycle, poweron, poweroff, firewall_state, firewall_sensitivity',
      ],
    },
    {
      name: 'an unknown key: the key itself',
      text: `${upstream}remediation:\n  dry_run: false\n  colour: red\n`,
      lines: ['config.yml:5:3: remediation.colour: unknown key'],
    },
    {
      name: 'a key missing from a list item: the item',
      text: `${upstream}remediation:\n  rules:\n    - { alertname: A, action: powercycle }\n    - alertname: B\n      action: firewall_sensitivity\n`,
      lines: ['config.yml:6:7: remediation.rules[1].sensitivity: required for action firewall_sensitivity'],
    },
    {
      name: 'a key in a flow mapping',
      text: 'upstream: { base_url: "https://api.provider.test", timeout: never }\n',
      lines: ['config.yml:1:52: upstream.timeout: must be a duration such as "10s" (got "never")'],
    },
    {
      name: 'a file read for a key: the key naming the file',
      text: 'upstream:\n  base_url: https://api.provider.test\n  api_key_file: /nope\n',
      environment: {},
      lines: ['config.yml:3:3: upstream.api_key_file: cannot read /nope (ENOENT)'],
    },
    {
      name: 'a key the file does not have (no api key at all): no position',
      text: upstream,
      environment: {},
      linePattern: /^upstream\.api_key/,
    },
  ])('$name', ({ text, environment, lines, linePattern }) => {
    const found = problemsOf(text, environment ?? env);
    if (lines) expect(found).toEqual(lines);
    if (linePattern) expect(found).toEqual([expect.stringMatching(linePattern)]);
  });

  it('names the line and column of a YAML syntax error', () => {
    expect(configProblems(() => parseConfigSource('config.yml', 'upstream:\n  base_url: [\n'))).toEqual([
      expect.stringMatching(/^config\.yml:\d+:\d+: \(yaml\): /),
    ]);
  });

  it('gives the value yaml.parse gives', () => {
    expect(parseConfigSource('c.yml', 'a: &x [1, 2]\nb: *x\n').value).toEqual({ a: [1, 2], b: [1, 2] });
    expect(parseConfigSource('c.yml', '').value).toBeNull();
  });
});

describe('an unknown key', () => {
  it.each([
    {
      name: 'a typo: the known key it is closest to',
      text: `${upstream}remediation:\n  rules:\n    - { alertname: A, action: powercycle, requre_approval: true }\n`,
      line: 'config.yml:5:43: remediation.rules[0].requre_approval: unknown key; did you mean require_approval?',
    },
    {
      name: 'a top-level typo',
      text: `${upstream}remediaton: {}\n`,
      line: 'config.yml:3:1: remediaton: unknown key; did you mean remediation?',
    },
    {
      name: 'nothing close: no guess',
      text: `${upstream}  colour: red\n`,
      line: 'config.yml:3:3: upstream.colour: unknown key',
    },
  ])('$name', ({ text, line }) => {
    expect(problemsOf(text)).toEqual([line]);
  });

  it.each([
    ['requre_approval', ['require_approval', 'require_owned_ip'], 'require_approval'],
    ['dryrun', ['dry_run', 'rules'], 'dry_run'],
    ['colour', ['hold', 'action', 'cooldown'], undefined],
    ['ab', ['cd'], undefined],
    ['Dry_Run', ['dry_run'], 'dry_run'],
  ])('closestKey(%j) → %j', (key, known, expected) => {
    expect(closestKey(key, known)).toBe(expected);
  });

  it.each([
    ['', 'abc', 3],
    ['kitten', 'sitting', 3],
    ['same', 'same', 0],
  ])('editDistance(%j, %j) = %i', (a, b, expected) => {
    expect(editDistance(a, b)).toBe(expected);
  });
});

describe('list items', () => {
  it.each([
    {
      name: 'named [N], from 0, wherever the document has a list',
      text: `${upstream}remediation:\n  auth:\n    principals:\n      - { name: a, bearer_token_file: /t, roles: [admin] }\n`,
      lines: [
        'config.yml:6:51: remediation.auth.principals[0].roles[0]: must be one of webhook, operator, reader',
        'config.yml:6:20: remediation.auth.principals[0].bearer_token_file: cannot read /t (ENOENT)',
      ],
    },
    {
      name: 'a map key that looks like a number stays dotted',
      text: `${upstream}schedules: { "7": "* * * * *" }\n`,
      lines: ['config.yml:3:14: schedules.7: unknown key'],
    },
  ])('$name', ({ text, lines }) => {
    expect(problemsOf(text)).toEqual(lines);
  });
});
