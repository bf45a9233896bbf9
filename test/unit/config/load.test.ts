import { hostname } from 'node:os';
import { describe, expect, it } from 'vitest';
import { configProblems } from '../../helpers/config-problems.js';
import { parseConfigText } from '../../../src/config/load.js';
import { DEFAULT_SCHEDULES } from '../../../src/config/schema.js';

const env = { BAREMETAL_API_KEY: 'env-key' };
const minimal = 'upstream:\n  base_url: https://api.provider.test\n';

const problems = (text: string, environment: Record<string, string> = env, readFile?: (p: string) => string) =>
  configProblems(() => parseConfigText(text, environment, readFile));

describe('config', () => {
  it('fills in every default', () => {
    const config = parseConfigText(minimal, env);
    expect(config).toEqual({
      accounts: [
        {
          name: 'default',
          upstream: {
            baseUrl: 'https://api.provider.test',
            apiKey: 'env-key',
            timeoutMs: 10_000,
            concurrency: 16,
            maxRequestsPerSecond: 10,
            retries: 2,
            maxResponseBytes: 32 * 1024 * 1024,
            apiKeySource: 'env',
          },
          services: { colocationIds: [], transitIds: [] },
          scope: { include: [], exclude: [] },
        },
      ],
      web: {
        host: '0.0.0.0',
        port: 9877,
        auth: { bearerTokens: [], basicAuthUsers: {} },
        authLimits: { inFlightPerAddress: 2, wrongPasswordBurst: 10, wrongPasswordRefillMs: 2_000 },
      },
      stateDir: './data',
      database: { kind: 'sqlite' },
      logLevel: 'info',
      schedules: { ...DEFAULT_SCHEDULES, firewall_under_attack: DEFAULT_SCHEDULES.firewall },
      graphs: { types: ['port_bits'], scales: ['day'], maxWidth: 2000 },
      firewall: { maxIpsPerService: 1024, ipRetentionMs: 24 * 3_600_000 },
      collectors: { firewall: true, graphs: true, catalog: true },
      remediation: {
        dryRun: true,
        journalRetentionMs: 30 * 86_400_000,
        retireAfterMs: 86_400_000,
        approvalTimeoutMs: 15 * 60_000,
        budgetPerHour: 10,
        safety: {
          denyPowerWhenAttacked: true,
          attackWindowMs: 15 * 60_000,
          circuitBreaker: { windowMs: 15 * 60_000, maxServers: 3, maxFraction: 0.01 },
          maxPowerActionsPerServer: 3,
          capWindowMs: 24 * 3_600_000,
          blockWhileFiring: [],
        },
        maxAlerts: 1000,
        bearerTokens: [],
        basicAuthUsers: {},
        principals: [],
        rules: [],
      },
    });
  });

  it('reads every key', () => {
    const config = parseConfigText(
      `upstream:
  base_url: https://api.provider.test
  api_key_file: /run/secrets/key
  ca_file: /etc/ssl/provider-ca.pem
  timeout: 2500ms
  concurrency: 4
  max_requests_per_second: 2.5
  retries: 0
web: { listen_address: "127.0.0.1:9100" }
state_dir: /var/lib/bmx
schedules: { servers: "*/10 * * * * *", firewall: "0 * * * *", firewall_under_attack: "*/15 * * * * *", graphs: "0 */5 * * * *", catalog: "0 0 * * *" }
graphs: { types: [port_bits, port_errors], scales: [day, month] }
services: { colocation_ids: [c1], transit_ids: [t1, t2] }
`,
      {},
      (path) => (path === '/run/secrets/key' ? 'file-key\n' : ''),
    );
    expect(config.accounts[0]!.upstream).toEqual({
      baseUrl: 'https://api.provider.test',
      apiKey: 'file-key',
      caFile: '/etc/ssl/provider-ca.pem',
      ca: '',
      timeoutMs: 2500,
      concurrency: 4,
      maxRequestsPerSecond: 2.5,
      retries: 0,
      maxResponseBytes: 32 * 1024 * 1024,
      apiKeySource: 'file',
      apiKeyFile: '/run/secrets/key',
    });
    expect(config.web).toMatchObject({ host: '127.0.0.1', port: 9100, auth: { bearerTokens: [], basicAuthUsers: {} } });
    expect(config.schedules.firewall_under_attack).toBe('*/15 * * * * *');
    expect(config.graphs.types).toEqual(['port_bits', 'port_errors']);
    expect(config.accounts[0]!.services).toEqual({ colocationIds: ['c1'], transitIds: ['t1', 't2'] });
  });

  it('lets BAREMETAL_API_URL and BAREMETAL_API_KEY override the file', () => {
    const config = parseConfigText('upstream: { base_url: "https://a.test", api_key: file-key }', {
      BAREMETAL_API_URL: 'https://b.test',
      BAREMETAL_API_KEY: 'env-key',
    });
    expect(config.accounts[0]!.upstream).toMatchObject({ baseUrl: 'https://b.test', apiKey: 'env-key' });
  });

  describe('database', () => {
    const pgUrl = 'postgres://bmx:s3cret-pw@db.example:5432/bmx';
    it.each([
      ['the file', `${minimal}database:\n  url: ${pgUrl}\n`, {}],
      ['a url_file', `${minimal}database:\n  url_file: /run/secrets/db\n`, {}],
      [
        'BAREMETAL_DATABASE_URL, over the file',
        `${minimal}database:\n  url: postgres://other@h/x\n`,
        { BAREMETAL_DATABASE_URL: pgUrl },
      ],
    ])('takes the PostgreSQL URL from %s, and keeps a redacted copy to log', (_name, text, extra) => {
      const config = parseConfigText(text, { ...env, ...extra }, (p) => {
        expect(p).toBe('/run/secrets/db');
        return `${pgUrl}\n`;
      });
      expect(config.database).toEqual({
        kind: 'postgres',
        url: pgUrl,
        redactedUrl: 'postgres://bmx:***@db.example:5432/bmx',
      });
    });

    it.each([
      { name: 'its replica_name', body: 'share_accounts: true\n  replica_name: bmx-1', replica: 'bmx-1' },
      { name: 'the host name by default', body: 'share_accounts: true', replica: hostname() },
    ])('shares the accounts out under $name', ({ body, replica }) => {
      const config = parseConfigText(`${minimal}database:\n  url: ${pgUrl}\n  ${body}\n`, env);
      expect(config.database).toMatchObject({ kind: 'postgres', shares: { replica } });
    });

    it.each([
      ['not a URL', 'url: not a url', 'database.url: not a URL'],
      ['another scheme', 'url: mysql://u:s3cret-pw@h/db', 'database.url: must be a postgres:// or postgresql:// URL'],
      ['both url and url_file', 'url: postgres://h/db\n  url_file: /f', 'database: set url or url_file, not both'],
      ['an unreadable url_file', 'url_file: /missing', 'database.url_file: cannot read /missing'],
      ['share_accounts on SQLite', 'share_accounts: true', 'database.share_accounts: needs PostgreSQL'],
    ])('refuses %s, naming the key and never the password', (_name, body, expected) => {
      const found = problems(`${minimal}database:\n  ${body}\n`, env, () => {
        throw Object.assign(new Error('nope'), { code: 'ENOENT' });
      });
      expect(found.join('\n')).toContain(expected);
      expect(found.join('\n')).not.toContain('s3cret-pw');
    });
  });

  it('accepts an IPv6 listen address', () => {
    expect(parseConfigText(`${minimal}web: { listen_address: "[::1]:9877" }`, env).web).toMatchObject({
      host: '::1',
      port: 9877,
    });
  });

  it.each([
    ['an unknown key', `${minimal}  colour: blue\n`, ['upstream.colour: unknown key']],
    ['an unknown top-level key', `${minimal}colour: 3\n`, ['colour: unknown key']],
    ['a missing base URL', 'state_dir: x\n', ['upstream.base_url: required (or set BAREMETAL_API_URL)']],
    [
      'plain http to a remote host',
      'upstream: { base_url: "http://api.provider.test" }',
      [
        'upstream.base_url: refusing plain-HTTP upstream "http://api.provider.test": the API requires HTTPS (only loopback hosts may use http://)',
      ],
    ],
    [
      'a bad timeout',
      `${minimal}  timeout: soon\n`,
      ['upstream.timeout: must be a duration such as "10s" (got "soon")'],
    ],
    ['a concurrency of 0', `${minimal}  concurrency: 0\n`, ['upstream.concurrency: must be >= 1']],
    [
      'a bad cron',
      `${minimal}schedules: { firewall: "every minute" }\n`,
      ['schedules.firewall: must be a cron expression, seconds allowed (got "every minute")'],
    ],
    [
      'a bad under-attack cron',
      `${minimal}schedules: { firewall_under_attack: "often" }\n`,
      ['schedules.firewall_under_attack: must be a cron expression, seconds allowed (got "often")'],
    ],
    ['a zero budget', `${minimal}  max_requests_per_second: 0\n`, ['upstream.max_requests_per_second: must be > 0']],
    [
      'a bad graph type',
      `${minimal}graphs: { types: [port_bytes] }\n`,
      ['graphs.types[0]: must be one of port_bits, port_percent, port_errors, port_upkts'],
    ],
    [
      'a bad IP retention',
      `${minimal}firewall: { ip_retention: forever }\n`,
      ['firewall.ip_retention: must be a duration such as "24h" (got "forever")'],
    ],
    [
      'a bad journal retention',
      `${minimal}remediation: { journal_retention: "0" }\n`,
      ['remediation.journal_retention: must be a duration such as "30d" (got "0")'],
    ],
    [
      'a reply cap below 1 KiB',
      `${minimal}  max_response_bytes: 10\n`,
      ['upstream.max_response_bytes: must be >= 1024'],
    ],
    [
      'a bad listen address',
      `${minimal}web: { listen_address: "9877" }\n`,
      ['web.listen_address: must be "host:port" (got "9877")'],
    ],
    ['invalid YAML', 'upstream: [', [expect.stringMatching(/^\(yaml\): /)]],
    ['a YAML list at the top', '- a\n', ['(top level): must be a mapping']],
  ])('reports %s', (_name, text, expected) => {
    expect(problems(text)).toEqual(expected);
  });

  it('reports a missing key and an unreadable key file', () => {
    expect(problems(minimal, {})).toEqual([
      'upstream.api_key: required (set BAREMETAL_API_KEY or upstream.api_key_file)',
    ]);
    expect(
      problems(`${minimal}  api_key_file: /nope\n`, {}, () => {
        throw Object.assign(new Error('x'), { code: 'ENOENT' });
      }),
    ).toEqual(['upstream.api_key_file: cannot read /nope (ENOENT)']);
  });

  it('notes where the key came from, so that a key in the YAML itself can be warned about', () => {
    expect(
      parseConfigText('upstream: { base_url: "https://a.test", api_key: in-yaml }', {}).accounts[0]!.upstream,
    ).toMatchObject({ apiKey: 'in-yaml', apiKeySource: 'yaml' });
  });

  it('reads web TLS files and web auth credentials', () => {
    const files: Record<string, string> = { '/c.pem': 'CERT', '/k.pem': 'KEY', '/t': 'a-metrics-token-0123456789\n' };
    const config = parseConfigText(
      `${minimal}web: { tls: { cert_file: /c.pem, key_file: /k.pem }, auth: { bearer_token_files: [/t], basic_auth_users: { prom: "$2b$10$abcdefghijklmnopqrstuuQ1ZbQm0x1yq0bYlU3m7jkJp2xQ2Jz9y" } } }\n`,
      env,
      (p) =>
        files[p] ??
        (() => {
          throw Object.assign(new Error('x'), { code: 'ENOENT' });
        })(),
    );
    expect(config.web.tls).toEqual({ certFile: '/c.pem', keyFile: '/k.pem' });
    expect(config.web.auth.bearerTokens).toEqual(['a-metrics-token-0123456789']);
  });

  it.each([
    [
      'a plain password',
      `${minimal}web: { auth: { basic_auth_users: { prom: hunter2 } } }\n`,
      'web.auth.basic_auth_users.prom: must be a bcrypt hash ($2b$…), never a plain password',
    ],
    [
      'a $2$ hash in remediation.auth',
      `${minimal}remediation: { auth: { basic_auth_users: { am: "$2$10$abcdefghijklmnopqrstuuQ1ZbQm0x1yq0bYlU3m7jkJp2xQ2Jz9y" } } }\n`,
      'remediation.auth.basic_auth_users.am: the bcrypt hash of user am is of variant $2$, which never matches a password; only $2a$, $2b$ and $2y$ are supported: hash the password again (htpasswd -nbB am PASSWORD)',
    ],
    [
      'an unreadable certificate',
      `${minimal}web: { tls: { cert_file: /nope.pem, key_file: /nope.key } }\n`,
      'web.tls.cert_file: cannot read /nope.pem (ENOENT)',
    ],
    [
      'a short remediation token',
      `${minimal}remediation: { auth: { bearer_token_files: [/short] } }\n`,
      'remediation.auth.bearer_token_files[0]: the token in /short is shorter than 16 characters',
    ],
    [
      'two principals of one name',
      `${minimal}remediation: { auth: { principals: [{ name: am, bearer_token_file: /long, roles: [webhook] }, { name: am, bearer_token_file: /long2, roles: [reader] }] } }\n`,
      'remediation.auth.principals[1].name: duplicate principal name "am"',
    ],
    [
      'a principal named as a deprecated token',
      `${minimal}remediation: { auth: { bearer_token_files: [/long], principals: [{ name: token-1, bearer_token_file: /long2, roles: [webhook] }] } }\n`,
      'remediation.auth.principals[0].name: duplicate principal name "token-1"',
    ],
    [
      'two principals with one token',
      `${minimal}remediation: { auth: { principals: [{ name: a, bearer_token_file: /long, roles: [webhook] }, { name: b, bearer_token_file: /long, roles: [reader] }] } }\n`,
      'remediation.auth.principals[1].bearer_token_file: another principal has the same token',
    ],
    [
      'a principal with both credentials',
      `${minimal}remediation: { auth: { principals: [{ name: a, bearer_token_file: /long, basic_auth_hash: x, roles: [webhook] }] } }\n`,
      'remediation.auth.principals[0]: give exactly one of bearer_token_file and basic_auth_hash',
    ],
    [
      'a principal without credentials',
      `${minimal}remediation: { auth: { principals: [{ name: a, roles: [webhook] }] } }\n`,
      'remediation.auth.principals[0]: give exactly one of bearer_token_file and basic_auth_hash',
    ],
    [
      'a principal with a short token',
      `${minimal}remediation: { auth: { principals: [{ name: a, bearer_token_file: /short, roles: [webhook] }] } }\n`,
      'remediation.auth.principals[0].bearer_token_file: the token in /short is shorter than 16 characters',
    ],
    [
      'a principal with a plain password',
      `${minimal}remediation: { auth: { principals: [{ name: a, basic_auth_hash: hunter2, roles: [operator] }] } }\n`,
      'remediation.auth.principals[0].basic_auth_hash: must be a bcrypt hash ($2b$…), never a plain password',
    ],
    [
      'a principal bound to an unknown account',
      `${minimal}remediation: { auth: { principals: [{ name: a, bearer_token_file: /long, roles: [operator], accounts: [eu] }] } }\n`,
      'remediation.auth.principals[0].accounts[0]: no account "eu" is configured',
    ],
    [
      'a principal with an unknown role',
      `${minimal}remediation: { auth: { principals: [{ name: a, bearer_token_file: /long, roles: [admin] }] } }\n`,
      'remediation.auth.principals[0].roles[0]: must be one of webhook, operator, reader',
    ],
    [
      'a principal name with a colon',
      `${minimal}remediation: { auth: { principals: [{ name: "cli:bob", bearer_token_file: /long, roles: [reader] }] } }\n`,
      'remediation.auth.principals[0].name: must match pattern "^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$"',
    ],
    [
      'a rule without sensitivity',
      `${minimal}remediation: { rules: [{ alertname: A, action: firewall_sensitivity }] }\n`,
      'remediation.rules[0].sensitivity: required for action firewall_sensitivity',
    ],
    [
      'a bad hold',
      `${minimal}remediation: { rules: [{ alertname: A, action: firewall_state, hold: soon }] }\n`,
      'remediation.rules[0].hold: must be a duration such as "5m" (got "soon")',
    ],
    [
      'an unknown action',
      `${minimal}remediation: { rules: [{ alertname: A, action: reboot }] }\n`,
      'remediation.rules[0].action: must be one of powercycle, poweron, poweroff, firewall_state, firewall_sensitivity',
    ],
  ])('reports %s', (_name, text, expected) => {
    const files: Record<string, string> = {
      '/short': 'abc',
      '/long': 'long-token-0123456789',
      '/long2': 'long-token-9876543210',
    };
    expect(
      problems(
        text,
        env,
        (p) =>
          files[p] ??
          (() => {
            throw Object.assign(new Error('x'), { code: 'ENOENT' });
          })(),
      ),
    ).toContain(expected);
  });

  it.each([
    [
      'an unknown key and an insecure URL',
      'upstream: { base_url: "http://api.provider.test", colour: blue }\n',
      [
        'upstream.colour: unknown key',
        'upstream.base_url: refusing plain-HTTP upstream "http://api.provider.test": the API requires HTTPS (only loopback hosts may use http://)',
      ],
    ],
    [
      'a wrong type, a missing key file, a bad cron and a bad duration',
      `${minimal}  concurrency: many\n  api_key_file: /nope\n  timeout: soon\nschedules: { graphs: "often" }\n`,
      [
        'upstream.timeout: must be a duration such as "10s" (got "soon")',
        'upstream.concurrency: must be integer (got a string)',
        'schedules.graphs: must be a cron expression, seconds allowed (got "often")',
        'upstream.api_key_file: cannot read /nope (ENOENT)',
      ],
    ],
    [
      'a rule with an unknown key and a bad hold',
      `${minimal}remediation: { rules: [{ alertname: A, action: firewall_state, hold: soon, colour: red }] }\n`,
      [
        'remediation.rules[0].colour: unknown key',
        'remediation.rules[0].hold: must be a duration such as "5m" (got "soon")',
      ],
    ],
    [
      'a duration given as a bare number, reported once',
      `${minimal}  timeout: 10\n`,
      ['upstream.timeout: must be a duration such as "10s" (got a number; a duration needs its unit, e.g. "10s")'],
    ],
    [
      'a secret of the wrong type, named by its type only',
      'upstream: { base_url: "https://api.example.net", api_key: 123456789 }\n',
      ['upstream.api_key: must be string (got a number)'],
    ],
  ])('reports schema and semantic problems together: %s', (_name, text, expected) => {
    const noFile = () => {
      throw Object.assign(new Error('x'), { code: 'ENOENT' });
    };
    expect(problems(text, text.includes('api_key_file') ? {} : env, noFile)).toEqual(expected);
  });

  it('lists every problem at once, one per line', () => {
    expect(problems('upstream: { timeout: x }\nweb: { listen_address: y }\n', {})).toHaveLength(4);
  });
});
