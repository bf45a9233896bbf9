/**
 * Pay for what is used (issue 53): a dependency whose feature a deployment leaves unused is never loaded. The
 * daemon runs as a process with a module hook recording every package it resolves
 * (test/fixtures/hooks/record-packages.ts); its upstream is the simulator, whose graphs are PNGs.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import bcrypt from 'bcryptjs';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { runCli } from '../helpers/cli.js';
import { type DaemonProcess, startDaemonProcess } from '../helpers/daemon.js';
import { eventually } from '../helpers/processes.js';
import { TOKEN } from '../helpers/remediation.js';
import { tempDir } from '../helpers/tmp.js';

const HOOK = fileURLToPath(new URL('../fixtures/hooks/record-packages.ts', import.meta.url));

let h: DaemonProcess | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

/** The packages the process has resolved so far, by name. */
function packages(log: string): string[] {
  try {
    return readFileSync(log, 'utf8').split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

describe('sharp (libvips) when an image needs converting or resizing, node-postgres with a PostgreSQL database', () => {
  it('a daemon serving PNG graphs as they came never loads it; the first ?width= loads it and resizes', async () => {
    const log = join(tempDir(), 'packages.log');
    writeFileSync(log, '');
    h = await startDaemonProcess({ key: 'lazy-key-3c9d1e7a', simulator: { servers: 2 } });
    const run = h.spawn([], { NODE_OPTIONS: `--import=${HOOK}`, BAREMETAL_TEST_PACKAGE_LOG: log });
    const graph = `${h.url}/graphs/dedicated/100001/port_bits/day.png`;
    const png = await eventually(`a graph served (${run.output()})`, async () => {
      const res = await request(graph).catch(() => undefined);
      if (res?.statusCode !== 200) {
        await res?.body.dump();
        return undefined;
      }
      return Buffer.from(await res.body.arrayBuffer());
    });
    expect(png.subarray(1, 4).toString('latin1')).toBe('PNG');
    const loaded = packages(log);
    expect(loaded).toContain('fastify'); // the hook records what the daemon loads
    expect(loaded).not.toContain('sharp');
    // On SQLite (the harness's default) node-postgres is never loaded; the postgres tier's daemons load it.
    expect(loaded).not.toContain('pg');
    // No basic-auth users, no hostname pattern nor regular-expression matcher: neither bcryptjs nor re2js.
    expect(loaded).not.toContain('bcryptjs');
    expect(loaded).not.toContain('re2js');

    const resized = await request(`${graph}?width=20`);
    expect(resized.statusCode).toBe(200);
    const body = Buffer.from(await resized.body.arrayBuffer());
    expect(body.readUInt32BE(16)).toBe(20); // IHDR width
    expect(packages(log)).toContain('sharp');
  });
});

const PASSWORD = 'lazy-password-8e1f';
const HASH = bcrypt.hashSync(PASSWORD, 4);
const basic = (user: string, password: string) => `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;

/** /metrics with `authorization`: its status and body. */
async function scrape(url: string, authorization?: string): Promise<{ status: number; body: string }> {
  const res = await request(`${url}/metrics`, authorization ? { headers: { authorization } } : {});
  return { status: res.statusCode, body: await res.body.text() };
}

describe('bcryptjs with basic-auth users, re2js with a hostname pattern', () => {
  it('bcryptjs loads at the first basic-auth check, re2js with the pattern, and both work', async () => {
    const log = join(tempDir(), 'packages.log');
    writeFileSync(log, '');
    h = await startDaemonProcess({
      key: 'lazy-key-5a0b2c8d',
      simulator: { servers: 3 },
      config: {
        // srv100001 and srv100003 in scope, srv100002 not: the pattern is compiled by re2js and applied.
        servers: { include: [{ hostname: 'srv10000[13]\\.example\\.net' }] },
        web: { auth: { basic_auth_users: { prometheus: HASH } } },
      },
    });
    const run = h.spawn([], { NODE_OPTIONS: `--import=${HOOK}`, BAREMETAL_TEST_PACKAGE_LOG: log });
    await eventually(`the daemon listening (${run.output()})`, async () =>
      (await request(`${h!.url}/metrics`).catch(() => undefined))?.body.dump().then(() => true),
    );
    expect(packages(log)).toContain('re2js');
    expect(packages(log)).not.toContain('bcryptjs');
    expect((await scrape(h.url)).status).toBe(401); // refused without a check: no password given

    const metrics = await eventually(`the servers' series (${run.output()})`, async () => {
      const { status, body } = await scrape(h!.url, basic('prometheus', PASSWORD));
      expect(status).toBe(200);
      return body.includes('server_id="100001"') ? body : undefined;
    });
    expect(packages(log)).toContain('bcryptjs'); // in the worker thread that compared the password
    expect(metrics).toContain('server_id="100003"');
    expect(metrics).not.toContain('server_id="100002"');
    expect((await scrape(h.url, basic('prometheus', 'wrong'))).status).toBe(401);
  });

  it('when bcryptjs cannot load, a basic-auth request is answered 503, not 401, and the log names the package', async () => {
    h = await startDaemonProcess({
      key: 'lazy-key-7d3e9f10',
      simulator: { servers: 1 },
      config: { web: { auth: { basic_auth_users: { prometheus: HASH } } } },
    });
    const run = h.spawn([], { NODE_OPTIONS: `--import=${HOOK}`, BAREMETAL_TEST_PACKAGE_REFUSE: 'bcryptjs' });
    const first = await eventually(`an answer (${run.output()})`, () =>
      scrape(h!.url, basic('prometheus', PASSWORD)).catch(() => undefined),
    );
    expect(first.status).toBe(503);
    expect(first.body).toContain('credentials not checked');
    expect((await scrape(h.url, basic('prometheus', PASSWORD))).status).toBe(503);
    await eventually('the error logged', async () =>
      run.output().includes('basic-auth users (basic_auth_users) need the package bcryptjs') ? true : undefined,
    );
    expect(run.output()).not.toContain(PASSWORD);
  });

  it('when re2js cannot load, check-config names the key, the feature and the package', async () => {
    const dir = tempDir();
    const file = join(dir, 'config.yml');
    writeFileSync(
      file,
      'upstream: { base_url: "https://api.provider.test", api_key: k }\nservers: { include: [{ hostname: "web-[0-9]+" }] }\n',
    );
    const { code, stdout, stderr } = await runCli(['check-config', `--config.file=${file}`], {
      NODE_OPTIONS: `--import=${HOOK}`,
      BAREMETAL_TEST_PACKAGE_REFUSE: 're2js',
    });
    expect(code).not.toBe(0);
    expect(stdout + stderr).toMatch(
      /servers\.include\[0\]\.hostname: a hostname pattern \(servers\.include, servers\.exclude\) needs the package re2js, which failed to load/,
    );
  });
});

