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
    {
      name: 'a breaker of 3 servers over a scope of 3 servers named by id: it can never open',
      text: `${upstream}servers: { include: [{ id: "1" }, { id: "2" }, { id: "3" }, { id: "3" }] }\n`,
      warnings: [
        'remediation.safety.circuit_breaker: max_servers 3 (max_fraction 0.01) allows 3 servers per window, and the scope holds at most 3 (servers.include names them by id): the breaker can never open',
      ],
    },
    {
      name: 'four servers by id, one excluded: three, still no more than the breaker',
      text: `${upstream}servers: { include: [{ id: "1" }, { id: "2" }, { id: "3" }, { id: "4" }], exclude: [{ id: "4" }] }\n`,
      warnings: [expect.stringContaining('the scope holds at most 3 (servers.include names them by id)')],
    },
    {
      name: 'four servers by id over a breaker of 3: it can open, no warning',
      text: `${upstream}servers: { include: [{ id: "1" }, { id: "2" }, { id: "3" }, { id: "4" }] }\n`,
      warnings: [],
    },
    {
      name: 'a fraction that rounds up to the whole scope of 5 (max_fraction 0.9 → 5): it can never open',
      text: `${upstream}remediation: { safety: { circuit_breaker: { max_servers: 1, max_fraction: 0.9 } } }\nservers: { include: [{ id: "1" }, { id: "2" }, { id: "3" }, { id: "4" }, { id: "5" }] }\n`,
      warnings: [
        'remediation.safety.circuit_breaker: max_servers 1 (max_fraction 0.9) allows 5 servers per window, and the scope holds at most 5 (servers.include names them by id): the breaker can never open',
      ],
    },
    {
      name: 'a location selector matches an unknown number of servers: no warning',
      text: `${upstream}servers: { include: [{ id: "1" }, { location: FRA1 }] }\n`,
      warnings: [],
    },
    {
      name: 'no include: every server, an unknown number: no warning',
      text: `${upstream}servers: { exclude: [{ id: "1" }] }\n`,
      warnings: [],
    },
    {
      name: 'max_fraction 1 is the whole scope, whatever it holds',
      text: `${upstream}remediation: { safety: { circuit_breaker: { max_fraction: 1 } } }\n`,
      warnings: [
        'remediation.safety.circuit_breaker.max_fraction: 1 allows every server in scope per window: the breaker can never open',
      ],
    },
    {
      name: 'several accounts: the account is named',
      text:
        'accounts:\n' +
        '  - { name: eu, base_url: "https://api.provider.test", api_key: k1, servers: { include: [{ id: "1" }] } }\n' +
        '  - { name: us, base_url: "https://api.provider.test", api_key: k2 }\n',
      warnings: [expect.stringContaining("and account eu's scope holds at most 1 (servers.include")],
    },
  ])('$name', ({ text, warnings }) => {
    expect(warningsOf(text)).toEqual(warnings);
  });
});
