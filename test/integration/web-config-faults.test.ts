/**
 * Web-config faults (issue 19): a `--web.config.file` whose header value has a newline, whose header name is
 * not a token, or whose bcrypt hash has a cost above 14 is refused at start with a sentence naming the key (and
 * the user), and refused on reload while the previous file keeps serving: /healthz, /metrics and the login of
 * the previous users go on.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import bcrypt from 'bcryptjs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Daemon } from '../../src/daemon.js';
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
    writeFileSync(path, text);
    const from = log.lines.length;
    expect(await daemon.reloadTls()).toBe(false);
    const failed = log.lines.slice(from).map((l) => JSON.parse(l) as { msg: string; problems?: string[] });
    expect(failed.find((l) => l.msg === 'web config reload failed; keeping the previous one')?.problems).toEqual([
      problem,
    ]);
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
});
