import { describe, expect, it } from 'vitest';
import { parseConfigText } from '../../../src/config/load.js';
import { configWarnings } from '../../../src/config/warnings.js';

const env = { BAREMETAL_API_KEY: 'env-key' };
/** Each token file holds a token of its own, long enough. */
const readFile = (path: string) => `token-of-${path}-0123456789`;
const warningsOf = (text: string) => configWarnings(parseConfigText(text, env, readFile));

const upstream = 'upstream: { base_url: "https://api.provider.test" }\n';
const powerRule = '{ alertname: ServerDown, action: powercycle }';
const firewallRule = '{ alertname: Attack, action: firewall_state, firing_state: 1, resolved_state: 0 }';
const principal = (name: string, extra = '') =>
  `{ name: ${name}, bearer_token_file: /${name}, roles: [operator]${extra ? `, ${extra}` : ''} }`;
const principals = (...entries: string[]) => `remediation: { auth: { principals: [${entries.join(', ')}] } }\n`;

describe('check-config warnings', () => {
  it.each([
    {
      name: 'power rules armed without the attack guard',
      text: `${upstream}remediation: { dry_run: false, safety: { deny_power_when_attacked: false }, rules: [${firewallRule}, ${powerRule}] }\n`,
      warnings: [
        'remediation.safety.deny_power_when_attacked: false while power rules act (dry_run false: rules[1]): a server whose IP is under attack is power-cycled on the alert the attack causes',
      ],
    },
    {
      name: 'the same in dry run: nothing is sent, no warning',
      text: `${upstream}remediation: { dry_run: true, safety: { deny_power_when_attacked: false }, rules: [${powerRule}] }\n`,
      warnings: [],
    },
    {
      name: 'armed with the attack guard on: no warning',
      text: `${upstream}remediation: { dry_run: false, rules: [${powerRule}] }\n`,
      warnings: [],
    },
    {
      name: 'armed, guard off, firewall rules only: no warning',
      text: `${upstream}remediation: { dry_run: false, safety: { deny_power_when_attacked: false }, rules: [${firewallRule}] }\n`,
      warnings: [],
    },
    {
      name: 'the only operator needs approval',
      text: upstream + principals(principal('alice', 'require_approval: true')),
      warnings: [
        'remediation.auth.principals[0] (alice): require_approval, and no other operator principal may approve its powercycle, poweron, poweroff, firewall_state, firewall_sensitivity: such a request can only expire',
      ],
    },
    {
      name: 'another operator may approve everything: no warning',
      text: upstream + principals(principal('alice', 'require_approval: true'), principal('bob')),
      warnings: [],
    },
    {
      name: 'another operator limited to firewall actions: the power actions are named',
      text:
        upstream +
        principals(
          principal('alice', 'require_approval: true'),
          principal('bob', 'actions: [firewall_state, firewall_sensitivity]'),
        ),
      warnings: [
        'remediation.auth.principals[0] (alice): require_approval, and no other operator principal may approve its powercycle, poweron, poweroff: such a request can only expire',
      ],
    },
    {
      name: 'two who need approval approve each other: no warning',
      text:
        upstream + principals(principal('alice', 'require_approval: true'), principal('bob', 'require_approval: true')),
      warnings: [],
    },
    {
      name: 'the other one is a reader: it cannot approve',
      text:
        upstream +
        principals(
          principal('alice', 'require_approval: true'),
          '{ name: rita, bearer_token_file: /rita, roles: [reader] }',
        ),
      warnings: [expect.stringMatching(/^remediation\.auth\.principals\[0\] \(alice\): require_approval/)],
    },
  ])('$name', ({ text, warnings }) => {
    expect(warningsOf(text)).toEqual(warnings);
  });
});
