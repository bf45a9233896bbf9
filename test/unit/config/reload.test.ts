import { describe, expect, it } from 'vitest';
import { buildConfig } from '../../../src/config/load.js';
import { RELOADABLE_KEYS, restartKeys } from '../../../src/config/reload.js';

const base = {
  upstream: { base_url: 'https://api.provider.test', api_key: 'secret-key-0123456789' },
  web: { listen_address: '127.0.0.1:9877' },
  state_dir: '/tmp/state',
  services: { colocation_ids: ['colo-1'], transit_ids: [] },
  remediation: { rules: [{ alertname: 'ServerDown', action: 'powercycle' }] },
};
/** bcrypt of "bob-password", cost 4 (a fixture, never a real password). */
const BOB_HASH = '$2b$04$T97JjTNEotkB7vWtyRwzzufmuhxjhbWdKTRqUTbQudZByx1R2kOH.';
const config = (raw: Record<string, unknown>) => buildConfig({ ...base, ...raw }, {});

describe('restartKeys', () => {
  it.each([
    { name: 'nothing changed', raw: {}, keys: [] },
    {
      name: 'services, schedules and rules are reloadable',
      raw: {
        services: { colocation_ids: ['colo-2'], transit_ids: ['transit-1'] },
        schedules: { servers: '*/7 * * * *' },
        remediation: { dry_run: false, budget_per_hour: 3, rules: [] },
      },
      keys: [],
    },
    {
      name: 'base_url and the key: named, never their values',
      raw: { upstream: { base_url: 'https://other.provider.test', api_key: 'other-key-0123456789' } },
      keys: ['accounts.default.upstream.api_key', 'accounts.default.upstream.base_url'],
    },
    { name: 'listen address', raw: { web: { listen_address: '127.0.0.1:9999' } }, keys: ['web.listen_address'] },
    { name: 'collectors are reloadable (the schema says so)', raw: { collectors: { graphs: false } }, keys: [] },
    {
      name: 'principals are named by their file key, remediation.auth.principals',
      raw: {
        remediation: {
          rules: [{ alertname: 'ServerDown', action: 'powercycle' }],
          auth: { principals: [{ name: 'bob', roles: ['reader'], basic_auth_hash: BOB_HASH }] },
        },
      },
      keys: ['remediation.auth.principals'],
    },
    {
      name: 'the safety block and the scope are reloadable',
      raw: { remediation: { safety: { max_power_actions_per_server: 5 } }, servers: { exclude: [{ id: '100001' }] } },
      keys: [],
    },
    {
      name: "a duration is named by its file key, without the loader's _ms",
      raw: { remediation: { journal_retention: '7d' }, firewall: { ip_retention: '1h' } },
      keys: ['firewall.ip_retention', 'remediation.journal_retention'],
    },
    { name: 'state_dir', raw: { state_dir: '/tmp/other' }, keys: ['state_dir'] },
    {
      name: 'the auth limits, by their file keys',
      raw: {
        web: {
          listen_address: '127.0.0.1:9877',
          auth_limits: { in_flight_per_address: 3, wrong_password_burst: 20, wrong_password_refill: '5s' },
        },
      },
      keys: [
        'web.auth_limits.in_flight_per_address',
        'web.auth_limits.wrong_password_burst',
        'web.auth_limits.wrong_password_refill',
      ],
    },
    {
      name: 'the under-attack poll starts differing from the firewall poll',
      raw: { schedules: { firewall_under_attack: '*/30 * * * * *' } },
      keys: ['schedules.firewall_under_attack'],
    },
  ])('$name → $keys', ({ raw, keys }) => {
    expect(restartKeys(config({}), config(raw))).toEqual(keys);
  });

  it('accounts added are named', () => {
    const { upstream: _u, services: _s, ...rest } = base;
    const two = buildConfig(
      {
        ...rest,
        accounts: [
          { name: 'default', base_url: 'https://api.provider.test', api_key: 'secret-key-0123456789' },
          { name: 'eu', base_url: 'https://api.provider.test', api_key: 'secret-key-0123456789' },
        ],
      },
      {},
    );
    expect(restartKeys(config({}), two)).toContain('accounts.eu');
  });

  it('a key read from a file is reloaded; the file itself is not', () => {
    const { upstream: _u, ...rest } = base;
    const withFile = (file: string, key: string) =>
      buildConfig({ ...rest, upstream: { base_url: 'https://api.provider.test', api_key_file: file } }, {}, () => key);
    const current = withFile('/run/secrets/key', 'old-key-0123456789');
    expect(restartKeys(current, withFile('/run/secrets/key', 'new-key-0123456789'))).toEqual([]);
    expect(restartKeys(current, withFile('/run/secrets/other', 'old-key-0123456789'))).toEqual([
      'accounts.default.upstream.api_key_file',
    ]);
  });
});

describe('RELOADABLE_KEYS', () => {
  it('is what the schema annotates reloadable, in the file spelling', () => {
    expect([...RELOADABLE_KEYS].sort()).toEqual(
      [
        'accounts[].servers',
        'accounts[].services',
        'collectors',
        'remediation.budget_per_hour',
        'remediation.dry_run',
        'remediation.rules',
        'remediation.safety',
        'schedules',
        'servers',
        'services',
      ].sort(),
    );
  });
});
