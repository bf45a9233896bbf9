import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../src/config/load.js';
import { matchesAll, parseMatcher } from '../../../src/config/matchers.js';
import { configProblems } from '../../helpers/config-problems.js';

const env = { BAREMETAL_API_KEY: 'env-key' };
const base = 'upstream:\n  base_url: https://api.provider.test\nremediation:\n  alertmanager:\n';
const files: Record<string, string> = {
  '/token': 'am-token-0123456789\n',
  '/password': 'secret-password\n',
  '/ca.pem': 'CA PEM',
};
const readFile = (path: string) => {
  if (files[path] === undefined) throw Object.assign(new Error('no such file'), { code: 'ENOENT' });
  return files[path];
};
const load = (block: string) => parseConfigText(`${base}${block}`, env, readFile).remediation.alertmanager;
const problems = (block: string) => configProblems(() => parseConfigText(`${base}${block}`, env, readFile));

describe('remediation.alertmanager', () => {
  it('is absent unless configured: nothing calls Alertmanager', () => {
    expect(
      parseConfigText('upstream:\n  base_url: https://api.provider.test\n', env).remediation.alertmanager,
    ).toBeUndefined();
  });

  it('reads the URL, defaults and the bearer credentials as Prometheus writes them', () => {
    expect(
      load(
        '    url: http://127.0.0.1:9093/am/\n    http_config:\n      authorization:\n        credentials_file: /token\n      tls_config:\n        ca_file: /ca.pem\n',
      ),
    ).toEqual({
      url: 'http://127.0.0.1:9093/am',
      timeoutMs: 10_000,
      resendIntervalMs: 60_000,
      maxResponseBytes: 8 * 1024 * 1024,
      silenceWhileHandled: true,
      authorization: { type: 'Bearer', credentials: 'am-token-0123456789' },
      tls: { ca: 'CA PEM', insecureSkipVerify: false },
    });
  });

  it('reads basic auth with its password file', () => {
    expect(
      load(
        '    url: https://am.example\n    timeout: 3s\n    http_config:\n      basic_auth:\n        username: bmx\n        password_file: /password\n',
      ),
    ).toMatchObject({ timeoutMs: 3000, basicAuth: { username: 'bmx', password: 'secret-password' } });
  });

  it.each([
    ['not a URL', '    url: nope\n', 'remediation.alertmanager.url: not a URL'],
    ['another scheme', '    url: ftp://am\n', 'remediation.alertmanager.url: must be http:// or https:// (got ftp:)'],
    [
      'credentials in the URL',
      '    url: http://u:p@am\n',
      'remediation.alertmanager.url: credentials go in http_config (basic_auth, authorization), not in the URL',
    ],
    [
      'both kinds of auth',
      '    url: http://am\n    http_config:\n      authorization:\n        credentials_file: /token\n      basic_auth:\n        username: u\n        password_file: /password\n',
      'remediation.alertmanager.http_config: give at most one of authorization and basic_auth',
    ],
    [
      'an unreadable credentials file',
      '    url: http://am\n    http_config:\n      authorization:\n        credentials_file: /missing\n',
      'remediation.alertmanager.http_config.authorization.credentials_file: cannot read /missing',
    ],
    [
      'a certificate without its key',
      '    url: http://am\n    http_config:\n      tls_config:\n        cert_file: /ca.pem\n',
      'remediation.alertmanager.http_config.tls_config: give cert_file and key_file together',
    ],
  ])('refuses %s, naming the key', (_name, block, line) => {
    expect(problems(block).join('\n')).toContain(line);
  });
});

describe('matchers', () => {
  it.each([
    ['alertname = "DatacenterOutage"', { name: 'alertname', type: '=', value: 'DatacenterOutage' }],
    ['severity=~"critical|page"', { name: 'severity', type: '=~', value: 'critical|page' }],
    ['env != prod', { name: 'env', type: '!=', value: 'prod' }],
    ['dc!~"fra.*"', { name: 'dc', type: '!~', value: 'fra.*' }],
  ])('parses %s', (text, matcher) => {
    expect(parseMatcher(text)).toEqual(matcher);
  });

  it.each([
    ['no operator', 'alertname DatacenterOutage', 'must be `label op value`'],
    ['a bad label name', '1abc="x"', 'must be `label op value`'],
    ['an unquoted comma', 'a=b,c', 'must be double-quoted'],
    ['an invalid regex', 'a=~"("', 'the regular expression "("'],
  ])('refuses %s', (_name, text, problem) => {
    expect(parseMatcher(text)).toContain(problem);
  });

  it('matches every matcher, regexes anchored, a missing label as empty', () => {
    const m = ['alertname="Outage"', 'severity=~"crit.*"', 'dc!="fra1"'].map((t) => parseMatcher(t)) as never[];
    expect(matchesAll(m, { alertname: 'Outage', severity: 'critical' })).toBe(true);
    expect(matchesAll(m, { alertname: 'Outage', severity: 'critical', dc: 'fra1' })).toBe(false);
    // Anchored: `crit.*` does not match `xcritical`.
    expect(matchesAll(m, { alertname: 'Outage', severity: 'xcritical' })).toBe(false);
    expect(matchesAll([parseMatcher('dc=""') as never], {})).toBe(true);
  });
});

