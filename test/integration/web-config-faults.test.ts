/**
 * Web-config faults (issues 19 and 28): a `--web.config.file` whose header value has a newline, whose header
 * name is not a token, or whose bcrypt hash has a cost above 14 or is of variant `$2$` is refused at start with
 * a sentence naming the key (and the user), and refused on reload while the previous file keeps serving:
 * /healthz, /metrics and the login of the previous users go on. On re-read, an empty file or one without
 * `basic_auth_users` is refused too (basic auth stays), while `basic_auth_users: {}` removes it as it says.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import bcrypt from 'bcryptjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Daemon } from '../../src/daemon/start.js';
import { ConfigError } from '../../src/errors.js';
import { WebConfigFile } from '../../src/http/web-config-reload.js';
import { loadWebConfig } from '../../src/http/web-config.js';
import { startHarness, type Harness } from '../helpers/daemon.js';
import { captureLogger } from '../helpers/logger.js';
import { POWERCYCLE_REMEDIATION } from '../helpers/remediation.js';
import { tempDir } from '../helpers/tmp.js';

const HASH = bcrypt.hashSync('prom-secret', 4);
const GOOD = `http_server_config: { headers: { Content-Security-Policy: "default-src 'none'" } }
basic_auth_users: { prom: "${HASH}" }
`;
const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

interface Row {
  fault: string;
  text: string;
  problem: string;
}

const rows: Row[] = [
  {
    fault: 'a newline in a header value',
    text: `http_server_config: { headers: { Content-Security-Policy: "default-src 'none'\\nX-Injected: 1" } }\n`,
    problem:
      'web.config.file: http_server_config.headers.Content-Security-Policy: the value has a control character (newline, NUL, …), which HTTP does not allow',
  },
  {
    fault: 'a header name with a space and a colon',
    text: 'http_server_config: { headers: { "X-Frame-Options: DENY\\r\\nX": DENY } }\n',
    problem: 'web.config.file: http_server_config.headers."X-Frame-Options: DENY\\r\\nX": not a valid header name',
  },
  {
    fault: 'a bcrypt hash of cost 31',
    text: `basic_auth_users: { prom: "${HASH}", ops: "${HASH.replace('$04$', '$31$')}" }\n`,
    problem:
      'web.config.file: basic_auth_users.ops: the bcrypt hash of user ops has cost 31, above 14: each login would take minutes to days; hash the password again with cost 14 or less (htpasswd -B -C 10)',
  },
  {
    fault: 'a $2$ bcrypt hash (accepted before, and never matched a password)',
    text: `basic_auth_users: { prom: "${HASH}", old: "${HASH.replace('$2b$', '$2$')}" }\n`,
    problem:
      'web.config.file: basic_auth_users.old: the bcrypt hash of user old is of variant $2$, which never matches a password; only $2a$, $2b$ and $2y$ are supported: hash the password again (htpasswd -nbB old PASSWORD)',
  },
];

describe('web config faults', () => {
  let harness: Harness;
  let daemon: Daemon;
  let path: string;
  const log = captureLogger();
  beforeAll(async () => {
    const dir = tempDir('bmx-', 'all');
    path = join(dir, 'web.yml');
    writeFileSync(path, GOOD);
    harness = await startHarness({
      key: 'k',
      stateDir: dir,
      simulator: { servers: 1, attackRate: 0 },
      remediationAuth: true,
      config: { remediation: POWERCYCLE_REMEDIATION },
      daemon: {
        logger: log.logger,
        initialPolls: false,
        webConfig: new WebConfigFile(path, log.logger, await loadWebConfig(path)),
      },
    });
    daemon = harness.daemon;
  });
  afterAll(() => harness?.stop());

  /** Writes `text` as the web-config file and reloads it; the problems of the refusal logged (undefined: none). */
  const reloadProblems = async (text: string) => {
    writeFileSync(path, text);
    const from = log.lines.length;
    expect(await daemon.reloadTls()).toBe(false);
    const failed = log.lines.slice(from).map((l) => JSON.parse(l) as { msg: string; problems?: string[] });
    return failed.find((l) => l.msg === 'web config reload failed; keeping the previous one')?.problems;
  };

  it.each(rows)('$fault: refused at start with the key named', async ({ text, problem }) => {
    const bad = join(tempDir(), 'web.yml');
    writeFileSync(bad, text);
    let error: unknown;
    try {
      await loadWebConfig(bad);
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    expect((error as ConfigError).problems).toEqual([problem]);
  });

  it.each(rows)('$fault: refused on reload; the previous file keeps serving', async ({ text, problem }) => {
    expect(await reloadProblems(text)).toEqual([problem]);
    const health = await daemon.app.inject({ method: 'GET', url: '/healthz' });
    expect(health.statusCode).toBe(200);
    expect(health.headers['content-security-policy']).toBe("default-src 'none'");
    const metrics = await daemon.app.inject({
      method: 'GET',
      url: '/metrics',
      headers: { authorization: basic('prom', 'prom-secret') },
    });
    expect(metrics.statusCode).toBe(200);
    writeFileSync(path, GOOD);
  });

  const metricsWithout = async () => (await daemon.app.inject({ method: 'GET', url: '/metrics' })).statusCode;

  it.each([
    {
      fault: 'an empty file',
      text: '',
      problem:
        'web.config.file: the file is empty (caught half-written?); to remove basic auth and headers, write basic_auth_users: {}',
    },
    {
      fault: 'a file of comments only',
      text: '# rotated by config management\n',
      problem:
        'web.config.file: the file is empty (caught half-written?); to remove basic auth and headers, write basic_auth_users: {}',
    },
    {
      fault: 'a file without basic_auth_users',
      text: 'http_server_config: { headers: { Content-Security-Policy: "default-src \'none\'" } }\n',
      problem:
        'web.config.file: basic_auth_users: missing while basic auth is in force; to remove basic auth, write basic_auth_users: {}',
    },
  ])(
    '$fault on re-read: refused, basic auth stays in force (/metrics 401 without credentials)',
    async ({ text, problem }) => {
      expect(await metricsWithout()).toBe(401);
      expect(await reloadProblems(text)).toEqual([problem]);
      expect(await metricsWithout()).toBe(401);
      writeFileSync(path, GOOD);
    },
  );

  it('basic_auth_users: {} on re-read removes basic auth, as it says', async () => {
    writeFileSync(path, 'basic_auth_users: {}\n');
    expect(await daemon.reloadTls()).toBe(true);
    expect(await metricsWithout()).toBe(200);
    writeFileSync(path, GOOD);
    expect(await daemon.reloadTls()).toBe(true);
    expect(await metricsWithout()).toBe(401);
  });

  it('€ in a header value on re-read: accepted, and sent as its UTF-8 bytes', async () => {
    const policy = "default-src 'none'; report-uri https://example.net/€";
    writeFileSync(path, GOOD.replace("default-src 'none'", policy));
    expect(await daemon.reloadTls()).toBe(true);
    const health = await daemon.app.inject({ method: 'GET', url: '/healthz' });
    expect(Buffer.from(String(health.headers['content-security-policy']), 'latin1').toString('utf8')).toBe(policy);
    writeFileSync(path, GOOD);
    expect(await daemon.reloadTls()).toBe(true);
  });
});
