/**
 * Durations bounded as Prometheus bounds them, and the keys with a ceiling of their own (issue 49): check-config
 * (and a reload, which builds the config the same way) refuses `approval_timeout: 280000y` — which passed and
 * then made every decision answer 500 — as well as `5000y`, `99999999h` and a year-long `verify_within`, each
 * as one line naming the file, line and key.
 */
import { describe, expect, it } from 'vitest';
import { buildConfig } from '../../../src/config/load.js';
import { parseConfigSource } from '../../../src/config/positions.js';
import { MAX_APPROVAL_TIMEOUT, MAX_VERIFY_WITHIN } from '../../../src/config/schema.js';
import { configProblems } from '../../helpers/config-problems.js';

const env = { BAREMETAL_API_KEY: 'env-key' };
const upstream = 'upstream:\n  base_url: https://api.provider.test\n';
const noFile = () => {
  throw Object.assign(new Error('x'), { code: 'ENOENT' });
};
const problemsOf = (text: string) =>
  configProblems(() => {
    const { value, source } = parseConfigSource('config.yml', text);
    return buildConfig(value, env, noFile, source);
  });
const remediation = (lines: string) =>
  `${upstream}remediation:\n${lines}  rules:\n    - alertname: ServerDown\n      action: powercycle\n`;

describe('duration ceilings', () => {
  it.each([
    {
      name: 'past what Prometheus reads (about 292y)',
      text: remediation('  approval_timeout: 280000y\n'),
      line: 'config.yml:4:3: remediation.approval_timeout: must be at most about 292y, the longest duration Prometheus reads (got "280000y")',
    },
    {
      name: '99999999h, past 292y too',
      text: `${upstream}  timeout: 99999999h\n`,
      line: 'config.yml:3:3: upstream.timeout: must be at most about 292y, the longest duration Prometheus reads (got "99999999h")',
    },
    {
      name: "an approval past the key's ceiling",
      text: remediation('  approval_timeout: 8d\n'),
      line: 'config.yml:4:3: remediation.approval_timeout: must be at most 7d (got "8d")',
    },
    {
      name: '5000y, past 292y',
      text: remediation('  approval_timeout: 5000y\n'),
      line: 'config.yml:4:3: remediation.approval_timeout: must be at most about 292y, the longest duration Prometheus reads (got "5000y")',
    },
    {
      name: "a rule's verify_within past the ceiling",
      text: `${upstream}remediation:\n  rules:\n    - alertname: ServerDown\n      action: powercycle\n      verify_within: 365d\n`,
      line: 'config.yml:7:7: remediation.rules[0].verify_within: must be at most 1d (got "365d")',
    },
    {
      name: "a ladder step's verify_within past the ceiling",
      text: `${upstream}remediation:\n  rules:\n    - alertname: ServerDown\n      steps:\n        - { action: powercycle, verify_within: 10m }\n        - { action: powercycle, verify_within: 2d }\n`,
      line: 'config.yml:8:33: remediation.rules[0].steps[1].verify_within: must be at most 1d (got "2d")',
    },
  ])('refuses $name', ({ text, line }) => {
    expect(problemsOf(text)).toContain(line);
  });

  it('takes the ceilings themselves', () => {
    const config = buildConfig(
      parseConfigSource(
        'config.yml',
        `${upstream}remediation:\n  approval_timeout: ${MAX_APPROVAL_TIMEOUT}\n  rules:\n    - alertname: ServerDown\n      action: powercycle\n      verify_within: ${MAX_VERIFY_WITHIN}\n      cooldown: 292y\n`,
      ).value,
      env,
      noFile,
    );
    expect(config.remediation.approvalTimeoutMs).toBe(7 * 86_400_000);
    expect(config.remediation.rules[0]!.verifyWithinMs).toBe(86_400_000);
    expect(config.remediation.rules[0]!.cooldownMs).toBe(292 * 365 * 86_400_000);
  });
});