describe('remediation.safety.block_while_firing', () => {
  const gate = (lines: string) =>
    `upstream:\n  base_url: https://api.provider.test\nremediation:\n  safety:\n    block_while_firing:\n${lines}`;

  it('is parsed into matchers, and needs remediation.alertmanager', () => {
    const text = `${gate('      - alertname = "DatacenterOutage"\n')}  alertmanager:\n    url: http://127.0.0.1:9093\n`;
    expect(parseConfigText(text, env, readFile).remediation.safety.blockWhileFiring).toEqual([
      { name: 'alertname', type: '=', value: 'DatacenterOutage' },
    ]);
    expect(configProblems(() => parseConfigText(gate('      - alertname = "X"\n'), env)).join('\n')).toContain(
      'remediation.safety.block_while_firing: needs remediation.alertmanager (the gate reads its active alerts)',
    );
  });

  it('refuses a matcher that is none, naming its position', () => {
    const text = `${gate('      - alertname = "X"\n      - severity critical\n')}  alertmanager:\n    url: http://am\n`;
    expect(configProblems(() => parseConfigText(text, env, readFile)).join('\n')).toContain(
      'remediation.safety.block_while_firing[1]: must be `label op value`',
    );
  });
});

describe('a rule’s verify_within', () => {
  const rules = (action: string, extra = '') =>
    `upstream:\n  base_url: https://api.provider.test\nremediation:\n  rules:\n    - alertname: A\n      action: ${action}\n      verify_within: 10m\n${extra}`;

  it('is a Prometheus duration on a power rule, absent by default', () => {
    expect(parseConfigText(rules('powercycle'), env).remediation.rules[0]?.verifyWithinMs).toBe(600_000);
    const plain =
      'upstream:\n  base_url: https://api.provider.test\nremediation:\n  rules:\n    - alertname: A\n      action: poweron\n';
    expect(parseConfigText(plain, env).remediation.rules[0]).not.toHaveProperty('verifyWithinMs');
  });

  it('is accepted on firewall rules too (the attack data is their second signal)', () => {
    expect(parseConfigText(rules('firewall_state'), env).remediation.rules[0]?.verifyWithinMs).toBe(600_000);
    const sensitivity = parseConfigText(rules('firewall_sensitivity', '      sensitivity: high\n'), env);
    expect(sensitivity.remediation.rules[0]?.verifyWithinMs).toBe(600_000);
  });
});

describe('a rule’s steps (an escalation ladder)', () => {
  const text = (rule: string) =>
    `upstream:\n  base_url: https://api.provider.test\nremediation:\n  rules:\n    - alertname: A\n${rule}`;
  const steps =
    '      steps:\n        - { action: powercycle, verify_within: 10m }\n        - { action: powercycle, verify_within: 20m, require_approval: true }\n';

  it('is normalized: the first step on the rule, each later cooldown the previous verify_within', () => {
    expect(parseConfigText(text(steps), env).remediation.rules[0]).toMatchObject({
      action: 'powercycle',
      verifyWithinMs: 600_000,
      cooldownMs: 1_800_000,
      requireApproval: false,
      steps: [
        { action: 'powercycle', verifyWithinMs: 600_000, requireApproval: false, cooldownMs: 1_800_000 },
        { action: 'powercycle', verifyWithinMs: 1_200_000, requireApproval: true, cooldownMs: 600_000 },
      ],
    });
  });

  it.each([
    [
      'both action and steps',
      `      action: powercycle\n${steps}`,
      'remediation.rules[0]: give exactly one of action and steps',
    ],
    ['neither', '      matchers: {}\n', 'remediation.rules[0]: give exactly one of action and steps'],
    [
      'verify_within beside steps',
      `${steps}      verify_within: 5m\n`,
      'remediation.rules[0].verify_within: a ladder sets it per step',
    ],
  ])('refuses %s', (_name, rule, problem) => {
    expect(configProblems(() => parseConfigText(text(rule), env)).join('\n')).toContain(problem);
  });
});