describe('typebox at build time only: the schemas are generated plain JSON Schema (scripts/schemas.ts)', () => {
  it('a daemon with a plain config never loads it, and validates with the generated schemas', async () => {
    const log = join(tempDir(), 'packages.log');
    writeFileSync(log, '');
    h = await startDaemonProcess({ key: 'lazy-key-1f6a4b2e', simulator: { servers: 2 }, remediationAuth: true });
    const run = h.spawn([], { NODE_OPTIONS: `--import=${HOOK}`, BAREMETAL_TEST_PACKAGE_LOG: log });
    const metrics = await eventually(`the servers' series (${run.output()})`, async () => {
      const res = await request(`${h!.url}/metrics`).catch(() => undefined);
      const body = await res?.body.text();
      return body?.includes('server_id="100002"') ? body : undefined;
    });
    expect(metrics).toContain('server_id="100001"');
    // An operator body against the generated schema: an unknown field is refused as before.
    const refused = await request(`${h.url}/api/v1/actions/powercycle`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify({ server_id: '100001', extra: true }),
    });
    const answer = await refused.body.text();
    expect(refused.statusCode, answer).toBe(400);
    expect(JSON.parse(answer).message).toBe('body must NOT have additional properties');
    const loaded = packages(log);
    expect(loaded).toContain('ajv'); // the hook records what the daemon loads
    expect(loaded).toContain('fastify');
    expect(loaded).not.toContain('typebox');
  });

  it('check-config never loads it, and still names a key the schema refuses', async () => {
    const dir = tempDir();
    const log = join(dir, 'packages.log');
    writeFileSync(log, '');
    const file = join(dir, 'config.yml');
    writeFileSync(file, 'upstream: { base_url: "https://api.provider.test", api_key: k, timeot: 5s }\n');
    const bad = await runCli(['check-config', `--config.file=${file}`], {
      NODE_OPTIONS: `--import=${HOOK}`,
      BAREMETAL_TEST_PACKAGE_LOG: log,
    });
    expect(bad.code).not.toBe(0);
    expect(bad.stdout + bad.stderr).toContain('timeot');
    writeFileSync(file, 'upstream: { base_url: "https://api.provider.test", api_key: secret-key-0123456789 }\n');
    const good = await runCli(['check-config', `--config.file=${file}`], {
      NODE_OPTIONS: `--import=${HOOK}`,
      BAREMETAL_TEST_PACKAGE_LOG: log,
    });
    expect(good.code, good.stdout + good.stderr).toBe(0);
    expect(packages(log)).toContain('ajv');
    expect(packages(log)).not.toContain('typebox');
  });
});
